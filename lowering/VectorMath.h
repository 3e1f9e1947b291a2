/** \file
 * exp, sigmoid, tanh and GELU for float32 as vector code: a range reduction and a polynomial, every operation a
 * vector instruction (no libm call per lane), with a bounded error. IeeeMath.h adds the special
 * values (NaN, infinities, out-of-range arguments) around them; the lowering calls those.
 *
 * The polynomials are near-minimax fits in relative error, rounded to float32, made by
 * lowering/fit/fit_strict_math.py (which also prints the error of their float32 evaluation).
 * The measured errors over every float32, against the interpreter's double formula rounded once,
 * are in docs/results/strict_math_ulp_intel.txt (bench/math_ulp.cpp); the bounds below are pinned
 * by tests/lowering/test_strict_math.cpp on a dense sweep.
 *
 * Legal on Float(32) Exprs. All are strict_float in every numeric mode (the error bounds rely on
 * the operations as written: no reassociation, no fused multiply-adds).
 */
#pragma once

#include <Halide.h>

namespace tessel::lower {

/** exp(x) for finite x in [-104, 88.72284] (ieee_exp selects the rest): x = k ln2 + r with
 * |r| <= ln2/2 (ln2 split in two so that k ln2_hi is exact), exp(r) = 1 + r + r^2 Q(r) with Q of
 * degree 5, times 2^k applied as two powers of two so that a result past FLT_MAX is +inf, and a
 * subnormal result is rounded once from an integer count of 2^-149 steps: no float operation of
 * any lane reads or writes a subnormal (x86 takes a microcode assist for one). */
Halide::Expr vector_exp(const Halide::Expr &x);

/** m sigmoid(x) for |x| <= 120 (ieee_sigmoid_times selects the rest): with e = exp(-|x|),
 * m / (1 + e) for x >= 0 and m e / (1 + e) for x < 0, where m / (1 + e) is formed before exp's
 * final scaling by a power of two, so a result that is normal while e is subnormal (silu for x in
 * [-91.9, -87.3]) keeps its bits and a subnormal result is rounded once. */
Halide::Expr vector_sigmoid_times(const Halide::Expr &x, const Halide::Expr &m);

/** tanh(x) for every float32 but NaN (ieee_tanh passes NaN through): |x| < 0.625 as
 * a + a^3 P(a^2) with P of degree 5 (no cancellation near 0); 0.625 <= |x| < 9.1 as
 * 1 - 2 / (exp(2|x|) + 1), where the quotient is at most 0.45 of the result, so exp's error is not
 * amplified; |x| >= 9.1 as 1 (tanh(9.1) rounds to 1 in float32); the sign of x restored on the
 * bits (tanh(-0) = -0). */
Halide::Expr vector_tanh(const Halide::Expr &x);

/** gelu(x) = x Phi(x) (Phi the normal distribution function) for every float32, without
 * 1 + erf(x / sqrt 2), which cancels for negative x, and without Halide's erf: |x| < 0.625 as
 * x (1/2 + x P(x^2)), P of degree 4; |x| >= 0.625 through T = erfc(a / sqrt 2) / 2 with a = |x|,
 * gelu = x T for x < 0 and x - x T for x > 0. T = exp(-a^2 / 2) S(a) / 2, S = erfc(a / sqrt 2)
 * exp(a^2 / 2) a polynomial of degree 9 in 1 / (1 + a / 2), and exp(-a^2 / 2) as
 * exp(-h^2 / 2 - (a - h)(a + h) / 2) with h = a cut to 12 significant bits (h^2 exact; the
 * second term, below 0.11, joins the reduced argument), so the rounding of a^2 (up to 210 ulp of
 * a result at a = 14) does not reach the result; exp's power of two is applied last, as in
 * vector_sigmoid_times. Past |x| = 14.5: x (x > 0), x * 0 (x < 0: -0; -inf and NaN give NaN). */
Halide::Expr vector_gelu(const Halide::Expr &x);

}  // namespace tessel::lower
