/** \file
 * Scalar numerics shared by the IR (constants) and the reference interpreter.
 *
 * Every value is held as a double that is exactly representable in its dtype. round_to() maps a
 * double to the nearest representable value: f32 by the C++ conversion (round to nearest even);
 * f16 and bf16 by rounding to f32 first and then to nearest even in the narrow format (so a value
 * can be rounded twice; this is the documented emulation); i32/i64 by truncation toward zero,
 * saturating, with NaN -> 0.
 */
#pragma once

#include <cstdint>

#include "dsl/ir/Types.h"

namespace tessel::dsl {

double round_to(DType t, double v);
/** IEEE binary16 bits <-> float. */
uint16_t float_to_half_bits(float f);
float half_bits_to_float(uint16_t h);
/** bfloat16 bits <-> float (round to nearest even, NaN kept quiet). */
uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(uint16_t h);

}  // namespace tessel::dsl
