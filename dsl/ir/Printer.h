/** \file
 * Prints a Graph in the TSL text form (docs/TSL.md). The output is canonical: one statement per
 * line in program order, every result typed, attributes in a fixed order, floats in the shortest
 * spelling that reads back to the same bits. parse(print(g)) prints identically.
 *
 *   graph f mode=strict {
 *     %x = input : f32[M, 4]
 *     %y = relu(%x) : f32[M, 4]
 *     output %y, %copy = %x
 *   }
 * An output whose interface name differs from its value's name prints as a binding
 * (`%copy = %x`: the input x, exported as copy).
 */
#pragma once

#include <string>

#include "dsl/ir/Graph.h"

namespace tessel::dsl {

/** The whole graph, ending in a newline. */
std::string print(const Graph &g);
/** One statement without indentation or newline, e.g. `%y = relu(%x) : f32[M, 4]`. */
std::string print_node(const Graph &g, ValueId id);
/** `f32[M, %hidden, 4]`; scalars print as `f32[]`. */
std::string print_type(const Graph &g, const TensorType &t);
std::string print_dim(const Graph &g, const Dim &d);
/** Shortest decimal spelling of v that parses back to exactly v (`nan`, `inf`, `-inf`, `-0`). */
std::string print_number(double v);
/** Shortest spelling that reads back to v once rounded to `dtype` (`0.1` for the f32 nearest 0.1). */
std::string print_number(double v, DType dtype);

}  // namespace tessel::dsl
