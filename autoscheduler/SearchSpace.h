/** \file
 * The search space for a fusion group on one target: matmul+epilogue groups here; elementwise
 * and reduction groups in GroupKindSpace.h, reached through the same functions (they dispatch
 * on Workload::kind), so the tuner, database and coverage report treat every kind alike.
 *
 * A point is a CandidateParams: which loop nest (the same nests the hand-written library
 * composes: schedules/MatmulCpuSchedules.h, schedules/MatmulCudaSchedules.h) and its sizes. The
 * values are generated from the workload's iteration space (M, K, N) and the TargetModel
 * (vector width, registers, caches; CUDA thread and shared-memory limits), not listed by hand.
 * make_schedule() turns a point into a ScheduleSpec — the same type as the library's — whose
 * variant holds the nest under the guards where it is valid, with the always-correct general
 * nest as the fallback, so a tuned schedule is correct for any shape it is later run on.
 */
#pragma once

#include "autoscheduler/NestFamily.h"
#include "autoscheduler/ShapeClass.h"
#include "autoscheduler/TargetModel.h"
#include "dsl/ir/Graph.h"
#include "schedules/AttentionSchedules.h"
#include "schedules/GroupSchedules.h"
#include "schedules/Schedule.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace tessel::autosched {

/** Bump when the space or make_schedule changes: it is part of every tuning key. */
constexpr int kSearchSpaceVersion =
    9;  // 2: split-K register-block nest ("splitk"); 3: "gemv"; 4: ordered-sum rule (exact mode); 5: "panel" nests; 6: elementwise and reduction groups; 7: column-sum vectors; 8: K-blocked splitk (k_block); 9: attention groups

/** An elementwise or reduction group at concrete sizes: what its space, rules and cost terms
 * read (GroupKindSpace.h). Filled by group_kind_workload. */
struct GroupWork {
    sched::GroupShape shape;     ///< stage names, outputs and reductions, from the lowering
    std::string sizes;           ///< the graph's symbols bound: "M=512,N=1024" (the key's shapes)
    int64_t rows = 1, cols = 1;  ///< first output: product of its outer axes, its innermost extent
    double elements = 0;         ///< output elements, every output
    double bytes = 0;            ///< bytes the group reads from and writes to memory
    /** Input elements one reduction reads: the largest value the group touches (a softmax's or
     * layernorm's rows, a column sum's matrix), taken for every reduction of the group. */
    double reduced_elements = 0;
    double flops_per_element = 0;         ///< vector flops per output element (the op cost table)
    double scalar_calls_per_element = 0;  ///< libm calls per output element (strict-mode tanh)
};

/** An attention group at concrete sizes (AttentionSpace.h): o [batch..., S, Dv] from q [.., S, D]
 * and k, v [.., L, D / Dv]. */
struct AttentionWork {
    int64_t batch = 1, queries = 1, keys = 1, depth = 1, dv = 1;
    bool masked = false;  ///< an additive or causal mask is added to the scores
};

/** The extents of one matmul+epilogue problem: y[M,N] = epilogue(x[M,K] @ w[K,N]); or, for
 * any other group kind, its GroupWork. */
struct Workload {
    int64_t M = 1, K = 1, N = 1;
    /** MatmulEpilogue: M, K, N and the epilogue facts below; Elementwise or Reduction: `group`. */
    dsl::GroupKind kind = dsl::GroupKind::MatmulEpilogue;
    GroupWork group;
    AttentionWork attention;  ///< Attention groups (group.sizes is still their key's sizes)
    /** The fused epilogue's cost per output element: vectorizable flops, and calls to scalar
     * library functions (strict-mode tanh is one), which do not vectorize. */
    double epilogue_flops = 0, epilogue_scalar_calls = 0;
    /** The graph's numeric mode keeps the k sum in program order (exact): nests that split it
     * into partial sums (split-K, gemv, decode; CUDA tiled and decode) are pruned. */
    bool ordered_reductions = false;
    /** w is stored in panels of this many columns (lower::LoweredGroup::rhs_panel_width), 0 when
     * row-major: where the vector width divides it, the space is the panel nests reading the
     * panels in place (and the general nest), never a row-major nest reading them through index
     * arithmetic. */
    int64_t rhs_panel_width = 0;
    /** Matmul groups: Decode (M <= 16), Square (M, K, N within 2x of each other), else Mlp.
     * Others: Elementwise (no reduction), Rows (every reduction along the rows: softmax,
     * layernorm, row sums), else Columns (column sums, totals). */
    ShapeClass shape_class() const;
    std::string to_string() const;  ///< "M=1,K=4096,N=4096"; other kinds: group.sizes
    double flops() const { return 2.0 * M * K * N; }
};

struct CandidateParams {
    NestFamily nest = NestFamily::None;  ///< which nest (NestFamilies.def); None: no point
    // CPU nests.
    int mr = 0, nr_vectors = 0, panel_blocks = 0, k_unroll = 0, k_chunk = 0;
    int k_block = 0;                      ///< splitk: rows of w copied per K block (0: strips read in place)
    sched::CpuGroupParams group;          ///< nest "group": elementwise and reduction groups
    sched::CpuAttentionParams attention;  ///< nest "attention": attention groups
    // CUDA nests.
    int BN = 0, BM = 0, TN = 0, TM = 0, KT = 0, NB = 0, KS = 0, MB = 0;

    std::string to_string() const;  ///< "gemm mr=8 nr=3v panel=1"
    nlohmann::json to_json() const;
    bool operator==(const CandidateParams &) const = default;
};

/** Fills w.epilogue_flops / epilogue_scalar_calls from the group's non-contraction nodes:
 * a small cost table per op (e.g. erf-GELU ~30 vector flops; tanh-GELU in strict mode one
 * scalar tanh call, in fast mode ~25 vector flops). */
void add_epilogue_cost(const dsl::Graph &g, const std::vector<dsl::ValueId> &nodes, Workload &w);

/** Every point of the space for `w` on `model` (before pruning), in a stable order. */
std::vector<CandidateParams> enumerate_space(const Workload &w, const TargetModel &model);

/** The point that reproduces the library's default schedule for `w` (cpu_blocked's nest for
 * this shape; cpu_elementwise or cpu_rows for other kinds), or nullopt on CUDA. The tuner always measures it beside the model's top K, so
 * a tuned schedule is never worse than the library's beyond the near-tie band. */
std::optional<CandidateParams> library_point(const Workload &w, const Halide::Target &target);

/** The ScheduleSpec of a matmul point: its nest as a guarded variant, the general nest as
 * fallback. */
sched::ScheduleSpec make_schedule(const CandidateParams &p, const Halide::Target &target);
/** The ScheduleSpec of a point of `w`'s space, whatever its group kind. */
sched::ScheduleSpec make_schedule(const CandidateParams &p, const Workload &w, const Halide::Target &target);

}  // namespace tessel::autosched
