/** \file
 * Fusion planning: which graph ops run together as one kernel. An analysis — it returns a
 * FusionPlan and leaves the graph alone (like XLA's BufferAssignment); the lowering
 * (lowering/LowerToHalide.h) turns each FusionGroup into one Halide pipeline.
 *
 * Which nodes take part. Kernel ops are pure ops with float results and float operands. Inputs
 * are never group members (they are group inputs). Effectful ops (random draws, state, print,
 * assert) and shape code (scalar integer ops, shape_of, anything integer-typed) run outside
 * kernels and are never in a group. Float constants are not planned on their own: each is
 * cloned into every group that reads it (the lowering inlines a splat as an Expr), so a constant
 * may appear in several groups' `nodes`; a constant that is itself a graph output gets a group.
 *
 * The mechanism (Fusion.cpp) visits kernel ops in program order. Each op starts in its own
 * group, then (1) for every operand produced by another kernel op it asks the policy whether
 * the consumer may join the producer's group, and (2) for contractions and reductions it asks
 * whether an earlier op in another group is a sibling that should share its traversal. A merge
 * that passes the policy is still refused when it would create a cycle between groups, would put
 * back together an edge that was cut earlier, or when the merged group's ResourceEstimate does not
 * fit the target. Every candidate edge gets one FusionDecision with the rule and the reason.
 *
 * The rules (the default policy, FusionPolicy.h; rule names as they appear in decisions):
 *  - `attention`: softmax(scale * q @ k^T [+ mask]) @ v, in fast mode, is one group of kind
 *                 attention (the pattern and its legality: AttentionFusion.h). It is matched
 *                 before the other rules and sealed: no other op joins it, and readers of its
 *                 output read it from memory.
 *  - `epilogue`:  an elementwise or broadcast consumer (add bias, gelu, cast...) joins the group of
 *                 a contraction, elementwise or reduction producer; it is computed inline at the
 *                 producer's output index. Running example: matmul -> add -> gelu is one group.
 *  - `broadcast-back`: an elementwise consumer that reads a reduction of the group, directly or
 *                 through any chain of elementwise members (`reduce_sum(x) * 2`, then `x + that`),
 *                 joins only if it iterates the reduction's input space with every axis of the
 *                 result landing on the axis it was kept from (broadcast back along the reduced
 *                 axes, softmax-style), or the reduction's own output space. Otherwise cut, with
 *                 the conflicting axis in the reason: fused, each element would recompute the
 *                 whole reduction (O(M^3) instead of O(M^2) for row sums of an M x M matrix).
 *  - `reduce-input`: a reduction joins the group of an elementwise producer (it reads it inline),
 *                 or of a reduction group whose reductions run over the same axes of the same
 *                 shape (one traversal of the rows). It never joins a contraction group: the
 *                 reduction's loop spans whole rows of the matmul's output tile.
 *  - `matmul-operand`: a matmul joins the group of an operand only when that group is a cheap
 *                 elementwise chain of group inputs (no contraction, no reduction, no
 *                 transcendental op, no reshape or concat, whose index arithmetic would run per
 *                 element, at most kMaxOperandChain ops): the chain is recomputed inside the
 *                 k-loop, once per column block. An operand
 *                 produced by a reduction (layernorm -> matmul) or a contraction (two-layer MLP)
 *                 is cut and materialized; the matmul's own group can still take an epilogue.
 *  - `transpose`, `reshape`: data movement joins an elementwise group (index remapping inline);
 *                 it is cut after a contraction or reduction, whose tile order it would break.
 *  - `sibling`:   two matmuls with the same left operand and the same result type share one
 *                 group (the lowering makes one Tuple Func, so the left operand is read once);
 *                 gated MLP gelu(x @ w1) * (x @ w2) is one group. Two reductions over the same
 *                 axes of same-shaped operands that derive elementwise from a common tensor (sum
 *                 of x and sum of x*x) share one group, so the rows are traversed once.
 *  - `merge`:     a consumer with producers in several groups merges them; a group holds at most
 *                 one traversal: one contraction (or siblings) or one family of row reductions,
 *                 never both.
 *  - `multi-consumer` (logged after planning, one decision per value with several readers): the
 *                 value is recomputed inline (elementwise) or computed once (contraction,
 *                 reduction) when all readers share its group, else materialized as a group output.
 *  - `weight-prepare`: a value computed from weights alone (dsl/analysis/WeightDerived.h) and
 *                 an op that runs on every call never share a group: the weight-derived group is
 *                 marked `prepared` and runs once per weight version; the per-call group reads
 *                 its output (a transposed, narrowed or re-laid-out weight) like any input.
 *  - `layout-conversion`: a copy (a value converted to another layout, inserted by layout
 *                 assignment) is a group of its own: fused with its producer it would not
 *                 exist in memory, fused into a reader the reader would read the unconverted value.
 *  - `resources`: the merged group's estimate must fit the target; the reason gives the numbers.
 *  - `size`:      the merged group must stay within FusionOptions::budget (ops and expression
 *                 nodes once inlined, GroupSize.h), so compile time stays linear in the graph:
 *                 a chain of 10,000 element-wise ops becomes groups of at most 64.
 *
 * Example:
 *   FusionPlan p = plan_fusion(simplify_file("algorithms/gelu_mlp.tsl").graph, {});
 *   std::cout << p.to_string(g);   // group 0 "g0_y" (matmul+epilogue, 3 ops): %8 %9 %y ...
 */
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dsl/ir/Graph.h"
#include "dsl/passes/GroupKind.h"
#include "dsl/passes/GroupSize.h"

