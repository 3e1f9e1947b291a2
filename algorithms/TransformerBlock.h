/** \file
 * A pre-norm transformer block (Llama-style), written once with the C++ builder over T tokens:
 *
 *   h  = rmsnorm(x) * attn_norm
 *   q, k, v = h wq, h wk, h wv            (heads of head_dim; kv_heads <= heads, grouped-query)
 *   q, k = rotary(q), rotary(k)           (x cos + rotate_half(x) sin, tables given per token)
 *   o  = softmax(q kᵀ / sqrt(head_dim) + causal) v   (query head i reads kv head i / group)
 *   x1 = x + o wo
 *   y  = x1 + (silu(h2 wg) * (h2 wu)) wd   with h2 = rmsnorm(x1) * mlp_norm
 *
 * Inputs: x [T, hidden] and the rotary tables cos, sin [T, head_dim] of the tokens' positions
 * (cos(p θ_j) and sin(p θ_j) with θ_j = base^(-2 (j mod head_dim/2) / head_dim), so a decode
 * step passes the rows of its positions); weights in the [in, out] order matmul reads. Outputs:
 * y [T, hidden] and the rotated keys and the values [kv_heads, T, head_dim] (what a KV cache
 * stores). Grouped-query heads are a broadcast batch axis: q is [kv_heads, group, T, head_dim]
 * against k and v of [kv_heads, 1, T, head_dim].
 *
 *   dsl::Graph g = transformer_block_graph({.hidden = 2048, .heads = 16, .kv_heads = 4, .head_dim = 128, .ffn = 5632});
 */
#pragma once

#include "dsl/ir/Graph.h"

#include <cstdint>
#include <vector>

namespace tessel {

struct TransformerBlockShape {
    int64_t hidden = 256, heads = 4, kv_heads = 2, head_dim = 64, ffn = 688;
    double eps = 1e-5;
    dsl::NumericMode mode = dsl::NumericMode::Fast;
    /** Weight matrices stored in bf16 (each prepared once as cast(w) : bf16 and widened per call,
     * as algorithms/decode_bf16.tsl), halving the bytes the matmuls read. */
    bool bf16_weights = false;
    /** Attend over a KV cache: inputs k_cache and v_cache [S, kv_heads, head_dim] hold S positions,
     * the first S - T of them the past tokens' keys and values; the block writes this call's keys
     * and values into the last T (update_tail) and attends over all S (causal_mask [T, S]: the
     * queries are the last T positions). Outputs k_cache_out and v_cache_out are the updated
     * caches, in place when the caller donates k_cache and v_cache. Positions are outermost, so
     * the S positions of a call are a dense prefix of a cache allocated for the longest sequence.
     * Prefill is S = T (no past), decode S = L + T: one graph, both entries. */
    bool kv_cache = false;
};

/** The block over T tokens (T a symbol; with kv_cache also S, the cache's positions), every other
 * size static. Throws UserError when heads
 * is not a multiple of kv_heads or head_dim is odd. */
dsl::Graph transformer_block_graph(const TransformerBlockShape &shape);

/** cos and sin tables [tokens, head_dim] for positions first, first + 1, ... (base 10000). */
void rotary_tables(int64_t first, int64_t tokens, int64_t head_dim, std::vector<double> *cos, std::vector<double> *sin);

}  // namespace tessel
