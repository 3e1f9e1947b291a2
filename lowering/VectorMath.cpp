/** \file
 * exp, sigmoid, tanh and GELU as vector code (VectorMath.h). The coefficients come from
 * lowering/fit/fit_strict_math.py.
 */
#include "lowering/VectorMath.h"

#include "lowering/IeeeMath.h"

namespace tessel::lower {

using Halide::Expr;

namespace {

/** c[0] + s (c[1] + s (c[2] + ...)), Horner's rule, in the order written. */
Expr horner(const Expr &s, std::initializer_list<float> c) {
    const float *first = c.begin(), *last = c.end() - 1;
    Expr acc = Expr(*last);
    for (const float *k = last; k != first;) acc = acc * s + Expr(*--k);
    return acc;
}

/** 2^k for k in [-126, 127], built on the bits (never a subnormal: the mantissa is 0). */
Expr power_of_two(const Expr &k) { return Halide::reinterpret(Halide::Float(32), (k + 127) << 23); }

/** y 2^k rounded once, for finite y and k in [-174, 128] (exp_parts's range), with no subnormal
 * operand or result in any float operation of any lane: x86 cores take a microcode assist for a
 * vector operation that produces or reads a subnormal, and a select computes both of its sides
 * in every lane, so exp(-|2u|) below 2^-126 would slow every vector it appears in
 * (docs/results/strict_math_speed_intel.txt).
 * A normal result (or +-inf) is y 2^k1 2^k2 with k1 = floor(k / 2): both factors normal, the
 * first product exact, the second rounds once. A subnormal result is its count of 2^-149 steps:
 * the same two products with k + 149 instead of k give y 2^(k + 149), below 2^23 and normal,
 * rounded once to an integer (to nearest even, as the multiply would have rounded) and written
 * into the bits with y's sign (a count of 2^23 is FLT_MIN, 0 a signed zero). */
Expr scale_by_power_of_two(const Expr &y, const Expr &k) {
    const Expr bits = Halide::reinterpret(Halide::Int(32), y);
    const Expr exponent = ((bits >> 23) & 0xff) - 127;  // y in [2^e, 2^(e+1)); -127 for 0
    const Expr subnormal = exponent + k < -126;
    const Expr shift = Halide::select(subnormal, k + 149, k), shift1 = shift >> 1;
    const Expr scaled = (y * power_of_two(shift1)) * power_of_two(shift - shift1);
    const Expr steps = Halide::cast<int32_t>(Halide::abs(Halide::round(scaled)));
    return Halide::select(subnormal, Halide::reinterpret(Halide::Float(32), steps | (bits & Halide::Int(32).min())), scaled);
}

/** y 2^k for y in [0.5, 2) and k in [-126, 0]: one normal factor, one rounding. */
Expr scale_normal(const Expr &y, const Expr &k) { return y * power_of_two(k); }

/** exp(x) = p 2^k, kept apart so that m exp(x) can be formed as (m p) 2^k with one rounding in
 * m p and one where the result is subnormal, instead of a subnormal exp(x) (already rounded to
 * few bits) multiplied by m. */
struct ExpParts {
    Expr p, k;  // k: Int(32)
    Expr times(const Expr &m) const { return scale_by_power_of_two(m * p, k); }
    Expr value() const { return scale_by_power_of_two(p, k); }
    /** exp(x) for x <= 0 where only 1 + exp(x) is needed: below 2^-60 it does not change the
     * sum, so the exponent is cut there and the value never becomes subnormal. */
    Expr value_in_sum_with_one() const { return scale_normal(p, Halide::max(k, -60)); }
};

/** exp(x + x_lo) for x + x_lo in exp's range, with x_lo a correction below 2^-3 |x| + 0.11
 * (0 for a plain exp): k is chosen from the sum, x - k ln2_hi is exact, and x_lo joins r before
 * the one rounding of r. */
ExpParts exp_parts(const Expr &x, const Expr &x_lo = Expr(0.0f)) {
    // k ln2_hi is exact for |k| <= 2^8 (ln2_hi has 15 significant bits), and x - k ln2_hi is exact
    // (Sterbenz: the two are within a factor 2), so r carries one rounding more than x_lo.
    const float ln2_hi = 0.693145751953125f, ln2_lo = 1.42860682030941723e-6f;
    const bool plain = Halide::Internal::is_const_zero(x_lo);
    const Expr k = Halide::round((plain ? x : x + x_lo) * 1.44269504088896341f);
    const Expr r = plain ? (x - k * ln2_hi) - k * ln2_lo : ((x - k * ln2_hi) + x_lo) - k * ln2_lo;
    const Expr q =
        horner(r, {5.000000000e-01f, 1.666666716e-01f, 4.166626930e-02f, 8.333263919e-03f, 1.394607825e-03f, 1.991838653e-04f});
    return {1.0f + (r + (r * r) * q), Halide::cast<int32_t>(k)};
}

Expr exp_polynomial(const Expr &x) { return exp_parts(x).value(); }

Expr sigmoid_times_polynomial(const Expr &x, const Expr &m) {
    // e = exp(-|x|) <= 1 never overflows; for x < 0 the result is m e / (1 + e).
    const Expr bits = Halide::reinterpret(Halide::Int(32), x);
    const ExpParts e = exp_parts(Halide::reinterpret(Halide::Float(32), bits | Halide::Int(32).min()));
    const Expr r = 1.0f / (1.0f + e.value_in_sum_with_one());
    // x < 0: m e r, with r applied before the scaling so a subnormal result is rounded once.
    return Halide::select(bits < 0, e.times(m * r), m * r);
}

Expr tanh_polynomial(const Expr &x) {
    const Expr bits = Halide::reinterpret(Halide::Int(32), x);
    const Expr magnitude = bits & 0x7fffffff;
    const Expr a = Halide::reinterpret(Halide::Float(32), magnitude);
    const Expr small = magnitude < 0x3f200000 /* 0.625f */, saturated = magnitude >= 0x4111999a /* 9.1f */;
    const Expr s = a * a;
    const Expr near_zero = a + (a * s) * horner(s, {-3.333333135e-01f, 1.333321035e-01f, -5.394720286e-02f, 2.170295827e-02f,
                                                    -8.182652295e-03f, 2.147515770e-03f});
    // The exp branch sees only its own range (1 elsewhere), so no lane ever computes with an
    // infinity or NaN that fast-math flags may assume away.
    const Expr e = exp_polynomial(2.0f * Halide::select(small || saturated, Expr(1.0f), a));
    const Expr middle = 1.0f - 2.0f / (e + 1.0f);
    const Expr t = Halide::select(small, near_zero, saturated, Expr(1.0f), middle);
    return Halide::reinterpret(Halide::Float(32), Halide::reinterpret(Halide::Int(32), t) | (bits & Halide::Int(32).min()));
}

Expr gelu_polynomial(const Expr &x) {
    const Expr bits = Halide::reinterpret(Halide::Int(32), x);
    const Expr magnitude = bits & 0x7fffffff;
    const Expr centre = magnitude < 0x3f200000 /* 0.625f */, beyond = magnitude >= 0x41680000 /* 14.5f */;
    // |x| < 0.625: x (1/2 + x P(x^2)), Phi(x) - 1/2 odd and small.
    const Expr s = x * x;
    const Expr near_zero =
        x * (0.5f + x * horner(s, {3.989422917e-01f, -6.649033725e-02f, 9.972929023e-03f, -1.183618093e-03f, 1.057730187e-04f}));
    // |x| >= 0.625: x T with T = erfc(a / sqrt 2) / 2 = exp(-a^2 / 2) S(a) / 2; the polynomial and
    // exp see a in [0.625, 14.5) only (1 elsewhere).
    const Expr a = Halide::select(centre || beyond, Expr(1.0f), Halide::reinterpret(Halide::Float(32), magnitude));
    const Expr h = Halide::reinterpret(Halide::Float(32), Halide::reinterpret(Halide::Int(32), a) & Expr(int32_t(0xfffff000)));
    // exp(-a^2 / 2) = exp(-h^2 / 2 - (a - h)(a + h) / 2): the first term exact, the second below 0.11.
    const ExpParts e = exp_parts(-0.5f * (h * h), -0.5f * ((a - h) * (a + h)));
    const Expr t = 1.0f / (1.0f + 0.5f * a);
    const Expr tail = horner(t, {-3.585629202e-06f, 3.990783691e-01f, 3.967081010e-01f, 3.200591505e-01f, -2.240906283e-02f,
                                 3.408738077e-01f, -1.370321631e+00f, 1.628677130e+00f, -8.846489191e-01f, 1.920687854e-01f});
    const Expr x_t = e.times((0.5f * x) * tail);  // x T, rounded once where it is subnormal
    const Expr negative = bits < 0;
    // Past 14.5, T rounds to 0: gelu is x for x > 0, x * 0 for x < 0 (-0, or NaN for -inf and NaN).
    return Halide::select(centre, near_zero, beyond, Halide::select(negative, x * 0.0f, x), negative, x_t, x - x_t);
}

}  // namespace

// All are strict_float whatever the mode: reassociating the two-part reduction
// (x - k ln2_hi) - k ln2_lo, or the two scalings by 2^k1 and 2^k2, would break the error bound
// (2^k1 2^k2 folded to 2^128 is +inf), and x * 0 must stay -0 or NaN.
Expr vector_exp(const Expr &x) {
    return strict_over({x}, [](const std::vector<Expr> &o) { return exp_polynomial(o[0]); });
}

Expr vector_sigmoid_times(const Expr &x, const Expr &m) {
    return strict_over({x, m}, [](const std::vector<Expr> &o) { return sigmoid_times_polynomial(o[0], o[1]); });
}

Expr vector_tanh(const Expr &x) {
    return strict_over({x}, [](const std::vector<Expr> &o) { return tanh_polynomial(o[0]); });
}

Expr vector_gelu(const Expr &x) {
    return strict_over({x}, [](const std::vector<Expr> &o) { return gelu_polynomial(o[0]); });
}

}  // namespace tessel::lower
