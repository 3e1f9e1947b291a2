/** \file
 * IEEE special values in Halide expressions (IeeeMath.h): exp and erf with their special values,
 * GELU, and IEEE maximum/minimum on order keys of the float's bits.
 */
#include "lowering/IeeeMath.h"

#include "lowering/VectorMath.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace tessel::lower {

using Halide::Expr;

// Special values of exp. The polynomial (VectorMath.h) is right for finite arguments in range,
// but it converts the exponent to an integer (exp(NaN) = exp(+inf) = exp(1e30) would be garbage).
// The cases are selected on the float's bits (fast-math flags cannot fold them away), and only
// where the polynomial is wrong, so every finite result in range is the polynomial's, bit for
// bit. Cost: integer and/compares and three selects per element, all vector operations.

Expr strict_over(const std::vector<Expr> &operands, const StrictOp &op) {
    std::vector<Expr> placeholders;
    std::map<std::string, Expr> replacements;
    for (size_t i = 0; i < operands.size(); i++) {
        const std::string name = "tessel_strict_operand_" + std::to_string(i);
        placeholders.push_back(Halide::Internal::Variable::make(operands[i].type(), name));
        replacements[name] = operands[i];
    }
    return Halide::Internal::substitute(replacements, Halide::strict_float(op(placeholders)));
}

Expr float_bits(const Expr &x) { return Halide::reinterpret(Halide::Int(32), x); }

Expr ieee_exp(const Expr &x, dsl::NumericMode mode) {
    const Expr bits = float_bits(x);
    const Expr magnitude = bits & 0x7fffffff;
    const Expr nan = magnitude > 0x7f800000, over = bits > 0x42b17218 /* 88.72284f */,
               under = bits < 0 && magnitude > 0x42d00000 /* -104.0f */;
    // The polynomial sees only arguments in range (0 instead), so no flagged float op ever
    // meets an infinity or NaN that LLVM may assume away.
    const Expr in_range = Halide::select(nan || over || under, Expr(0.0f), x);
    // Fast mode keeps Halide's polynomial: fast-math flags let it use fused multiply-adds, which
    // strict_float (vector_exp) forbids; its 5 ulp and subnormals flushed to 0 are fast mode's.
    const Expr e = mode == dsl::NumericMode::Fast ? Halide::exp(in_range) : vector_exp(in_range);
    return Halide::select(nan, x, over, Expr(INFINITY), under, Expr(0.0f), e);
}

Expr ieee_tanh(const Expr &x) {
    const Expr nan = (float_bits(x) & 0x7fffffff) > 0x7f800000;
    return Halide::select(nan, x, vector_tanh(Halide::select(nan, Expr(0.0f), x)));
}

Expr ieee_sigmoid_times(const Expr &x, const Expr &m) {
    const Expr magnitude = float_bits(x) & 0x7fffffff;
    // Past 120, m e / (1 + e) rounds to 0 for every m these ops pass (silu's |x|, the GELU's v).
    const Expr nan = magnitude > 0x7f800000, saturated = magnitude > 0x42f00000 /* 120.0f */;
    const Expr in_range = Halide::select(nan || saturated, Expr(0.0f), x);
    return Halide::select(nan, x, saturated, Halide::select(float_bits(x) < 0, m * 0.0f, m), vector_sigmoid_times(in_range, m));
}

Expr ieee_erf(const Expr &x) {
    const Expr bits = float_bits(x);
    const Expr magnitude = bits & 0x7fffffff;
    const Expr nan = magnitude > 0x7f800000, saturated = magnitude >= 0x40800000 /* 4.0f */;
    const Expr unit = Halide::reinterpret(Halide::Float(32), (bits & Halide::Int(32).min()) | 0x3f800000);  // +-1
    const Expr in_range = Halide::select(nan || saturated, Expr(0.0f), x);
    return Halide::select(nan, x, saturated, unit, Halide::erf(in_range));
}

namespace {
Expr quiet_nan() { return Halide::reinterpret(Halide::Float(32), Expr(0x7fc00000)); }
}  // namespace

Expr ieee_log(const Expr &x) {
    const Expr bits = float_bits(x);
    const Expr magnitude = bits & 0x7fffffff;
    const Expr nan = magnitude > 0x7f800000 || (bits < 0 && magnitude != 0), zero = magnitude == 0, inf = bits == 0x7f800000,
               subnormal = bits > 0 && bits < 0x00800000;
    const Expr scaled = Halide::select(subnormal, x * 16777216.0f, x);  // 2^24: now normal
    const Expr in_range = Halide::select(nan || zero || inf, Expr(1.0f), scaled);
    const Expr log = Halide::log(in_range) - Halide::select(subnormal, Expr(16.635532333438687f), Expr(0.0f));
    return Halide::select(nan, quiet_nan(), zero, Expr(-INFINITY), inf, Expr(INFINITY), log);
}

