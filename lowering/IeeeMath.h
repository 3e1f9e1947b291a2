/** \file
 * IEEE 754 special values in Halide expressions (docs/TSL.md "Special values"), for the lowering
 * (ExprBuilder.h). The exp and tanh polynomials (VectorMath.h) and Halide's erf are wrong for NaN,
 * infinities and arguments out of range, and Halide's float max/min are a compare and select
 * that fast-math flags may fold; these helpers select the special cases on the float's bits
 * (integer operations no fast-math flag applies to), so NaN, +-inf and -0 come out as IEEE 754
 * defines them and the interpreter computes them, and every finite result in range is Halide's.
 *
 * Legal on Float(32) Exprs; order keys are Int(32) Exprs. gelu_expr's fast mode rounds
 * differently from the strict formula (see there).
 */
#pragma once

#include <Halide.h>

#include <functional>
#include <vector>

#include "dsl/ir/Graph.h"

namespace tessel::lower {

using StrictOp = std::function<Halide::Expr(const std::vector<Halide::Expr> &)>;

/** strict_float(op(operands)) without visiting the operands: op is built over placeholder
 * variables, made strict, and the operands substituted in. strict_float rewrites every float op
 * of the tree it is given, so applied to each op of a chain over the whole operand it costs
 * O(n^2), and on an operand read twice (a DAG) it walks the tree, 2^n for n squarings; the
 * operands built by the lowering are strict already where they must be. */
Halide::Expr strict_over(const std::vector<Halide::Expr> &operands, const StrictOp &op);

/** The bits of a float32, for NaN and infinity tests. */
Halide::Expr float_bits(const Halide::Expr &x);

/** exp with IEEE special values: NaN stays NaN, past ln(FLT_MAX) (88.72284) the result is
 * +inf, below -104 (exp < half the smallest subnormal) it is 0; in between vector_exp
 * (VectorMath.h: 1 ulp, subnormal results included), or in fast mode Halide's polynomial, which
 * may use fused multiply-adds (5 ulp near |x| = 80, subnormal results flushed to 0). The ranges
 * are compared on the bits too (a positive float's bits order as the float). */
Halide::Expr ieee_exp(const Halide::Expr &x, dsl::NumericMode mode = dsl::NumericMode::Strict);

/** tanh as vector code (vector_tanh, VectorMath.h: +-inf give +-1, -0 gives -0), NaN passed
 * through; Halide's tanh calls libm once per lane. */
Halide::Expr ieee_tanh(const Halide::Expr &x);

/** m sigmoid(x) (vector_sigmoid_times, VectorMath.h: no intermediate overflows, and results down
 * to the subnormals keep their bits): sigmoid is m = 1, silu m = x, the tanh GELU x = 2u, m = v.
 * NaN in x gives NaN; for |x| > 120, m (x > 0) or m * 0 (x < 0: -0, or NaN for an infinite m, as
 * silu(-inf) = -inf / (1 + inf) is). */
Halide::Expr ieee_sigmoid_times(const Halide::Expr &x, const Halide::Expr &m);

/** erf with IEEE special values. Halide's erf is a rational polynomial that divides
 * infinities for large arguments (erf(+inf) = erf(1e30) = NaN): NaN stays NaN, from |x| >= 4
 * (where float32 erf rounds to +-1: 1 - erf(4) = 1.5e-8) the result is +-1 with x's sign, in
 * between the polynomial, which sees only in-range arguments (0 instead). Selected on the bits
 * as in ieee_exp, so fast-math flags cannot fold the cases away. */
Halide::Expr ieee_erf(const Halide::Expr &x);

/** log with IEEE special values: NaN and negative arguments give NaN, +-0 gives -inf, +inf gives
 * +inf; subnormals are scaled by 2^24 first (log(x 2^24) - 24 ln 2), since Halide's polynomial
 * reads the exponent field. Selected on the bits as in ieee_exp. */
Halide::Expr ieee_log(const Halide::Expr &x);

/** IEEE comparison of two float32 Exprs as a Bool Expr, on integer keys of the bits (the
 * magnitude, negated for a set sign bit, so -0 and +0 share key 0) with NaN false for every
 * relation but !=. Halide rewrites a <= b as !(b < a), which is true for NaN, and fast-math flags
 * may fold float compares; integer compares suffer neither. */
Halide::Expr ieee_compare(dsl::Op relation, const Halide::Expr &a, const Halide::Expr &b);

/** sin and cos: NaN and +-inf give NaN (Halide's calls are only right for finite arguments). */
Halide::Expr ieee_sin(const Halide::Expr &x);
Halide::Expr ieee_cos(const Halide::Expr &x);

/** GELU of `v`: the exact (erf) form, or the tanh approximation. Fast mode evaluates the
 * formulas 0.5 v (1 + erf(v / sqrt 2)) and v / (1 + exp(-2u)) (= 0.5 v (1 + tanh u)) directly.
 * Strict mode avoids their cancellation for negative v, where 1 + erf and 1 + tanh lose every
 * bit (156 ulp at v = -2.8, and -0 for v < -5.5 where the result is -7.8e-8): erf's form as
 * v Phi(v) through erfc (vector_gelu, VectorMath.h), the tanh form as v sigmoid(2u)
 * (ieee_sigmoid_times). Both keep the formula's special values: gelu(+inf) = inf,
 * gelu(-inf) = -inf * 0 = NaN, gelu(-0) = -0. */
Halide::Expr gelu_expr(const Halide::Expr &v, bool tanh_form, dsl::NumericMode mode);

/** Key of a float32 whose int32 order is the float order on non-NaN values (-0 below +0); NaN
 * maps to INT32_MAX if `nan_wins_max` (for max), else to INT32_MIN (for min). */
Halide::Expr order_key(const Halide::Expr &x, bool nan_wins_max);

/** Inverse of order_key (the NaN keys decode to NaN bit patterns). */
Halide::Expr from_order_key(const Halide::Expr &k);

/** Whether an order key (NaN wins max) is that of a finite float: strictly between -inf's and +inf's. */
Halide::Expr is_finite_key(const Halide::Expr &k);

/** A row's logsumexp from its maximum's order key (NaN wins max) and its sum of exp(x - max):
 * max + log(sum), or NaN where the maximum is not finite (a NaN, +inf or only -inf in the row),
 * as reduce_max(x) + log(reduce_sum(exp(x - reduce_max(x)))) gives. */
Halide::Expr logsumexp_from_max_key(const Halide::Expr &max_key, const Halide::Expr &sum);

/** IEEE 754-2019 maximum (NaN wins, -0 < +0), as integer max on order keys. */
Halide::Expr ieee_maximum(const Halide::Expr &a, const Halide::Expr &b);

/** IEEE 754-2019 minimum (NaN wins, -0 < +0), as integer min on order keys. */
Halide::Expr ieee_minimum(const Halide::Expr &a, const Halide::Expr &b);

}  // namespace tessel::lower
