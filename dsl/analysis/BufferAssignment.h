/** \file
 * Buffer assignment: where every intermediate of a fused graph lives in one arena. An analysis
 * (like XLA's BufferAssignment): it reads a graph and its FusionPlan and returns a plan; the
 * graph is left alone. The JIT runner (lowering/CompiledGraph.h) places buffers at the planned
 * offsets; `tessel compile --emit memplan` prints the plan and draws its timeline.
 *
 * Steps. Groups run in plan order (a topological order); group i is step i. A value that crosses
 * a group boundary is a *logical buffer*, defined at its group's step and live through its last
 * reader's step (both ends inclusive: at a step, the kernel's inputs and outputs are live
 * together). Graph inputs and outputs are the caller's storage and take no arena space, except
 * that a donated input (BufferAssignmentOptions::donated_inputs) may receive an in-place result.
 * A value read by an op outside kernels (print, assert, state_write) is kept to the last step.
 * With prepared_kept (the JIT runner, which keeps prepared groups' outputs between calls), those
 * outputs are Kind::Prepared: no arena space, no view, and never overwritten in place.
 *
 * Aliases: one *allocation* may hold several logical buffers.
 *  - View: a group that is a single whole-tensor reshape or transpose of one operand is not run:
 *    its result is the operand's storage, read through a buffer descriptor (a reshape keeps the
 *    row-major bytes; a transpose permutes the strides). Legal for a reshape of a dense operand
 *    (a transposed view is not dense), for a transpose that keeps the innermost axis in place
 *    (kernels require unit innermost stride on their inputs, Halide's default that dense vector
 *    loads rely on, so a transpose moving the last axis is a copy kernel), and when the result
 *    is not a graph output (the caller's output buffer is dense, so a kernel writes it). A
 *    transpose whose layout is transposed_layout(operand's layout) (dsl/ir/Layout.h) is a view
 *    of any perm: the same bytes, its readers read them through that layout (a bitcast). Other
 *    laid-out reshapes and transposes are copy kernels.
 *  - In place: a group writes its output into an input's storage (of the same layout) when the group is elementwise
 *    or broadcast (every member reads its operands at the output's index), has one output (a
 *    pipeline computes several outputs one after another, so a later one would read overwritten
 *    data), the input has the output's shape and dtype, the input dies at this step (no later
 *    reader, no later reader of a view of it), it is neither a graph output nor an undonated
 *    graph input, it is dense, and the kernel's schedule reads each element before overwriting it
 *    (InPlaceCheck: no split with a shifted tail, which recomputes elements already written);
 *    under ReusePolicy::NoConcurrentReuse also every other reader of the input must be an
 *    ancestor of the group (else it may run at the same time). Every refusal carries its reason.
 *  - Cache write: an update_tail result (its kernel writes only the new positions) takes its
 *    cache operand's storage when the cache is donated or an arena value, dense, in the result's
 *    layout, and read by no group after this one (nor, under NoConcurrentReuse, by one unordered
 *    with it). A graph output may take a donated input's storage: the caller's buffer is updated.
 *    Refused (rule "cache-write", with the reason): the runner copies the cache into the result
 *    before the kernel writes the tail.
 *
 * Packing (the algorithm TFLite's arena planner and XLA's heap simulator start from): take the
 * allocations in an order and place each at the lowest offset of the smallest gap between
 * already placed allocations that *conflict* with it and that fits it (best fit), else on top.
 * Three orders are tried — largest first (ties: earlier first step), largest bytes x steps
 * first, earliest first step first — and the lowest peak is kept, as heap simulators try
 * several. The packer is the C runtime's (runtime/tessel_pack.c: tessel_pack), which generated
 * libraries run on every call over the same conflict table. Offsets and sizes are multiples of kArenaAlignment. Large plans (more than
 * kMaxBestFitAllocations allocations, or more than kMaxOrderedGroups groups) are packed by a
 * linear scan instead: allocations in first-step order, each into the best-fitting free range
 * of allocations already dead (coalesced), near-linear; past kMaxOrderedGroups no dependence
 * order is kept, so NoConcurrentReuse reuses nothing. Both cases are noted in the plan.
 * Two allocations conflict when their live ranges intersect; under ReusePolicy::NoConcurrentReuse
 * also when any group touching the earlier one is not an ancestor of the later one's first
 * writer (reusing the memory would order two groups that could run concurrently).
 * Under ReusePolicy::Serial such reuse is allowed and every ordering it adds is listed.
 *
 * Quality numbers: naive_bytes (one buffer per logical buffer, no reuse, no aliasing), the lower
 * bound (the largest total of allocation bytes live at one step: no placement does better for
 * these allocations), and planned_peak (the arena size); planned ÷ bound is the planner's
 * quality. check_no_overlap() proves that no two conflicting allocations overlap in the arena.
 *
 *   BufferAssignment a = assign_buffers(g, plan, {{"M", 512}});
 *   std::cout << a.to_string(g);
 */
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "dsl/passes/Fusion.h"

