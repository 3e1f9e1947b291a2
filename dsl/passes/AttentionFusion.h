/** \file
 * Attention fusion: the tile-level fusion rule that turns
 *
 *     o = softmax(scale · (q @ kᵀ) [+ mask], axis=-1) @ v
 *
 * into ONE group of kind `attention`, which the lowering computes FlashAttention-style (one block
 * of query rows against blocks of keys, a running row maximum and sum, the output rescaled as the
 * maximum grows: lowering/Attention.cpp), so no [S, L] score or probability matrix exists in
 * memory. Plain producer-consumer fusion cannot reach this: a contraction, a row reduction and a
 * second contraction never share a traversal (Fusion.h's `reduce-input` and `matmul-operand`).
 *
 * The rule is a graph pattern with legality conditions; plan_fusion() asks it for every matmul
 * before its ordinary rules run, and every attempt is logged as a FusionDecision with rule
 * `attention` (fused or cut, with the reason), like every other fusion decision.
 *
 * The pattern (operands may be in either order where the op commutes):
 *   pv      = matmul(p, v)                      v: [..., L, Dv]
 *   p       = softmax(t, axis = last)
 *           | e / reduce_sum(e, last, keepdims) with e = exp(t - reduce_max(t, last, keepdims))
 *   t       = u + mask | u                      mask: broadcasts to [..., S, L]
 *   u       = s * c | c * s | s / c | s         c: a constant of one element (the scale)
 *   s       = matmul(q, kt)                     q: [..., S, D]; kt: transpose(k) of k [..., L, D],
 *                                               or any [..., D, L] value
 * The group also writes the rows' logsumexp when the graph reads it, written over the same t:
 *   lse     = m + log(reduce_sum(exp(t - m), last, keepdims))   m = reduce_max(t, last, keepdims)
 * (with the written-out softmax's own m and sum, or apart), placed before pv: the online softmax
 * ends with each row's maximum and sum, so lse costs a log per row. An attention backward then
 * reads it instead of recomputing the rows' statistics (dsl/passes/AttentionBackward.h).
 * Legal when:
 *   - the graph's numeric mode is `fast`: the online softmax sums the denominator and P·V block by
 *     block, rescaled as the running maximum grows, which reassociates both sums (a refused
 *     pattern says so and names `mode=fast`);
 *   - s, u, t, p (and kt when it is a transpose, and lse's values but lse) are read only inside
 *     the pattern and are no graph outputs: fused, they never exist in memory;
 *   - every value is f32, q, kt and v have rank >= 2, and the softmax runs over the last axis.
 * Batch axes follow matmul's broadcasting, so [B, H, S, D] heads and a mask of [S, L] or
 * [B, 1, S, L] work unchanged.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"

namespace tessel::dsl {

/** One matched attention pattern: its roles and its member nodes. */
struct AttentionPattern {
    ValueId output = kNoValue;   ///< pv = matmul(p, v): the group's output
    ValueId softmax = kNoValue;  ///< p (a softmax, or the division of the written-out form)
    ValueId logits = kNoValue;   ///< t, the softmax's input
    ValueId lse = kNoValue;      ///< the rows' logsumexp the group also writes ([..., S, 1]), or kNoValue
    /** Only where allowed (the backward): p = exp(t - saved_lse), saved_lse a value per row
     * ([..., S, 1]) computed elsewhere, or kNoValue. */
    ValueId saved_lse = kNoValue;
    ValueId scores = kNoValue;  ///< s = matmul(q, kt)
    ValueId q = kNoValue, kt = kNoValue, v = kNoValue;
    ValueId k = kNoValue;           ///< kt's operand when kt is a transpose in the pattern, else kNoValue
    ValueId mask = kNoValue;        ///< the additive mask, or kNoValue
    ValueId scale_node = kNoValue;  ///< the constant c, or kNoValue
    double scale = 1.0;             ///< the factor applied to s (1/c for a division)
    bool scale_divides = false;     ///< u = s / c (the lowering divides as written)
    /** Every member in program order (constants excluded: fusion clones them into the group). */
    std::vector<ValueId> nodes;
};

/** The pattern rooted at matmul `pv`, or nullopt. When the shape of the pattern is there but it is
 * illegal (mode, a second reader, a dtype), *why_not says which and why; when `pv` is no
 * attention at all, *why_not is left empty. */
std::optional<AttentionPattern> match_attention(const Graph &g, ValueId pv, std::string *why_not);

/** The structural half of the pattern, from the probabilities `p` down: the softmax (either
 * form, or with `saved_lse` exp(t - r) of a row value r), the mask, the scale and the scores
 * matmul, filled into *a (all but output, v and lse), and the values between the scores and p
 * into *chain. No legality is checked. */
bool match_attention_probabilities(const Graph &g, ValueId p, AttentionPattern *a, std::vector<ValueId> *chain,
                                   bool saved_lse = false);

/** A logsumexp of `t` along its last axis, as the pattern above writes it: its result and its
 * values (m, the difference, the exp, the sum, the log, lse), or nullopt. */
struct LogSumExp {
    ValueId lse = kNoValue;
    std::vector<ValueId> values;
};
std::optional<LogSumExp> logsumexp_of(const Graph &g, ValueId t);

/** Whether v (of shape [..., S, 1]) is one value per row of the [..., S, L] value `full`. */
bool row_vector(const Graph &g, ValueId v, ValueId full);

/** Whether every value of `values` is read only by members of `inside` and is no graph output
 * (fused, it never exists in memory); else false, with *why_not naming the value, its reader and
 * `what` the group is ("the pattern"). */
bool stays_inside(const Graph &g, const std::vector<ValueId> &values, const std::set<ValueId> &inside, const std::string &what,
                  std::string *why_not);

/** A transpose that swaps the last two axes and keeps the others (kᵀ of a batched k). */
bool swaps_last_two(const Node &n);

/** Keys per block of the online softmax: the number of score columns a query-row block holds at
 * once. The lowering defines the blocks (the running maximum is rescaled once per block), so it
 * is part of the algorithm, chosen with the group. */
constexpr int64_t kAttentionKvBlock = 128;
/** Partial results per row of a block's maximum and sum (kAttentionKvBlock is a multiple). */
constexpr int kAttentionLanes = 16;
/** Query rows per block in the resource estimate (the schedule picks its own, near this). */
constexpr int64_t kAttentionQueryBlock = 32;

/** The working set of one query block against one key block: the q rows, the K and V blocks,
 * the score block and the output accumulators (f32), against the target's L2. */
ResourceEstimate attention_estimate(const Graph &g, const AttentionPattern &a, const FusionOptions &opts);

}  // namespace tessel::dsl
