/** \file
 * IR invariant checker, run by the pass manager after every pass (like XLA's HloVerifier).
 * Checks: every operand and dim reference is defined earlier in program order and has a value;
 * op arity and attributes; each node's type equals its inferred type (dims compared through shape
 * code, extents >= 1); effect-only ops have no users; outputs exist and a bound output name
 * (`output %y = %x`) names no other value; printed names are unique.
 * It does not check that shapes are consistent at run time (symbols are bound by the inputs).
 */
#pragma once

#include <string>
#include <vector>

#include "dsl/ir/Graph.h"

namespace tessel::dsl {

/** All problems found, one message each; empty when the graph is well formed. */
std::vector<std::string> verify(const Graph &g);
/** Throws InternalError listing the problems, prefixed by `context` (e.g. "after pass cse"). */
void verify_or_throw(const Graph &g, const std::string &context);

}  // namespace tessel::dsl
