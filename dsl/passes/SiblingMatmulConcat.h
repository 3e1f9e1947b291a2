/** \file
 * Sibling matmuls over weights as one matmul over a concatenated weight.
 *
 * Matmuls that read the same left operand h with right operands computed from weights alone
 * (dsl/analysis/WeightDerived.h) — the Q, K and V projections of a transformer, of 2048, 512 and
 * 512 columns under grouped-query attention — become
 *
 *   %wcat = concat(concat(%wq, %wk, axis=1), %wv, axis=1)      (prepared once, with the weights)
 *   %qkv  = matmul(%h, %wcat)
 *   %q    = slice(%qkv, axis=r, start=0) : ...                 (views the consumers read through)
 *
 * so h is read once by one matmul group with a matmul schedule. Fusion's Tuple sibling rule
 * (Fusion.h) takes only siblings of one result type, and even for those (the gate and up
 * projections of a gated MLP) one wide matmul measured faster than the Tuple of two
 * (docs/results/transformer_block_intel.txt), so weights are always concatenated; the Tuple rule
 * stays for activations. Legal in every numeric mode: each output element is the same dot
 * product of the same operands. Applied when at least two matmuls read h as their left operand
 * and their right operands are rank 2, of one dtype and one K, with static widths, computed from
 * weights alone (a per-call concat of activations would copy them every call), and defined before
 * the first of the matmuls. Every rewrite is logged with the widths and the reason.
 */
#pragma once

#include "dsl/ir/Graph.h"
#include "dsl/passes/RewriteLog.h"

namespace tessel::dsl {

/** Returns true if the graph changed. */
bool concat_sibling_matmuls(Graph &g, RewriteLog *log = nullptr);

}  // namespace tessel::dsl
