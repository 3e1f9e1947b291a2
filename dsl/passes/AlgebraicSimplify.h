/** \file
 * Algebraic simplification: a table of local rewrite rules (AlgebraicSimplify.cpp), each with a
 * one-line comment and a legality argument that goes into the rewrite log.
 *
 * In `strict` mode only identities that hold bit for bit in IEEE arithmetic fire: x*1, x/1,
 * x + (-0.0), x - (+0.0), neg(neg x), abs(abs x), relu(relu x), max(x, x), no-op transposes,
 * reshapes and casts, and transpose(transpose(w, p), q) -> w when p and q compose to the identity.
 * Refused in strict mode: x + 0.0 (-0 + 0 = +0), x - x (inf - inf = NaN), x * 0 (inf * 0 = NaN,
 * and -x * 0 = -0), and cast(cast(x) : bf16) : f32 -> x (it drops a rounding); those fire only
 * in `fast` mode. The cast pair never through i8: that is quantizing, not rounding. A
 * down-then-up cast of a weight-derived value is kept in every mode: narrowing a weight is its
 * storage (dsl/analysis/WeightDerived.h), not arithmetic to skip. A transpose pair
 * that does not compose to the identity is kept.
 *
 * transpose(transpose(w)) and state: values are SSA, so `w` denotes one value no matter where it
 * is used; when w is a `state_read`, it is the snapshot taken at that read, and a later
 * `state_write` cannot change it. Replacing the pair by w therefore never moves a read across a
 * write. Rules only ever match pure ops and never touch effects.
 *
 * Matching follows MLIR's contract: a rule inspects the graph and returns a replacement; nothing
 * is mutated until a match succeeded. A replaced node is erased (it is pure and unused). An
 * output replaced by another value keeps its output name (Graph::replace_all_uses):
 * `%y = transpose(transpose(%x))` with `output %y` becomes `output %y = %x`. A new node takes the
 * replaced node's source location.
 */
#pragma once

#include "dsl/ir/Graph.h"
#include "dsl/passes/RewriteLog.h"

namespace tessel::dsl {

/** One sweep of the rule table over the graph. Returns true if anything changed.
 * Example: `%y = mul(%x, %one)` with `%one = 1 : f32[]` -> uses of %y become %x. */
bool simplify_algebra(Graph &g, RewriteLog *log = nullptr);

}  // namespace tessel::dsl
