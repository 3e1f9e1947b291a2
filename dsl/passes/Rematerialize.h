/** \file
 * Rematerialization: a materialized value with a long life is discarded after its early readers
 * and recomputed next to its late ones, when recomputing costs less than keeping it.
 *
 * What it changes. For a value v that a group outputs (not a graph output) and a step t after
 * v's definition, the readers of v at steps >= t are redirected to a clone of v's *cone*: the
 * ops v depends on, walked back from v until values that are live at step t anyway (graph
 * inputs, which are the caller's, and buffers the memory plan keeps live through t). The clone is
 * inserted just before the first late reader in program order, so fusion may place it inside the
 * reader's group (an elementwise cone becomes an epilogue or a matmul operand chain). v's early
 * readers keep v; if none is left, v is erased. Only pure kernel ops are cloned (never effects,
 * never shape code), at most RematOptions::max_cone_ops of them.
 *
 * Why it is legal. Cloning a pure op computes the same values from the same operands (the
 * clone reads nothing that changed: its inputs are graph inputs or values that are immutable
 * once computed), so every observable result is unchanged bit for bit in exact and strict modes.
 *
 * How it decides (every candidate is logged with its numbers, RematDecision). Each candidate is
 * tried on a copy of the graph: fusion is re-planned and buffers re-assigned, giving
 *  - memory: the planned peak before and after, and bytes x steps (the sum over allocations of
 *    their bytes times the steps they live), the "lifetime" cost the plan holds;
 *  - time: extra FLOPs of the clone (matmul 2MNK, a reduction or softmax per input element, an
 *    elementwise op per element) and the change in memory traffic of the fused plan (storing and
 *    reloading v saved, the cone's inputs read again), each converted to seconds with the
 *    machine numbers in RematOptions.
 * Without a memory budget a candidate is applied when its net time is <= 0 (the store and reload
 * it saves pay for the recompute) and it lowers bytes x steps. With a budget, while the planned
 * peak exceeds it, the candidate that lowers the peak at the least net time per byte of peak
 * saved is applied; when none lowers the peak, the result says by how much the plan misses.
 *
 * Phase order (compiler/Plan.h, which passes the final plan's buffer options and in-place check): simplify
 * (fold, algebra, reassociate, CSE, DCE) -> rematerialize -> plan_fusion -> assign_buffers.
 * Rematerialization runs after the last CSE: CSE merges a node into an earlier identical one,
 * which would fold every clone back into the value it replaces.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dsl/analysis/BufferAssignment.h"
#include "dsl/passes/Fusion.h"

namespace tessel::dsl {

/** Graphs with more kernel ops are left alone (each candidate re-plans the whole graph); the
 * result says so. */
constexpr size_t kMaxRematKernelOps = 2000;
/** Candidates weighed per round at most: the largest bytes x gap first. */
constexpr size_t kMaxRematCandidates = 24;

struct RematOptions {
    FusionOptions fusion;                    ///< how groups are planned (as the compiler will)
    std::map<std::string, int64_t> symbols;  ///< concrete sizes for the memory plan
    std::optional<int64_t> memory_budget;    ///< bytes of planned peak (arena) allowed
    double flops_per_second = 1.5e11;        ///< machine numbers for the time terms
    double bytes_per_second = 2.0e10;
    size_t max_cone_ops = 8;
    int max_rounds = 32;
    /** Values (by display name) to recompute whatever the costs, for measuring the choice. */
    std::set<std::string> force;
    /** How the final memory plan is made (policy, prepared values kept, donated inputs), so each
     * candidate is judged on the plan it would really get. */
    BufferAssignmentOptions buffers;
    /** The final plan's in-place check for a candidate graph and its fusion plan (the schedules
     * its groups would get); unset: `buffers.schedule_reads_before_writes` as it is. */
    std::function<InPlaceCheck(const Graph &, const FusionPlan &)> in_place_check;
};

struct RematDecision {
    ValueId value = kNoValue;
    std::string value_name;
    int late_step = 0;  ///< readers at this step and after get the clone
    bool applied = false;
    size_t cone_ops = 0;
    int64_t bytes = 0;
    int64_t peak_before = 0, peak_after = 0;
    int64_t byte_steps_before = 0, byte_steps_after = 0;
    double extra_flops = 0;
    int64_t traffic_delta = 0;  ///< fused plan's bytes moved, after - before
    double net_seconds = 0;     ///< extra FLOPs / F + traffic_delta / B
    std::string reason;
    std::string to_string() const;
};

struct RematResult {
    bool changed = false;
    std::vector<RematDecision> decisions;  ///< in the order they were weighed
    int64_t peak_before = 0, peak_after = 0;
    std::optional<int64_t> budget;
    bool fits = true;     ///< peak_after <= budget (true without a budget)
    std::string skipped;  ///< why the graph was not considered at all (too large)
    std::string to_string() const;
};

/** Rematerializes values of g by the rules above; g must be simplified (no CSE may follow). */
RematResult rematerialize(Graph &g, const RematOptions &options);

/** Bytes x steps of a plan: sum over allocations of bytes times steps live. */
int64_t byte_steps(const BufferAssignment &a);

/** Estimated FLOPs of op v (see the header comment), with concrete sizes. */
double op_flops(const Graph &g, ValueId v, const std::map<std::string, int64_t> &symbols);

}  // namespace tessel::dsl
