/** \file
 * The fusion policy: the rule table and the resource model behind plan_fusion() (Fusion.h).
 * The mechanism in Fusion.cpp owns the order of visits, cycle checks and the decision log; it asks
 * a FusionPolicy whether a merge is legal and what the merged group would cost. Swap the policy
 * through FusionOptions::policy (tests use that to force refusals).
 *
 * Resource model of the default policy (all counts in f32 values; L = vector lanes):
 *  - matmul+epilogue: a register-blocked tile TM x TN with TN = 2L and TM the largest of 4, 2, 1
 *    that fits; S sibling matmuls keep S*TM*TN accumulators. While accumulating, S*TN B values
 *    and L broadcast A values are live; in the epilogue, L values per external epilogue operand
 *    (a bias row) plus L per epilogue op up to 3. Registers = acc + max(those two) + L per
 *    prologue op (operand chain) up to 2. GPU shared memory stages one 64x32 A tile, one 32x64 B
 *    tile per sibling and one 64-wide row per external epilogue operand. The CPU cache block
 *    MC x KC x NC (64x256x256, else 32x128x128, else 16x64x64, clamped to the dims) holds an A
 *    block, S B blocks and one C block per output.
 *  - reduction: L accumulators per reduction plus L per elementwise op (up to 3) plus L; one row
 *    of the reduced extent staged in shared memory; one row per full-shape input in cache.
 *  - elementwise: L per op (up to 3) plus L per input; no shared memory or cache block.
 * A group fits when registers <= vector_registers * vector_lanes and shared and cache bytes are
 * within the target's limits (a limit of 0 is not checked).
 */
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dsl/passes/Fusion.h"

namespace tessel::dsl {

/** How fusion sees an op. */
/** CacheWrite (update_tail): the root of its group, whose kernel writes only the values into the
 * cache's tail; nothing reads it inside a group. */
enum class FusionClass { Outside, Constant, Contraction, Reduction, Elementwise, Permutation, Reshape, CacheWrite };
FusionClass fusion_class(const Graph &g, ValueId v);
const char *to_string(FusionClass c);
/** Whether v runs inside kernels (any class but Outside; inputs are Outside). */
inline bool is_kernel_op(const Graph &g, ValueId v) { return fusion_class(g, v) != FusionClass::Outside; }

/** MatmulEpilogue if `nodes` hold a matmul, Reduction if a reduction or softmax, else
 * Elementwise. */
GroupKind group_kind(const Graph &g, const std::vector<ValueId> &nodes);

/** Longest elementwise chain a matmul recomputes in its k-loop (matmul-operand rule). */
constexpr size_t kMaxOperandChain = 8;

class FusionPolicy {
public:
    virtual ~FusionPolicy() = default;
    /** May consumer c join `group`, which holds its operand p? Rule legality only. c joins the
     * whole group, so the answer must cover everything of `group` that c would read inline:
     * through any of its operands in the group and any chain of members behind them (the
     * mechanism does not ask again for c's other operands once c is in the group). */
    virtual FusionDecision producer_consumer(const Graph &g, ValueId p, ValueId c, const std::vector<ValueId> &group) const = 0;
    /** Is `earlier` (in another group) a sibling of c that should share c's traversal?
     * nullopt when the pair is no candidate at all (nothing is logged). */
    virtual std::optional<FusionDecision> sibling(const Graph &g, ValueId earlier, ValueId c) const = 0;
    /** Keys that make sibling candidates findable without asking about every earlier node:
     * sibling(g, s, c) must be nullopt unless sibling_keys(s) and sibling_keys(c) share a value.
     * nullopt (the default) promises nothing, and every earlier planned node is asked. */
    virtual std::optional<std::vector<ValueId>> sibling_keys(const Graph &, ValueId) const { return std::nullopt; }
    /** May groups a and b become one group (at most one traversal per group)? */
    virtual FusionDecision merge(const Graph &g, const std::vector<ValueId> &a, const std::vector<ValueId> &b) const = 0;
    /** What the group `nodes` (in program order) would need on opts.target. */
    virtual ResourceEstimate estimate(const Graph &g, const std::vector<ValueId> &nodes, const FusionOptions &opts) const = 0;
};

/** The rules documented in Fusion.h and the resource model above. */
const FusionPolicy &default_fusion_policy();

/** No fusion at all: every kernel op its own group (the default resource model), what a compiler
 * without fusion materializes. For baselines, the memory planner's unfused plans and tests. */
const FusionPolicy &unfused_policy();

}  // namespace tessel::dsl
