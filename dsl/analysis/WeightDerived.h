/** \file
 * Which values are computed from weights alone: the weights themselves (`%w = weight : ...`, an
 * input the caller promises not to change between calls) and every pure op whose operands are
 * all weight-derived or constants (at least one a weight), except a widening cast (f16/bf16/i8 ->
 * f32), unpack_int4 and repeat_interleave, which stay per call so kernels read the narrow value
 * (and a quantization group's scale once per group) and expand it in registers. Such a value is the same on every
 * call, so it is computed once when the weights are prepared, not per call: fusion never puts
 * a per-call op in the group of a weight-derived one (rule `weight-prepare`), the group is
 * marked FusionGroup::prepared, and CompiledGraph runs it once per weight version (a transpose,
 * a narrowing to bf16, a layout conversion of a weight all become one-time work).
 *
 * Legal because a pure op of unchanged operands gives the same result (the interpreter's
 * semantics), and the contents version of each weight is part of the prepared values' key.
 */
#pragma once

#include <vector>

#include "dsl/ir/Graph.h"

namespace tessel::dsl {

/** Per ValueId (indexed by id, sized to the largest id + 1): 1 if the value is weight-derived. */
std::vector<char> weight_derived(const Graph &g);

/** Whether `v` is a weight (an input declared `weight`). */
inline bool is_weight(const Graph &g, ValueId v) {
    const Node &n = g.node(v);
    return n.op == Op::Input && n.attrs.weight;
}

}  // namespace tessel::dsl