namespace tessel::dsl {

constexpr int64_t kArenaAlignment = 64;
/** Plans with more allocations are packed by a linear scan (see Packing). */
constexpr size_t kMaxBestFitAllocations = 4096;
/** Graphs with more groups are not given a dependence order (groups^2 bits); see Packing. */
constexpr int kMaxOrderedGroups = 8192;

enum class ReusePolicy {
    Serial,             ///< reuse whenever live ranges do not intersect; added orderings listed
    NoConcurrentReuse,  ///< never reuse between groups the dependence graph leaves unordered
};
const char *to_string(ReusePolicy p);

/** Whether group `group`'s kernel reads every element of its inputs before it writes the output
 * element at that index (a schedule fact the graph does not show); false with the reason in *why. */
using InPlaceCheck = std::function<bool(int group, std::string *why)>;

struct BufferAssignmentOptions {
    ReusePolicy policy = ReusePolicy::Serial;
    bool in_place = true;
    bool views = true;
    /** Graph inputs (by name) whose storage the caller gives up: they may receive in-place results. */
    std::set<std::string> donated_inputs;
    /** Schedule facts for in-place updates; unset: every group's schedule is assumed to qualify. */
    InPlaceCheck schedule_reads_before_writes;
    /** The runner keeps prepared groups' outputs between calls (CompiledGraph): they take no arena
     * space, are never views, and no per-call result may be written over them. Off (a generated
     * library, which runs prepared groups every call): they are planned like any other value. */
    bool prepared_kept = false;
};

/** One value crossing a group boundary. */
struct LogicalBuffer {
    ValueId value = kNoValue;
    int64_t bytes = 0;
    int def_step = 0, last_use_step = 0;
    int allocation = -1;  ///< index in BufferAssignment::allocations; -1: caller's storage
    /** Prepared: the output of a prepared group kept between calls (prepared_kept). */
    enum class Kind { Arena, View, InPlace, GraphInput, GraphOutput, Prepared } kind = Kind::Arena;
    ValueId shares_with = kNoValue;  ///< View/InPlace: the value whose storage it uses
    /** View only: the result reads its operand through permuted strides (a transpose). */
    bool strided = false;
};
const char *to_string(LogicalBuffer::Kind k);

/** A contiguous range of the arena holding one or more logical buffers over their joint life. */
struct Allocation {
    int64_t offset = 0, bytes = 0;  ///< bytes rounded up to kArenaAlignment
    int first_step = 0, last_step = 0;
    std::vector<ValueId> values;  ///< the logical buffers it holds, first the one that defines it
};

/** An in-place or view candidate and what became of it. */
struct AliasDecision {
    int group = -1;
    ValueId result = kNoValue, operand = kNoValue;
    bool applied = false;
    std::string rule;  ///< "in-place", "view" or "cache-write"
    std::string reason;
};

/** A dependence the plan adds by reusing memory: group `before` must finish before `after` starts. */
struct OrderingEdge {
    int before = -1, after = -1;
    std::string why;  ///< "%h's memory is reused by %z"
};

struct BufferAssignment {
    ReusePolicy policy = ReusePolicy::Serial;
    int steps = 0;
    std::vector<LogicalBuffer> buffers;  ///< in definition order
    std::vector<Allocation> allocations;
    std::vector<AliasDecision> decisions;
    std::vector<OrderingEdge> added_edges;  ///< Serial policy only
    int64_t naive_bytes = 0, lower_bound = 0, planned_peak = 0;
    /** Bytes live at each step (allocations), whose maximum is lower_bound. */
    std::vector<int64_t> live_bytes;
    std::vector<std::string> notes;  ///< how the plan was made where it deviates (large graphs)
    /** Which allocations may not share bytes (allocations^2, row-major, nonzero: conflict), as the
     * best-fit packer saw it; empty for a plan packed by linear scan. */
    std::vector<unsigned char> conflicts;
    std::unordered_map<ValueId, size_t> index;  ///< value -> position in `buffers`

    const LogicalBuffer *buffer(ValueId v) const;
    /** Arena offset of v's storage; -1 when v is not in the arena. */
    int64_t offset_of(ValueId v) const;
    double quality() const { return lower_bound ? (double)planned_peak / (double)lower_bound : 1.0; }
    /** The plan as a table: buffer, bytes, live range, offset, kind, and the decisions. */
    std::string to_string(const Graph &g) const;
};

/** Plans the arena of `plan` (planned on `g`) for concrete `symbols` (every symbol bound).
 * Throws std::invalid_argument when a size is unknown. */
BufferAssignment assign_buffers(const Graph &g, const FusionPlan &plan, const std::map<std::string, int64_t> &symbols,
                                const BufferAssignmentOptions &options = {});

/** Every pair of conflicting allocations that share arena bytes, and every allocation that
 * exceeds planned_peak, one line each; empty when the plan is sound. Independent of the packer. */
std::vector<std::string> check_no_overlap(const BufferAssignment &a, const FusionPlan &plan, const Graph &g);

/** The timeline picture: each allocation a box over (steps × arena offset), labelled with its
 * values, with the planned peak and the lower bound drawn as horizontal lines. */
std::string buffer_timeline_svg(const Graph &g, const BufferAssignment &a);

}  // namespace tessel::dsl
