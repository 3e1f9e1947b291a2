/** \file
 * Parses the TSL text form (docs/TSL.md) into a Graph. Accepts everything print() writes plus
 * conveniences for hand-written files: nested calls, infix `+ - * /` (scalar integers become
 * shape arithmetic, `/` on integers is floordiv), numeric literals that take the dtype of the
 * other operand, `shape_of(%x)[1]`, and omitted result types wherever they can be inferred.
 *
 * Every error is a ParseError "file:line:col: error: <what was expected>"; a shape or dtype
 * mismatch names the op and both types. Example:
 *   Graph g = parse("graph f {\n %x = input : f32[4]\n %y = relu(%x)\n output %y\n}\n");
 */
#pragma once

#include <string>

#include "dsl/ir/Graph.h"

namespace tessel::dsl {

/** Deepest nesting of calls, parentheses and unary minus in one expression. Recursive descent
 * uses the stack per level; this bound keeps a hostile file from overflowing it. */
constexpr int kMaxNestingDepth = 256;

/** Parse `text`; `filename` is only used in error messages. Throws ParseError. A graph without
 * an output is refused. */
Graph parse(const std::string &text, const std::string &filename = "<input>");
/** Read and parse a file. Throws UserError if it cannot be read, ParseError on bad text. */
Graph parse_file(const std::string &path);

}  // namespace tessel::dsl
