/** \file
 * Reassociation of add and multiply chains, only in `fast` mode (in `strict` mode it returns false
 * without looking: floating-point + and * are not associative).
 *
 * A chain is a tree of one op (add or mul) whose interior nodes have the chain's type and exactly
 * one use (an operand slot; not an output): a value read twice, as %s in %s + %s, or by two
 * nodes is a leaf, so shared work stays shared and each interior node belongs to one chain,
 * where it is replaced exactly once. The chain is rebuilt left-leaning with the non-constant
 * leaves in id order followed by the constants combined together: ((%a + 1) + %b) + 2 becomes (%a + %b) + (1 + 2), which constant
 * folding then turns into (%a + %b) + 3, and two chains over the same leaves become identical for
 * CSE. A chain already in that form is left alone, so the pass converges.
 *
 * Numerically: a chain of n terms t_i evaluated in float32 in any order is within
 * (n-1) 2^-24 sum |t_i| (to first order) of the exact sum, so the rebuilt chain differs from the
 * written one by at most about (n-1) 2^-23 sum |t_i| (a product: (n-1) 2^-23 |product|), unless
 * a partial result it forms overflows or is subnormal. tests/dsl/test_fuzz.cpp checks the fast
 * pipeline against that bound carried to each output.
 */
#pragma once

#include "dsl/ir/Graph.h"
#include "dsl/passes/RewriteLog.h"

namespace tessel::dsl {

/** Returns true if the graph changed. Precondition: none; does nothing unless g.mode is fast. */
bool reassociate(Graph &g, RewriteLog *log = nullptr);

}  // namespace tessel::dsl
