/** \file
 * Attention backward: the tile-level fusion rule for the gradient of attention, and the rewrite
 * that makes it reachable.
 *
 * The backward of o = softmax(scale · q kᵀ [+ mask]) v, from dO and r = rowsum(dO ∘ o), is
 *
 *   dV = Pᵀ dO,   dP = dO Vᵀ,   dS = P ∘ (dP − r),   dQ = c_q · dS K,   dK = c_k · dSᵀ Q
 *
 * Unfused, P and dS are [S, L] matrices in memory (the forward's P is kept alive for the
 * backward). Fused, the group recomputes P from q and k block by block and keeps nothing of size
 * S x L (lowering/AttentionBackward.cpp): one nest visits each pair of a query block and a key
 * block once and adds that pair's sums into dQ's rows and into dK's and dV's keys. A task owns a
 * batch entry's keys (or a part of them); dQ's rows get one partial sum per part, added in part
 * order at the end, so no two threads write one value, no atomics are needed and the result does
 * not depend on the thread count.
 *
 * The pattern, rooted at the probabilities p (AttentionFusion.h's softmax chain from q and kt, or
 * p = exp(t - lse) with lse the rows' logsumexp [..., S, 1] computed elsewhere):
 *   t1 = transpose(p)              (last two axes)    dv  = matmul(t1, do1)           do1: [..., S, Dv]
 *   dp = matmul(do2, vt)           vt: transpose(v) of v [..., L, Dv], or any [..., Dv, L] value
 *   c  = dp - r                    r: [..., S, 1]
 *   ds = p * c | c * p
 *   dq = matmul(ds, kx) [* c_q | c_q * · | / c_q]        kx: [..., L, D]
 *   t2 = transpose(ds)             dk = matmul(t2, qx) [* c_k | ...]         qx: [..., S, D]
 * Legal when the graph's mode is `fast` (the statistics are summed block by block, rescaled as
 * the maximum grows: a reassociation), every value between p and the three results is read only
 * inside the pattern and is no graph output, dK and dV have one shape (the nest keeps them in
 * one accumulator), and every value is f32 of rank >= 2.
 *
 * The rewrite (recompute_attention_probabilities, the last pass of the default pipeline, after
 * the last CSE, which would merge its copies back): where the probabilities of a forward
 * attention pattern (o = p v) are also read by a backward of the form above, those readers read
 * exp(t' - lse) instead, with t' a copy of the scores chain (scores, scale, mask) and lse the rows'
 * logsumexp of the forward's t (m + log(sum), reusing a written-out softmax's m and sum), which
 * the forward's attention group writes as a second output. The backward then needs no pass over
 * the keys for the rows' statistics. Where that form does not make both groups (a refusal of
 * either), the readers get a copy of p's whole chain instead. Both rewrites are kept only when
 * both groups then match. exp(t - lse) equals softmax(t) up to rounding, and where a row's
 * maximum is not finite both are NaN; the rewrite is applied only in fast mode, where rounding
 * may differ and the only mode in which both groups form.
 */
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dsl/ir/Graph.h"
#include "dsl/passes/AttentionFusion.h"
#include "dsl/passes/RewriteLog.h"

namespace tessel::dsl {

/** One product of the backward: matmul(lhs, operand), then an optional scale by a constant. */
struct AttentionGradient {
    ValueId matmul = kNoValue;   ///< the contraction
    ValueId operand = kNoValue;  ///< its right operand (dO for dV, K for dQ, Q for dK)
    ValueId result = kNoValue;   ///< the group's output: the matmul or its scaled value
    double scale = 1.0;          ///< the factor applied to the matmul (1/c for a division)
    bool divides = false;        ///< result = matmul / c (the lowering divides as written)
};

/** One matched attention-backward pattern: the recomputed probabilities and the gradients. */
struct AttentionBackwardPattern {
    /** p's chain (q, kt, k, scale, mask, softmax); no output, and v is dO (the estimate's Dv) */
    AttentionPattern probs;
    ValueId d_out = kNoValue;             ///< do2: dP = matmul(d_out, vt)
    ValueId vt = kNoValue, v = kNoValue;  ///< dP's right operand, and v when vt = transpose(v) inside
    ValueId row_dot = kNoValue;           ///< r = rowsum(dO ∘ o), [..., S, 1]
    ValueId ds = kNoValue;                ///< P ∘ (dP − r)
    AttentionGradient dq, dk, dv;
    /** Every member in program order (constants excluded). */
    std::vector<ValueId> nodes;
    /** The group's outputs in the order the lowering writes them: dk, dv, dq. */
    std::vector<ValueId> outputs() const { return {dk.result, dv.result, dq.result}; }
};

/** Query rows per block of dK's and dV's sums, and keys per block of dQ's: the lowering sums
 * each block apart and adds the blocks in order, so the sizes are part of the algorithm. */
constexpr int64_t kAttentionBackwardQueryBlock = 64;
constexpr int64_t kAttentionBackwardKeyBlock = 64;

/** The backward pattern whose probabilities are `p`, or nullopt. When the form is there but it
 * is illegal, *why_not says which value and why; when `p` starts no backward, it is left empty. */
std::optional<AttentionBackwardPattern> match_attention_backward(const Graph &g, ValueId p, std::string *why_not);

/** The rewrite above; returns true if the graph changed. Each rewrite is logged. */
bool recompute_attention_probabilities(Graph &g, RewriteLog *log = nullptr);

}  // namespace tessel::dsl
