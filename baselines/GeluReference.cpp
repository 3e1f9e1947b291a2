#include "baselines/GeluReference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tessel {

std::string to_string(GeluForm form) { return form == GeluForm::Tanh ? "tanh" : "erf"; }

GeluForm parse_gelu_form(const std::string &text) {
    if (text == "tanh") return GeluForm::Tanh;
    if (text == "erf") return GeluForm::Erf;
    throw std::invalid_argument("unknown GELU form '" + text + "' (expected 'tanh' or 'erf')");
}

double gelu_reference(double v, GeluForm form) {
    if (form == GeluForm::Erf) return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    const double u = std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v);
    return 0.5 * v * (1.0 + std::tanh(u));
}

std::vector<double> gelu_mlp_reference(const float *x, const float *w, const float *bias, int M, int K, int N, GeluForm form) {
    std::vector<double> y((size_t)M * N);
    std::vector<double> acc(N);
    for (int m = 0; m < M; m++) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int k = 0; k < K; k++) {
            const double xv = x[(size_t)m * K + k];
            const float *wr = w + (size_t)k * N;
            for (int n = 0; n < N; n++) acc[n] += xv * wr[n];
        }
        for (int n = 0; n < N; n++) y[(size_t)m * N + n] = gelu_reference(acc[n] + bias[n], form);
    }
    return y;
}

}  // namespace tessel
