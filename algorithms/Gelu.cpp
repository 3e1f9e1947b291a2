#include "algorithms/Gelu.h"

#include <stdexcept>

namespace tessel {

using namespace Halide;

std::string to_string(GeluForm form) { return form == GeluForm::Tanh ? "tanh" : "erf"; }
std::string to_string(NumericMode mode) { return mode == NumericMode::Strict ? "strict" : "fast"; }

GeluForm parse_gelu_form(const std::string &text) {
    if (text == "tanh") return GeluForm::Tanh;
    if (text == "erf") return GeluForm::Erf;
    throw std::invalid_argument("unknown GELU form '" + text + "' (expected 'tanh' or 'erf')");
}

NumericMode parse_numeric_mode(const std::string &text) {
    if (text == "strict") return NumericMode::Strict;
    if (text == "fast") return NumericMode::Fast;
    throw std::invalid_argument("unknown numeric mode '" + text + "' (expected 'strict' or 'fast')");
}

Expr gelu_expr(const Expr &v, GeluForm form, NumericMode mode) {
    if (form == GeluForm::Erf) {
        // Halide's erf is a vectorizable polynomial accurate to the last few mantissa bits.
        return 0.5f * v * (1.0f + erf(v * 0.70710678118654752f));
    }
    const Expr u = 0.79788456080286536f * (v + 0.044715f * v * v * v);
    if (mode == NumericMode::Fast) {
        // 0.5 (1 + tanh u) == sigmoid(2u): exact in real arithmetic, different rounding,
        // and Halide's exp vectorizes where its tanh calls libm once per lane.
        return v / (1.0f + exp(-2.0f * u));
    }
    return 0.5f * v * (1.0f + tanh(u));
}

GeluMlp define_gelu_mlp(GeluForm form, NumericMode mode) {
    GeluMlp a;
    a.form = form;
    a.mode = mode;
    a.k = RDom(0, a.K(), "k");
    const Var &n = a.n, &m = a.m;

    a.matmul(n, m) = 0.0f;
    a.matmul(n, m) += a.x(a.k, m) * a.w(n, a.k);
    a.y(n, m) = gelu_expr(a.matmul(n, m) + a.bias(n), form, mode);

    // Shape contract, checked when the pipeline runs: x is [M,K], w is [K,N], bias is [N].
    a.w.dim(1).set_extent(a.K());
    a.bias.dim(0).set_extent(a.N());
    return a;
}

}  // namespace tessel
