/** \file
 * Group-generic library schedules: elementwise and reduction fusion groups, CPU and CUDA.
 *
 * A matmul+epilogue group always has the stages "matmul" and "y", so its schedules are fixed
 * values (MatmulCpuSchedules.h). Elementwise and reduction groups name their stages after the
 * graph ("y" or "y0", "y1"...; "reduce", "reduce1", "softmax_max"...; loops "n", "m", "b0"...),
 * so these schedules are generated from a GroupShape, a plain description the lowering fills
 * in (lower::group_shape). The result is an ordinary ScheduleSpec; every split guards its tail,
 * so any extent is correct (M = 1, primes, fewer elements than one vector).
 *
 * Both CPU schedules are points of one parameterized nest (CpuGroupParams, cpu_group_schedule),
 * which is also the autoscheduler's search space for these groups (autoscheduler/GroupKindSpace.h).
 *
 *   cpu_elementwise  every output: 2 vectors of the target's f32 width per iteration (8 lanes
 *                    on AVX2, 16 on AVX-512), unrolled; parallel over the outermost axis (rank 1:
 *                    blocks of kCpuBlock elements in parallel). Reductions, if any, are placed as
 *                    cpu_rows places them but not vectorized. Legal for any group.
 *   cpu_rows         as cpu_elementwise, and every row-local reduction (one that keeps the
 *                    outermost axis: row sums, softmax, matmul) is computed per row of the output
 *                    when the group has one output; others (column sums, totals: per row they
 *                    would be recomputed for every row) and those of groups with several outputs
 *                    are computed at root, in parallel. A reduction along the innermost axis sums
 *                    a vector of partial results (split by the vector width + rfactor), then adds
 *                    the lanes; any other is vectorized along its own n, 4 vectors per task
 *                    (independent accumulators down the reduced rows). Legal for any group
 *                    (matmul Funcs are treated as reductions: this is the lowering's fallback).
 *   cuda_elementwise outputs tiled 32x8 over GPU blocks x threads (256 threads along n for rank
 *                    1; batch axes fused into the third block dimension). A single output's
 *                    row-local reductions run per thread in registers; any other reduction is
 *                    computed at root in its own kernel. Legal for any group.
 *   cuda_rows        one GPU block per output row when the group has one output of rank 2 or 3
 *                    and every reduction runs along the innermost axis with the output's rank
 *                    (softmax, layernorm): kCudaRowThreads threads split each row reduction
 *                    (rfactor into shared memory, lanes added by one thread), then compute the
 *                    row's outputs. Any other group gets cuda_elementwise's nest. A reduction
 *                    whose result a row reads at other rows (a transposed broadcast) is still
 *                    correct but computes those rows in every block.
 */
#pragma once

#include "schedules/Schedule.h"

#include <Halide.h>

#include <string>
#include <utility>
#include <vector>

namespace tessel::sched {

/** A Func with an update definition (a reduction or contraction), as schedules see it. */
struct GroupReduction {
    std::string name;                ///< "reduce", "reduce1", "softmax_max", "matmul"...
    int rank = 0;                    ///< pure args, named like tensor axes: "n", "m", "b0"...
    std::vector<std::string> rvars;  ///< the update's reduction loops, innermost first ("r", "k")
    /** rvars[0] walks the innermost (contiguous) axis of the reduced input, alone. */
    bool along_n = false;
    /** The pure loop "n" spans data (it is not a reduced axis kept with extent 1). */
    bool n_is_data = false;
    /** It keeps its input's outermost axis, so a row (outermost index) of an output needs only
     * that row of it: computing it per output row or per thread does no repeated work. */
    bool row_local = false;
    bool operator==(const GroupReduction &) const = default;
};

/** What group-generic schedules need to know about a fusion group. */
struct GroupShape {
    dsl::GroupKind kind = dsl::GroupKind::Elementwise;
    /** The numeric mode keeps every reduction in program order: no partial sums (rfactor). */
    bool ordered_reductions = false;
    std::vector<std::pair<std::string, int>> outputs;  ///< output Func name, rank
    std::vector<GroupReduction> reductions;
    /** A matmul+epilogue group's right operand is stored in panels of this many columns, padded
     * (lower::LoweredGroup::rhs_panel_width); 0 when it is not. Matmul schedules whose register
     * block is that wide read the panels in place (MatmulCpuSchedules.h). */
    int64_t rhs_panel_width = 0;
    bool operator==(const GroupShape &) const = default;
};

constexpr int kCpuBlock = 4096;       ///< rank-1 outputs: elements per parallel task
constexpr int kCudaRowThreads = 256;  ///< cuda_rows: threads per row (block)

/** The knobs of the CPU nest for elementwise and reduction groups. Every value is legal for
 * every group: splits guard their tails, and a knob that does not apply (per-row reductions in a
 * group of several outputs, lanes in exact mode) is ignored where it would be wrong. */
struct CpuGroupParams {
    int vectors = 2;                   ///< vectors of n per iteration (unrolled)
    int rows_per_task = 1;             ///< outermost indices per parallel task (rank >= 2)
    int block = kCpuBlock;             ///< rank-1 outputs: elements per parallel task
    bool parallel = true;              ///< false: one thread (tiny groups, where a task costs more than it does)
    bool reductions_per_row = true;    ///< row-local reductions inside the row loop of a single output
    bool vectorize_reductions = true;  ///< lane partial sums along n (rfactor), or vectors along a kept n
    /** A reduction along another axis that keeps n (column sums): vectors of n per task, each an
     * independent accumulator per row (cpu_rows: 4). */
    int reduction_vectors = 1;
    /** cpu_elementwise (`vectorize_reductions` false) and cpu_rows (true). */
    static CpuGroupParams library(bool vectorize_reductions);
    std::string to_string() const;  ///< "v=2 rows/task=1 reduce=row+lanes"
    bool operator==(const CpuGroupParams &) const = default;
};

/** The CPU nest of `p` for `g`, named `name`. */
ScheduleSpec cpu_group_schedule(const std::string &name, const GroupShape &g, const Halide::Target &target,
                                const CpuGroupParams &p);

ScheduleSpec cpu_elementwise(const GroupShape &g, const Halide::Target &target);
ScheduleSpec cpu_rows(const GroupShape &g, const Halide::Target &target);
ScheduleSpec cuda_elementwise(const GroupShape &g, const Halide::Target &target);
ScheduleSpec cuda_rows(const GroupShape &g, const Halide::Target &target);

/** The always-applicable schedule for `g` on `target`: cpu_elementwise for elementwise groups,
 * cpu_rows for any other (cuda_elementwise / cuda_rows on GPU targets). */
ScheduleSpec fallback_group_schedule(const GroupShape &g, const Halide::Target &target);

/** Whether cuda_rows uses its block-per-row nest for `g` (else cuda_elementwise's). */
bool cuda_rows_applies(const GroupShape &g);

/** A representative group of `kind` ("elementwise": one rank-2 output; "reduction": softmax
 * over rows), for listing and testing the schedules without a graph. */
GroupShape example_group_shape(dsl::GroupKind kind);

}  // namespace tessel::sched
