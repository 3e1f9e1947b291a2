// Calls the running example, y = gelu(x @ w + bias) with a hidden width of 4096, through the
// header `tessel_add_kernel_library` generated, and checks it against a plain loop in double.
// Exits 0 when every element agrees within float32 accumulation error.
#include "gelu_layer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

namespace {

halide_buffer_t dense(std::vector<float> &data, std::vector<halide_dimension_t> &dims, std::vector<int> extents_outer_first) {
    halide_buffer_t b{};
    b.type = {halide_type_float, 32, 1};
    b.host = reinterpret_cast<uint8_t *>(data.data());
    dims.resize(extents_outer_first.size());
    int stride = 1;
    for (size_t d = 0; d < dims.size(); d++) {
        dims[d] = {0, extents_outer_first[dims.size() - 1 - d], stride, 0};
        stride *= dims[d].extent;
    }
    b.dimensions = (int)dims.size();
    b.dim = dims.data();
    return b;
}

}  // namespace

int main() {
    const auto start = std::chrono::steady_clock::now();
    const int M = 3, K = 17, N = 4096;
    std::vector<float> x(M * K), w(K * N), bias(N), y(M * N);
    for (size_t i = 0; i < x.size(); i++) x[i] = std::sin(0.1f * i);
    for (size_t i = 0; i < w.size(); i++) w[i] = std::cos(0.01f * i) / 4;
    for (size_t i = 0; i < bias.size(); i++) bias[i] = 0.001f * (i % 100);
    std::vector<halide_dimension_t> dx, dw, db, dy;
    halide_buffer_t bx = dense(x, dx, {M, K}), bw = dense(w, dw, {K, N}), bb = dense(bias, db, {N}), by = dense(y, dy, {M, N});
    if (int rc = gelu_layer(&bx, &bw, &bb, &by, nullptr, 0)) {
        std::printf("gelu_layer failed (%d): %s\n", rc, gelu_layer_error());
        return 1;
    }
    const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    double worst = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double acc = bias[n];
            for (int k = 0; k < K; k++) acc += (double)x[m * K + k] * w[k * N + n];
            const double want = 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0)));
            worst = std::fmax(worst, std::fabs(y[m * N + n] - want) / (1 + std::fabs(want)));
        }
    std::printf("gelu_layer: %smax relative error %.2e; first result %.2f ms after main() began\n", gelu_layer_variants(), worst,
                first_ms);
    return worst < 1e-4 ? 0 : 1;
}
