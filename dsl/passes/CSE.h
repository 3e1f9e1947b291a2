/** \file
 * Common-subexpression elimination.
 *
 * Merges a node into the first earlier node with the same op, attributes, operands and type, when
 * that is legal:
 * - pure ops (including constants and shape code) always: two `shape_of(%x)[1]` become one;
 * - `state_read`s of the same variable only when no `state_write` to that variable lies between
 *   them in program order (the graph's order is total, so the order of every read and write is
 *   known; reads of one variable separated by a write are never merged);
 * - random draws never (two draws are two samples, even with the same seed), and observable ops
 *   (print, assert) and state writes never.
 * Inputs are never merged (each is a distinct argument). The duplicate is erased after its uses
 * are redirected; operands it leaves dead are removed by eliminate_dead_code(). A duplicate that
 * is an output keeps its output name (Graph::replace_all_uses): outputs %a and %b of two equal
 * ops print as `output %a, %b = %a`.
 */
#pragma once

#include "dsl/ir/Graph.h"
#include "dsl/passes/RewriteLog.h"

namespace tessel::dsl {

/** Returns true if the graph changed. */
bool eliminate_common_subexpressions(Graph &g, RewriteLog *log = nullptr);

}  // namespace tessel::dsl
