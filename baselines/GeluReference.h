/** \file
 * Oracles for GELU(x @ w + bias): a plain-loop reference accumulated in float64, and
 * OpenBLAS (sgemm, or sgemv for M == 1) followed by a separate vectorized bias+GELU pass.
 * OpenBLAS is a baseline and an oracle only; generated kernels never call it.
 * All tensors are row-major: x[M,K], w[K,N], bias[N], y[M,N].
 */
#pragma once

#include "support/ErrorStats.h"

#include <string>
#include <vector>

namespace tessel {

/** Which GELU formula: the graph ops gelu_tanh and gelu. */
enum class GeluForm {
    Tanh,  ///< 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))
    Erf,   ///< 0.5 v (1 + erf(v / sqrt(2)))
};
std::string to_string(GeluForm form);
/** "tanh" or "erf"; throws std::invalid_argument naming the value. */
GeluForm parse_gelu_form(const std::string &text);

/** GELU in float64, the exact formula of the given form. */
double gelu_reference(double v, GeluForm form);

/** y = gelu(x @ w + bias) with float64 accumulation and float64 GELU. */
std::vector<double> gelu_mlp_reference(const float *x, const float *w, const float *bias, int M, int K, int N, GeluForm form);

/** OpenBLAS sgemm (sgemv when M == 1) into y, then one vectorized, OpenMP-parallel bias+GELU pass. */
void gelu_mlp_openblas(const float *x, const float *w, const float *bias, float *y, int M, int K, int N, GeluForm form);

/** The OpenBLAS core it runs on (openblas_get_corename) and its configuration string. */
std::string openblas_description();

}  // namespace tessel
