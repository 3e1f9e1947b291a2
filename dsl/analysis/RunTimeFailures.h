/** \file
 * Which ops can raise an error when the graph runs, besides the inputs' own binding checks.
 * A pure op is removable only if it cannot fail: deleting one that can would remove an error the
 * program raises. Dead-code elimination keeps every op this analysis does not clear, and constant
 * folding reports the ones that always fail (StaticFailure, at the node's file:line:col).
 *
 * The failure modes, as the interpreter raises them:
 *  - `shape.floordiv`, `shape.mod`: division by zero. Never when the divisor is a non-zero
 *    constant or provably positive (constants > 0, `shape_of`, sums, products, min and max of
 *    positives: extents are >= 1); always when it is the constant 0.
 *  - `reshape`: element counts differ. Never when both shapes are the same product of factors
 *    (static sizes, symbols, shape code, products of those); always when both are static and differ.
 *  - an op whose written type (input, constant, reshape, cast, random draw, state_read) has an
 *    extent computed by shape code: never when provably positive, always when it evaluates to <= 0.
 *  - `state_read`: the stored value has another type than the read declares. The only writes
 *    this graph can see are its own `state_write`s to that variable: never when all of them write
 *    the declared type, always when the latest write before the read writes another static
 *    type. (Writes by other graphs sharing an InterpreterState are the caller's contract.)
 *  - `assert`: a zero in its condition. Always when the condition is a constant with a zero
 *    (-0 included); never when it is a constant with none (NaN is not zero).
 * It does not judge inputs (their binding is the graph's signature) or effects other than assert.
 *
 *   FailureCheck f = run_time_failure(g, g.find("q"));   // %q = shape.floordiv(%one, %d)
 *   if (f.kind == Failure::May) ...                      // "the divisor %d may be zero"
 */
#pragma once

#include <string>

#include "dsl/ir/Graph.h"

namespace tessel::dsl {

enum class Failure { Never, May, Always };

struct FailureCheck {
    Failure kind = Failure::Never;
    /** Why it may or will fail ("division by zero in shape code (7 floordiv 0)"); for an assert
     * that can never fail, why not. Empty otherwise. */
    std::string reason;
};

/** Whether node `id` can raise at run time, and why. Does not modify g. */
FailureCheck run_time_failure(const Graph &g, ValueId id);

/** Throw StaticFailure "file:line:col: error: <statement> always fails at run time: <reason>" at
 * the node's source location (Graph::source, Node::loc; no location for graphs built in C++). */
[[noreturn]] void report_static_failure(const Graph &g, ValueId id, const std::string &reason);

}  // namespace tessel::dsl
