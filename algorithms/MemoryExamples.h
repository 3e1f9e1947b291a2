/** \file
 * Graphs that show why memory planning and rematerialization matter, built with the C++ builder
 * (dsl/ir/Builder.h); each is the same graph as its .tsl file (tests/dsl/test_memory_examples
 * checks the printed text).
 *
 * - attention_fwd_bwd(): one attention head, forward and backward (algorithms/attention_fwd_bwd.tsl).
 *   The S x S probability matrix %p is read by the forward and by two backward ops: the value a
 *   naive compiler keeps and FlashAttention's backward recomputes.
 * - mlp_residual(): a three-layer MLP whose scaled input %xn is also its residual
 *   (algorithms/mlp_residual.tsl): a long-lived value that is cheap to recompute.
 */
#pragma once

#include "dsl/ir/Graph.h"

namespace tessel {

/** %q, %k, %v, %do : f32[S, 64]; outputs %o, %dq, %dk, %dv. */
dsl::Graph attention_fwd_bwd();

/** %x : f32[M, K], %g : f32[K], %w1 : f32[K, H], %w2 : f32[H, H], %w3 : f32[H, K]; output %y. */
dsl::Graph mlp_residual();

}  // namespace tessel
