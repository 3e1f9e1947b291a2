/** \file
 * Oracles for GELU(x @ w + bias): a plain-loop reference accumulated in float64, and
 * OpenBLAS (sgemm, or sgemv for M == 1) followed by a separate vectorized bias+GELU pass.
 * OpenBLAS is a baseline and an oracle only; generated kernels never call it.
 * All tensors are row-major: x[M,K], w[K,N], bias[N], y[M,N].
 */
#pragma once

#include "algorithms/Gelu.h"

#include <string>
#include <vector>

namespace tessel {

/** GELU in float64, the exact formula of the given form. */
double gelu_reference(double v, GeluForm form);

/** y = gelu(x @ w + bias) with float64 accumulation and float64 GELU. */
std::vector<double> gelu_mlp_reference(const float *x, const float *w, const float *bias, int M, int K, int N,
                                       GeluForm form);

/** OpenBLAS sgemm (sgemv when M == 1) into y, then one vectorized, OpenMP-parallel bias+GELU pass. */
void gelu_mlp_openblas(const float *x, const float *w, const float *bias, float *y, int M, int K, int N,
                       GeluForm form);

/** The OpenBLAS core it runs on (openblas_get_corename) and its configuration string. */
std::string openblas_description();

/** Largest |a - b| and largest |a - b| / (1 + |b|) over two arrays. */
struct ErrorStats {
    double max_abs = 0, max_rel = 0;
};
ErrorStats compare(const float *got, const double *want, size_t count);
ErrorStats compare(const float *got, const float *want, size_t count);

}  // namespace tessel
