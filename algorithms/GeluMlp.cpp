#include "algorithms/GeluMlp.h"

#include "dsl/ir/Builder.h"

namespace tessel {

using dsl::Dim;
using dsl::DType;
using dsl::GraphBuilder;
using dsl::Value;

dsl::Graph gelu_mlp_design() {
    GraphBuilder b("gelu_mlp");
    Dim M = b.symbol("M"), K = b.symbol("K");
    // Shape code: the hidden width, used as a dimension below.
    Value hidden = (b.shape_const(2048) * 2).named("hidden");

    Value x = b.input("x", DType::F32, {M, K});
    Value w = b.input("w", DType::F32, {K, hidden});
    Value bias = b.input("bias", DType::F32, {hidden});

    // The layer, as the design states it. transpose() without perm reverses the axes.
    Value y = gelu(matmul(x, transpose(transpose(w))) + bias).named("y");

    // Two branches each measure the width of x.
    Value k_view = shape_of(x, 1).named("k_view");
    Value k_scale = shape_of(x, 1).named("k_scale");

    // Diagnostic branch: the mean of each row of x, computed but read by no output.
    Value x_rows = reshape(x, {M, k_view}).named("x_rows");
    Value k_f32 = cast(k_scale, DType::F32).named("k_f32");
    (reduce_sum(x_rows, {1}) / k_f32).named("row_mean");

    b.output(y);
    return std::move(b).build();
}

dsl::Graph gelu_mlp_layer(bool tanh_form, dsl::NumericMode mode) {
    GraphBuilder b("gelu_mlp", mode);
    Dim M = b.symbol("M"), K = b.symbol("K"), N = b.symbol("N");
    Value x = b.input("x", DType::F32, {M, K});
    Value w = b.input("w", DType::F32, {K, N});
    Value bias = b.input("bias", DType::F32, {N});
    Value v = matmul(x, w) + bias;
    b.output("y", tanh_form ? gelu_tanh(v) : gelu(v));
    return std::move(b).build();
}

}  // namespace tessel