Expr ieee_compare(dsl::Op relation, const Expr &a, const Expr &b) {
    const Expr ba = float_bits(a), bb = float_bits(b);
    const Expr ma = ba & 0x7fffffff, mb = bb & 0x7fffffff;
    const Expr ka = Halide::select(ba < 0, -ma, ma), kb = Halide::select(bb < 0, -mb, mb);
    const Expr ordered = ma <= 0x7f800000 && mb <= 0x7f800000;
    switch (relation) {
    case dsl::Op::Less: return ordered && ka < kb;
    case dsl::Op::LessEqual: return ordered && ka <= kb;
    case dsl::Op::Greater: return ordered && ka > kb;
    case dsl::Op::GreaterEqual: return ordered && ka >= kb;
    case dsl::Op::Equal: return ordered && ka == kb;
    case dsl::Op::NotEqual: return !(ordered && ka == kb);
    default: break;
    }
    throw std::logic_error("ieee_compare: not a comparison");
}

namespace {
Expr finite_only(const Expr &x, Expr (*f)(Expr)) {
    const Expr finite = (float_bits(x) & 0x7fffffff) < 0x7f800000;
    return Halide::select(finite, f(Halide::select(finite, x, Expr(0.0f))), quiet_nan());
}
}  // namespace

Expr ieee_sin(const Expr &x) {
    return finite_only(x, [](Expr v) { return Halide::sin(v); });
}
Expr ieee_cos(const Expr &x) {
    return finite_only(x, [](Expr v) { return Halide::cos(v); });
}

Expr gelu_expr(const Expr &v, bool tanh_form, dsl::NumericMode mode) {
    if (!tanh_form)
        return mode == dsl::NumericMode::Fast ? 0.5f * v * (1.0f + ieee_erf(v * 0.70710678118654752f)) : vector_gelu(v);
    const Expr u = 0.79788456080286536f * (v + 0.044715f * v * v * v);
    if (mode == dsl::NumericMode::Fast) return v / (1.0f + ieee_exp(-2.0f * u, mode));
    return ieee_sigmoid_times(2.0f * u, v);
}

// NaN and signed zeros (docs/TSL.md, "Special values"): max, min, relu, reduce_max and softmax
// follow IEEE 754-2019 maximum/minimum, as the interpreter does. Halide's max/min on floats are
// a compare and select (max(NaN, 0) = 0, max(-0, +0) depends on the operand order) and LLVM gets
// fast-math flags that may assume no NaN, so they are computed on integers instead: the float's
// bits mapped to a key whose signed order is the float order (-0 < +0), with NaN given the key
// that wins. Integer max/min vectorizes (pmaxsd), no fast-math flag applies to it, and Halide
// still sees max/min, so rfactor and vector partial results keep working on reductions.

Expr order_key(const Expr &x, bool nan_wins_max) {
    if (const auto c = Halide::Internal::as_const_float(x)) {  // constants: the key itself
        const float f = (float)*c;
        int32_t b;
        std::memcpy(&b, &f, sizeof b);
        if (std::isnan(f)) return nan_wins_max ? Halide::Int(32).max() : Halide::Int(32).min();
        return Expr(b < 0 ? b ^ 0x7fffffff : b);
    }
    const Expr bits = Halide::reinterpret(Halide::Int(32), x);
    const Expr key = bits ^ ((bits >> 31) & 0x7fffffff);   // negative floats: flip the magnitude
    const Expr is_nan = (bits & 0x7fffffff) > 0x7f800000;  // on bits: immune to fast-math flags
    return Halide::select(is_nan, nan_wins_max ? Halide::Int(32).max() : Halide::Int(32).min(), key);
}

Expr from_order_key(const Expr &k) { return Halide::reinterpret(Halide::Float(32), k ^ ((k >> 31) & 0x7fffffff)); }

Expr is_finite_key(const Expr &k) { return k > order_key(Expr(-INFINITY), true) && k < order_key(Expr(INFINITY), true); }

Expr logsumexp_from_max_key(const Expr &max_key, const Expr &sum) {
    return Halide::select(is_finite_key(max_key), from_order_key(max_key) + Halide::log(sum),
                          from_order_key(Halide::Int(32).max()));
}

Expr ieee_maximum(const Expr &a, const Expr &b) { return from_order_key(Halide::max(order_key(a, true), order_key(b, true))); }
Expr ieee_minimum(const Expr &a, const Expr &b) { return from_order_key(Halide::min(order_key(a, false), order_key(b, false))); }

}  // namespace tessel::lower
