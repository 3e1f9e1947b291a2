/** \file
 * Constant folding, including shape code.
 *
 * - A pure op whose operands are all constants and whose result shape is static (at most
 *   kMaxFoldedElements elements) is evaluated with the reference interpreter's kernel and
 *   replaced by a constant, so folded values are bit-identical to interpreted ones. Legal in
 *   strict mode for that reason.
 * - `shape_of(%x)[i]` becomes a constant when dim i of x resolves to a static size.
 * - Every dimension that refers to shape code (`f32[K, %hidden]`) and resolves to a static size or
 *   a symbol is rewritten to it: with `%hidden = 2048 * 2`, `f32[K, %hidden]` becomes
 *   `f32[K, 4096]`; a dim `%k` with `%k = shape_of(%x)[1]` and x: f32[M, K] becomes `K`.
 *
 * - `assert(%c)` with a constant condition: when no element is zero it can never fail and is
 *   removed (rule `fold-assert`, logged with that reason); when one is, see below.
 *
 * An op that is certain to fail at run time (run_time_failure() in dsl/analysis/RunTimeFailures.h:
 * shape code dividing by zero, an assert on a constant with a zero, an extent that folds to
 * <= 0, an op whose evaluation here raises) is not folded and not left for run time: it throws
 * StaticFailure "file:line:col: error: <statement> always fails at run time: <why>", e.g.
 *   gelu.tsl:3:12: error: %bad = shape.floordiv(%1, %2) : i64[] always fails at run time:
 *   division by zero in shape code (7 floordiv 0)
 *
 * It never folds other effectful ops (random draws, state reads) or inputs. A replaced node is
 * erased (it is pure and has no uses left) and its replacement keeps its source location; newly
 * dead operands are left for eliminate_dead_code(). Output names are kept (Graph::replace_all_uses).
 */
#pragma once

#include <cstdint>

#include "dsl/ir/Graph.h"
#include "dsl/passes/RewriteLog.h"

namespace tessel::dsl {

constexpr int64_t kMaxFoldedElements = 1 << 16;

/** Returns true if the graph changed; throws StaticFailure as above.
 * Example: `%h = 2048 * 2` -> `%h = 4096 : i64[]`. */
bool fold_constants(Graph &g, RewriteLog *log = nullptr);

}  // namespace tessel::dsl
