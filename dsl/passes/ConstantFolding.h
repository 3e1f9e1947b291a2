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
 * It never folds effectful ops (random draws, state reads) or inputs. A replaced node is erased
 * (it is pure and has no uses left); newly dead operands are left for eliminate_dead_code().
 */
#pragma once

#include <cstdint>

#include "dsl/ir/Graph.h"
#include "dsl/passes/RewriteLog.h"

namespace tessel::dsl {

constexpr int64_t kMaxFoldedElements = 1 << 16;

/** Returns true if the graph changed. Example: `%h = 2048 * 2` -> `%h = 4096 : i64[]`. */
bool fold_constants(Graph &g, RewriteLog *log = nullptr);

}  // namespace tessel::dsl
