/** \file
 * The running example, GELU(x @ w + bias), as tensor graphs built with the C++ builder
 * (dsl/ir/Builder.h). Plain dsl code: no Halide, no schedule; lowering and schedules take the
 * Graph from here like any parsed .tsl file.
 *
 * - gelu_mlp_design() is algorithms/gelu_mlp.tsl written in C++, statement for statement, with its
 *   shape code, double transpose, duplicated shape_of and dead diagnostic branch: the graph the
 *   simplifier is demonstrated on.
 * - gelu_mlp_layer() is the layer as benchmarks and the demo compile it: already simple, with
 *   symbolic M, K, N.
 */
#pragma once

#include "dsl/ir/Graph.h"

namespace tessel {

/** The same graph as parse_file("algorithms/gelu_mlp.tsl"): same value names, ids and order, so
 * print(gelu_mlp_design()) == print(parse_file(...)). Simplifying it gives matmul -> add -> gelu
 * over a static 4096. */
dsl::Graph gelu_mlp_design();

/** `graph gelu_mlp mode=<mode>`: %x : f32[M, K], %w : f32[K, N], %bias : f32[N],
 * %y = gelu_tanh(matmul(%x, %w) + %bias) when tanh_form, else gelu (the erf form); output %y.
 * Example: compile(gelu_mlp_layer(true, dsl::NumericMode::Fast)). */
dsl::Graph gelu_mlp_layer(bool tanh_form, dsl::NumericMode mode);

}  // namespace tessel
