/** \file
 * Concrete tensors for the reference interpreter: a dtype, a static shape and row-major data held
 * as doubles that are exactly representable in the dtype (see dsl/ir/Numerics.h).
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dsl/ir/Types.h"

namespace tessel::dsl {

struct Tensor {
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    std::vector<double> data;  ///< row-major, numel() elements
    /** Contents version: a caller that changes `data` of a weight in place bumps it, so values
     * prepared from the weight (CompiledGraph) are prepared again. Not part of the value. */
    uint64_t version = 0;

    int64_t numel() const;
    /** A tensor of `shape` with every element v (rounded to dtype). */
    static Tensor filled(DType dtype, std::vector<int64_t> shape, double v);
    /** A rank-0 tensor. */
    static Tensor scalar(DType dtype, double v);
};

/** "f32[2, 3] [1, 2, 3, 4, 5, 6]" (values in shortest round-trip spelling). */
std::string to_string(const Tensor &t);
/** Same dtype, shape and element bits after rounding to the dtype's storage format. All NaNs
 * compare equal (NaN payloads are not part of the semantics); -0 and +0 differ. */
bool bitwise_equal(const Tensor &a, const Tensor &b);

}  // namespace tessel::dsl
