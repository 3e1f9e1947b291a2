/** \file
 * Dead-code elimination. A value is live when an output, a state write, a print, an assert or a
 * random draw depends on it (through operands or dimension references). Every effect is kept:
 * state writes, prints, asserts and random draws are roots even when nothing reads them. Inputs
 * are kept (they are the graph's signature). A `state_read` nobody uses is removed: reading does
 * not change state. Everything else that is not live is erased.
 */
#pragma once

#include "dsl/ir/Graph.h"
#include "dsl/passes/RewriteLog.h"

namespace tessel::dsl {

/** Returns true if the graph changed. */
bool eliminate_dead_code(Graph &g, RewriteLog *log = nullptr);

}  // namespace tessel::dsl
