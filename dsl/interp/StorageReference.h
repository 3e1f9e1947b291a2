/** \file
 * The reference a narrow storage type's error is measured against: the graph with every value
 * computed into f16, bf16 or i8 computed in f32 instead (a cast into a narrow type becomes a
 * cast to f32, and the data movement after it follows; unpack_int4(pack_int4(q)) reads q). Inputs
 * keep their declared types: data
 * that arrives narrow is not the graph's rounding. Interpreting both graphs on the same inputs
 * gives the error that storing weights narrow (quantizing them, say) adds; `tessel run` reports
 * it beside the kernels' comparison with the graph as written.
 */
#pragma once

#include "dsl/ir/Graph.h"

namespace tessel::dsl {

/** Whether any value of g other than an input is stored in f16, bf16 or i8. */
bool has_narrow_storage(const Graph &g);

/** g with those values in f32 (types re-checked; outputs, names and order unchanged). Throws
 * UserError where a packed int4 value has no f32 counterpart (unpacked from something other
 * than one pack_int4). */
Graph widen_storage(const Graph &g);

}  // namespace tessel::dsl
