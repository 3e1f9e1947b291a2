/** \file
 * Reassociation of add and multiply chains, only in `fast` mode (in `strict` mode it returns false
 * without looking: floating-point + and * are not associative).
 *
 * A chain is a tree of one op (add or mul) whose interior nodes have the chain's type and exactly
 * one use (an operand slot; not an output): a value read twice, as %s in %s + %s, or by two
 * nodes is a leaf, so shared work stays shared and each interior node belongs to one chain,
 * where it is replaced exactly once. It is rebuilt left-leaning with the non-constant leaves in id order followed by the
 * constants combined together: ((%a + 1) + %b) + 2 becomes (%a + %b) + (1 + 2), which constant
 * folding then turns into (%a + %b) + 3, and two chains over the same leaves become identical for
 * CSE. A chain already in that form is left alone, so the pass converges.
 */
#pragma once

#include "dsl/ir/Graph.h"
#include "dsl/passes/RewriteLog.h"

namespace tessel::dsl {

/** Returns true if the graph changed. Precondition: none; does nothing unless g.mode is fast. */
bool reassociate(Graph &g, RewriteLog *log = nullptr);

}  // namespace tessel::dsl
