// OpenBLAS baseline: built with -O3 -ffast-math -fopenmp so the epilogue loop calls glibc's
// vector tanhf/erff (libmvec) and runs on all threads, as a tuned separate pass would.
#include "baselines/GeluReference.h"

#include <cblas.h>

#include <cmath>

extern "C" char *openblas_get_corename(void);
extern "C" char *openblas_get_config(void);

namespace tessel {

void gelu_mlp_openblas(const float *x, const float *w, const float *bias, float *y, int M, int K, int N, GeluForm form) {
    if (M == 1) {
        // y[1,N] = x[1,K] @ w[K,N]  ==  w^T (as column-major [N,K]) times x.
        cblas_sgemv(CblasRowMajor, CblasTrans, K, N, 1.0f, w, N, x, 1, 0.0f, y, 1);
    } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, x, K, w, N, 0.0f, y, N);
    }
    const long total = (long)M * N;
    if (form == GeluForm::Erf) {
#pragma omp parallel for simd schedule(static)
        for (long i = 0; i < total; i++) {
            const float v = y[i] + bias[i % N];
            y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
        }
    } else {
#pragma omp parallel for simd schedule(static)
        for (long i = 0; i < total; i++) {
            const float v = y[i] + bias[i % N];
            y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
        }
    }
}

std::string openblas_description() { return std::string(openblas_get_corename()) + " (" + openblas_get_config() + ")"; }

}  // namespace tessel
