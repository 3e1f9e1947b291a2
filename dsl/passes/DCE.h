/** \file
 * Dead-code elimination. A value is live when an output, a state write, a print, an assert, a
 * random draw or an op that can fail at run time depends on it (through operands or dimension
 * references). Every effect is kept: state writes, prints, asserts and random draws are roots
 * even when nothing reads them. Inputs are kept (they are the graph's signature). An op that can
 * raise when the graph runs (run_time_failure() in dsl/analysis/RunTimeFailures.h: shape code
 * whose divisor may be zero, a reshape whose element counts may differ, an extent computed by
 * shape code that may be <= 0, a state_read whose variable is written with another type) is a
 * root too: removing it would remove an error the program raises. Such ops that always fail are
 * reported by fold_constants(); this pass only keeps them. A `state_read` nobody uses and that
 * cannot fail is removed: reading does not change state. Everything else not live is erased;
 * outputs (and their names) are never touched.
 */
#pragma once

#include "dsl/ir/Graph.h"
#include "dsl/passes/RewriteLog.h"

namespace tessel::dsl {

/** Returns true if the graph changed. */
bool eliminate_dead_code(Graph &g, RewriteLog *log = nullptr);

}  // namespace tessel::dsl
