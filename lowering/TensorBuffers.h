/** \file
 * Kernel buffers of graph values: the physical form (dsl/ir/Layout.h: dimension order, panels)
 * in the value's storage type (f32, f16, bf16), and the conversions between it and the
 * interpreter's logical row-major tensors. Converting a weight into the layout kernels read is
 * exactly to_buffer(); CompiledGraph does it once per weight version (see PreparedWeights).
 */
#pragma once

#include "dsl/interp/Tensor.h"
#include "dsl/ir/Graph.h"

#include <Halide.h>

#include <string>
#include <vector>

namespace tessel {

/** An uninitialized buffer for value `v` of logical shape `shape` (outermost first), in v's
 * layout and storage type. Halide dimension 0 is the innermost physical dimension. */
Halide::Buffer<> make_value_buffer(const dsl::Graph &g, dsl::ValueId v, const std::vector<int64_t> &shape,
                                   const std::string &name);

/** `t` (logical, row-major) converted to v's layout and storage type; a last panel's padding
 * is 0. Values are rounded to the storage type (round to nearest even). */
Halide::Buffer<> to_value_buffer(const dsl::Graph &g, dsl::ValueId v, const dsl::Tensor &t, const std::string &name);

/** The logical tensor of `b` (v's layout and storage type) of logical shape `shape`; the
 * tensor's dtype is v's. */
dsl::Tensor from_value_buffer(const dsl::Graph &g, dsl::ValueId v, const Halide::Buffer<> &b, const std::vector<int64_t> &shape);

/** A descriptor over `data` holding value `v` (its layout and storage type; no copy). */
Halide::Buffer<> value_buffer_over(const dsl::Graph &g, dsl::ValueId v, void *data, const std::vector<int64_t> &shape);

/** Bytes of value `v` of logical `shape` in its layout (panel padding included) and storage type. */
int64_t value_bytes(const dsl::Graph &g, dsl::ValueId v, const std::vector<int64_t> &shape);

}  // namespace tessel
