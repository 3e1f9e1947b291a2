/** \file
 * Scaled dot-product attention, written once with the C++ builder: o = softmax(q kᵀ / sqrt(D)
 * [+ causal_mask]) v over [B, S, D] queries and [B, L, D] keys and values (B is every batch and
 * head axis flattened). In fast mode fusion makes it one attention group (dsl/passes/
 * AttentionFusion.h); in strict mode it plans unfused, with the S x L scores in memory.
 *
 *   dsl::Graph g = attention_graph({.batch = 8, .queries = 512, .keys = 512, .depth = 64, .causal = true});
 *   dsl::Graph t = attention_train_graph({.batch = 8, .queries = 512, .keys = 512, .depth = 64});  // with the backward
 */
#pragma once

#include "dsl/ir/Graph.h"

#include <cstdint>

namespace tessel {

struct AttentionShape {
    int64_t batch = 1, queries = 1, keys = 1, depth = 64;
    bool causal = false;
    dsl::NumericMode mode = dsl::NumericMode::Fast;
};

/** The graph `attention` with inputs q [B, S, D], k [B, L, D], v [B, L, D] and output o [B, S, D],
 * every size static. */
dsl::Graph attention_graph(const AttentionShape &shape);

/** The graph `attention_train`: the forward above and its backward from the output's gradient,
 * as algorithms/attention_fwd_bwd.tsl writes it — inputs q, k, v [B, S or L, D] and do [B, S, D],
 * outputs o, dq, dk, dv. In fast mode it plans as an attention group, rowsum(dO ∘ O) and one
 * attention-backward group (dsl/passes/AttentionBackward.h). */
dsl::Graph attention_train_graph(const AttentionShape &shape);

}  // namespace tessel