namespace tessel::dsl {

class FusionPolicy;

/** Whether producer -> consumer (or two siblings) fused, by which rule, and why. For
 * `multi-consumer` decisions, consumer is kNoValue and producer is the value read several times. */
struct FusionDecision {
    ValueId producer = kNoValue, consumer = kNoValue;
    bool fused = false;
    std::string rule;
    std::string reason;

    static FusionDecision yes(std::string rule, std::string reason) {
        return {kNoValue, kNoValue, true, std::move(rule), std::move(reason)};
    }
    static FusionDecision no(std::string rule, std::string reason) {
        return {kNoValue, kNoValue, false, std::move(rule), std::move(reason)};
    }
    explicit operator bool() const { return fused; }
};

/** Live values of the fused schedule (see FusionPolicy.h for the model): f32 registers of a
 * register-blocked tile (accumulators, operand vectors, epilogue temporaries), GPU shared memory
 * for staged tiles, and the CPU cache block's working set. */
struct ResourceEstimate {
    int64_t registers_f32 = 0;
    int64_t shared_bytes = 0;
    int64_t cache_bytes = 0;
    bool fits = true;
    std::string detail;  ///< breakdown and limits, e.g. "tile 4x32; acc 128 + operands 48 ..."
    /** "registers 272 f32, shared 16.2 KiB, cache 384.0 KiB: fits (tile 4x32 ...)". */
    std::string to_string() const;
};

struct FusionGroup {
    int id = 0;
    std::string name;              ///< a C identifier: "g<id>_<first output>"
    std::vector<ValueId> nodes;    ///< program order; pure kernel ops only, no Input nodes
    std::vector<ValueId> outputs;  ///< values read outside the group, or graph outputs
    GroupKind kind = GroupKind::Elementwise;
    ResourceEstimate estimate;
    /** Computed from weights alone (dsl/analysis/WeightDerived.h): run once when the weights
     * are prepared, its outputs kept for every later call. */
    bool prepared = false;
};

/** Bytes moved through memory. */
struct TrafficEstimate {
    int64_t bytes_read = 0, bytes_written = 0;
    int64_t total() const { return bytes_read + bytes_written; }
};

struct FusionPlan {
    std::vector<FusionGroup> groups;        ///< topological order
    std::vector<FusionDecision> decisions;  ///< candidate edges in consumer program order, then multi-consumer
    std::vector<ValueId> outside_kernels;   ///< effects and shape code, program order
    TrafficEstimate before, after;
    /** Sizes the estimates used for the graph's symbols; negative: -kDefaultSymbolSize, unbound. */
    std::map<std::string, int64_t> symbol_sizes;
    /** Group of value v, or -1 (inputs, ops outside kernels). Constants: their first group. */
    int group_of(ValueId v) const;
    /** Groups, their members, estimates, decisions with reasons, and the traffic saving. */
    std::string to_string(const Graph &g) const;
};

/** What the target offers one kernel. Defaults are a generic AVX-512-like CPU with a GPU's
 * 48 KiB of shared memory. A limit of 0 is not checked (CPUs have no shared memory). The limits
 * of a compile come from the target it is for (lowering/ScheduleGroup.h fusion_resources), never
 * from the machine Tessel runs on. */
struct TargetResources {
    std::string name = "generic";
    int vector_registers = 32;
    int vector_lanes = 16;  ///< f32 lanes per vector register
    int64_t shared_memory_bytes = 48 * 1024;
    int64_t l2_cache_bytes = 1 << 20;
    bool gpu = false;  ///< a GPU target (attention groups are CPU-only so far)

    static TargetResources host_avx2();    ///< 16 x 8 lanes, no shared memory, 256 KiB L2
    static TargetResources host_avx512();  ///< 32 x 16 lanes, no shared memory, 1 MiB L2
    static TargetResources cuda_sm90();    ///< 255 regs/thread, 48 KiB static shared, 50 MiB L2
};

/** Size used for a symbolic dimension that FusionOptions::symbol_sizes does not bind. */
constexpr int64_t kDefaultSymbolSize = 1024;

struct FusionOptions {
    TargetResources target;
    /** Sizes of symbolic dims for the traffic and resource estimates (else kDefaultSymbolSize). */
    std::map<std::string, int64_t> symbol_sizes;
    bool sibling_fusion = true;
    /** The rules and resource model; nullptr means default_fusion_policy(). */
    const FusionPolicy *policy = nullptr;
    /** The most one group may hold (GroupSize.h); attention groups are formed whole. */
    GroupBudget budget;
};

/** Plan the fusion of `g` (typically simplified first). Does not modify g. Every kernel op ends
 * up in exactly one group (constants: in each group that reads them). */
FusionPlan plan_fusion(const Graph &g, const FusionOptions &opts = {});

/** Graphviz text: every node, every edge, one `subgraph cluster_g<id>` per group labelled with
 * its kind and estimate, and each cut edge drawn dashed and labelled with its rule and reason. */
std::string fusion_plan_to_dot(const Graph &g, const FusionPlan &p);

}  // namespace tessel::dsl
