#include "dsl/ir/Numerics.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tessel::dsl {

namespace {
uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
}  // namespace

uint16_t float_to_half_bits(float f) {
    uint32_t x = bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);  // overflow -> inf
    if (e <= 0) {
        if (e < -10) return sign;  // underflows to signed zero
        mant |= 0x800000u;
        int shift = 14 - e;
        uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) ++half;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;  // may carry into inf: correct
    return (uint16_t)(sign | half);
}

float half_bits_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return from_bits(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        float v = std::ldexp((float)mant, -24);
        return sign ? -v : v;
    }
    return from_bits(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t float_to_bf16_bits(float f) {
    uint32_t x = bits(f);
    if (std::isnan(f)) return (uint16_t)((x >> 16) | 0x40u);
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}

float bf16_bits_to_float(uint16_t h) { return from_bits((uint32_t)h << 16); }

double round_to(DType t, double v) {
    switch (t) {
    case DType::F32: return (double)(float)v;
    case DType::F16: return (double)half_bits_to_float(float_to_half_bits((float)v));
    case DType::BF16: return (double)bf16_bits_to_float(float_to_bf16_bits((float)v));
    case DType::I8: {  // quantized storage: nearest, ties to even, saturating; NaN is 0
        if (std::isnan(v)) return 0.0;
        const double r = std::nearbyint(v);
        return r < -128 ? -128.0 : (r > 127 ? 127.0 : r) + 0.0;
    }
    case DType::I32:
    case DType::I64: {
        if (std::isnan(v)) return 0.0;
        double lo = t == DType::I32 ? -2147483648.0 : -9223372036854775808.0;
        double hi = t == DType::I32 ? 2147483647.0 : 9223372036854775807.0;
        double r = std::trunc(v);
        return r < lo ? lo : (r > hi ? hi : r) + 0.0;  // + 0.0 turns -0 into +0
    }
    }
    return v;
}

}  // namespace tessel::dsl
