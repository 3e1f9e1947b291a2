/** \file
 * GELU(x @ w + bias): the running example, written once as a pure Halide algorithm.
 *
 * This file only defines *what* is computed. It contains no scheduling call; schedules
 * (schedules/) address the stages and loop variables by the names declared here.
 *
 * Layout convention (row-major tensors, Halide dimension 0 innermost):
 *   x    f32[M,K]  -> x(k, m)
 *   w    f32[K,N]  -> w(n, k)
 *   bias f32[N]    -> bias(n)
 *   y    f32[M,N]  -> y(n, m)
 * M, K and N are runtime extents taken from the input buffers.
 */
#pragma once

#include <Halide.h>

#include <string>

namespace tessel {

/** Which GELU formula the epilogue evaluates. */
enum class GeluForm {
    Tanh,  ///< 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))
    Erf,   ///< 0.5 v (1 + erf(v / sqrt(2)))
};

/** How freely floating-point expressions may be rewritten.
 * strict: evaluate the formula as written (tanh through Halide's libm call).
 * fast:   allow algebraic rewrites that change rounding; the tanh form becomes
 *         v * sigmoid(2u) = v / (1 + exp(-2u)), which vectorizes. */
enum class NumericMode { Strict, Fast };

std::string to_string(GeluForm form);
std::string to_string(NumericMode mode);
/** Parses "tanh"/"erf" and "strict"/"fast"; throws std::invalid_argument naming the value. */
GeluForm parse_gelu_form(const std::string &text);
NumericMode parse_numeric_mode(const std::string &text);

/** The Halide stages of GELU(x @ w + bias). Stage and variable names are the
 * schedule-facing contract:
 *   stage "matmul": matmul(n, m) = 0; matmul(n, m) += x(k, m) * w(n, k)   (RDom "k")
 *   stage "y":      y(n, m) = gelu(matmul(n, m) + bias(n))
 */
struct GeluMlp {
    Halide::ImageParam x{Halide::Float(32), 2, "x"};
    Halide::ImageParam w{Halide::Float(32), 2, "w"};
    Halide::ImageParam bias{Halide::Float(32), 1, "bias"};
    Halide::Var n{"n"}, m{"m"};
    Halide::RDom k;
    Halide::Func matmul{"matmul"};
    Halide::Func y{"y"};
    GeluForm form = GeluForm::Tanh;
    NumericMode mode = NumericMode::Strict;

    /** Extent names for messages: K is x's dimension 0 (and w's dimension 1). */
    Halide::Expr M() const { return x.dim(1).extent(); }
    Halide::Expr K() const { return x.dim(0).extent(); }
    Halide::Expr N() const { return w.dim(0).extent(); }

    std::vector<Halide::Argument> arguments() const { return {x, w, bias}; }
};

/** Defines the algorithm. Every call builds fresh Funcs, so callers can schedule and
 * compile several variants independently. Adds the shape constraints (x.K == w.K,
 * bias.N == w.N) as requirements that fail at run time with a clear message. */
GeluMlp define_gelu_mlp(GeluForm form, NumericMode mode = NumericMode::Strict);

/** The GELU epilogue on one value, as an Expr, in the given form and mode. */
Halide::Expr gelu_expr(const Halide::Expr &v, GeluForm form, NumericMode mode);

}  // namespace tessel
