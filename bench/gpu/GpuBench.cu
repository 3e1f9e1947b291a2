// tessel_gpu_bench: runs every CUDA library schedule (compiled ahead of time, see GpuAot.cpp)
// on the suite shapes, verifies sampled rows against a float64 CPU reference, and times it
// against cuBLAS SGEMM followed by a bias+GELU kernel (CUDA events, median of repeats).
// cuBLAS is loaded at run time (dlopen), so the binary needs only the driver's libcuda.
#include "bench/gpu/GpuKernels.h"

#include <HalideRuntimeCuda.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

#define CHECK_CUDA(x)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

struct Shape {
    int M, K, N;
    const char *kind;
};
const Shape kSuite[] = {{2048, 2048, 2048, "square"}, {512, 1024, 4096, "mlp"},   {1024, 4096, 4096, "mlp"},
                        {1, 4096, 4096, "decode"},    {16, 4096, 4096, "decode"}, {1, 4096, 16384, "decode"},
                        {77, 768, 3072, "odd"},       {3, 4096, 11008, "odd"}};

__device__ __forceinline__ float gelu_tanh(float v) {
    const float u = 0.79788456080286536f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.0f + tanhf(u));
}

/** The baseline's epilogue: y[m, n] = gelu(y[m, n] + bias[n]), one element per thread, float4. */
__global__ void bias_gelu(float *y, const float *bias, int M, int N) {
    const long i = 4L * (blockIdx.x * (long)blockDim.x + threadIdx.x);
    const long total = (long)M * N;
    if (i + 3 < total && N % 4 == 0) {
        float4 v = *reinterpret_cast<float4 *>(y + i);
        const int n = (int)(i % N);
        v.x = gelu_tanh(v.x + bias[n]), v.y = gelu_tanh(v.y + bias[n + 1]);
        v.z = gelu_tanh(v.z + bias[n + 2]), v.w = gelu_tanh(v.w + bias[n + 3]);
        *reinterpret_cast<float4 *>(y + i) = v;
    } else {
        for (long j = i; j < i + 4 && j < total; j++) y[j] = gelu_tanh(y[j] + bias[j % N]);
    }
}

// ---- cuBLAS, loaded at run time ----
using CreateFn = cublasStatus_t (*)(cublasHandle_t *);
using SgemmFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                   const float *, const float *, int, const float *, int, const float *, float *,
                                   int);
struct Cublas {
    cublasHandle_t handle = nullptr;
    SgemmFn sgemm = nullptr;
    std::string library;
    bool load() {
        for (const char *name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
            void *h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
            if (!h) continue;
            auto create = reinterpret_cast<CreateFn>(dlsym(h, "cublasCreate_v2"));
            sgemm = reinterpret_cast<SgemmFn>(dlsym(h, "cublasSgemm_v2"));
            if (create && sgemm && create(&handle) == CUBLAS_STATUS_SUCCESS) {
                library = name;
                return true;
            }
        }
        return false;
    }
    /** Row-major y[M,N] = x[M,K] @ w[K,N] as column-major y^T = w^T x^T. */
    void gemm(const float *x, const float *w, float *y, int M, int K, int N) const {
        const float one = 1.0f, zero = 0.0f;
        if (sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, w, N, x, K, &zero, y, N) != CUBLAS_STATUS_SUCCESS) {
            std::fprintf(stderr, "cublasSgemm failed\n");
            std::exit(1);
        }
    }
};

// ---- Halide shares the runtime API's primary context and the default stream ----
CUcontext g_context = nullptr;
int acquire_context(void *, void **ctx, bool) {
    *ctx = g_context;
    return 0;
}
int release_context(void *) { return 0; }

/** A Halide buffer over device memory: dims innermost first. */
struct DeviceBuffer {
    halide_buffer_t buf{};
    halide_dimension_t dims[2]{};
    DeviceBuffer(float *ptr, int d0, int d1) {
        buf.type = halide_type_t(halide_type_float, 32);
        buf.dimensions = d1 > 0 ? 2 : 1;
        buf.dim = dims;
        dims[0] = halide_dimension_t(0, d0, 1);
        if (d1 > 0) dims[1] = halide_dimension_t(0, d1, d0);
        if (halide_cuda_wrap_device_ptr(nullptr, &buf, (uint64_t)(uintptr_t)ptr) != 0) {
            std::fprintf(stderr, "halide_cuda_wrap_device_ptr failed\n");
            std::exit(1);
        }
    }
    ~DeviceBuffer() { halide_cuda_detach_device_ptr(nullptr, &buf); }
};

template <typename Fn>
double median_ms(Fn fn, int repeats) {
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    for (int i = 0; i < 2; i++) fn();  // warm up
    CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int i = 0; i < repeats; i++) {
        CHECK_CUDA(cudaEventRecord(a));
        fn();
        CHECK_CUDA(cudaEventRecord(b));
        CHECK_CUDA(cudaEventSynchronize(b));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return t[t.size() / 2];
}

double gelu_ref(double v) { return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))); }

/** Largest |got - ref| / (1 + |ref|) over sampled rows, ref in float64. */
double sampled_error(const std::vector<float> &y, const std::vector<float> &x, const std::vector<float> &w,
                     const std::vector<float> &bias, const Shape &s, const std::vector<int> &rows) {
    double worst = 0;
    std::vector<double> acc(s.N);
    for (int m : rows) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int k = 0; k < s.K; k++) {
            const double xv = x[(size_t)m * s.K + k];
            const float *wr = &w[(size_t)k * s.N];
            for (int n = 0; n < s.N; n++) acc[n] += xv * wr[n];
        }
        for (int n = 0; n < s.N; n++) {
            const double ref = gelu_ref(acc[n] + bias[n]);
            worst = std::max(worst, std::fabs(y[(size_t)m * s.N + n] - ref) / (1.0 + std::fabs(ref)));
        }
    }
    return worst;
}

}  // namespace

int main(int argc, char **argv) {
    int repeats = 20;
    std::string only;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--schedule") && i + 1 < argc) only = argv[++i];
        else {
            std::printf("usage: tessel_gpu_bench [--repeats N] [--schedule NAME]\n");
            return 2;
        }
    }
    cudaDeviceProp prop{};
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    CHECK_CUDA(cudaFree(nullptr));  // creates the primary context
    if (cuCtxGetCurrent(&g_context) != CUDA_SUCCESS || !g_context) {
        std::fprintf(stderr, "no current CUDA context\n");
        return 1;
    }
    halide_set_cuda_acquire_context(acquire_context);
    halide_set_cuda_release_context(release_context);
    Cublas blas;
    const bool have_blas = blas.load();
    std::printf("GPU %s, sm_%d%d, %d SMs; cuBLAS: %s; median of %d repeats (CUDA events)\n", prop.name, prop.major,
                prop.minor, prop.multiProcessorCount, have_blas ? blas.library.c_str() : "NOT FOUND", repeats);
    std::printf("%-18s %-12s %-28s %10s %12s %8s %10s %10s %9s\n", "shape MxKxN", "schedule", "variant", "Tessel ms",
                "cuBLAS+epi ms", "ratio", "TFLOP/s", "cuBLAS TF", "max err");
    bool all_ok = true;
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    for (const Shape &s : kSuite) {
        const size_t nx = (size_t)s.M * s.K, nw = (size_t)s.K * s.N, ny = (size_t)s.M * s.N;
        std::vector<float> x(nx), w(nw), bias(s.N), y(ny);
        for (auto &v : x) v = uni(rng);
        for (auto &v : w) v = uni(rng) / std::sqrt((float)s.K);
        for (auto &v : bias) v = uni(rng);
        float *dx, *dw, *db, *dy;
        CHECK_CUDA(cudaMalloc(&dx, nx * 4));
        CHECK_CUDA(cudaMalloc(&dw, nw * 4));
        CHECK_CUDA(cudaMalloc(&db, s.N * 4));
        CHECK_CUDA(cudaMalloc(&dy, ny * 4));
        CHECK_CUDA(cudaMemcpy(dx, x.data(), nx * 4, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(dw, w.data(), nw * 4, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(db, bias.data(), s.N * 4, cudaMemcpyHostToDevice));
        std::vector<int> rows = {0, s.M / 2, s.M - 1};
        rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
        const double flops = 2.0 * s.M * s.K * s.N;
        const double tol = 1e-4 * std::sqrt((double)s.K);

        double t_blas = NAN, err_blas = NAN;
        if (have_blas) {
            const int threads = 256;
            const long blocks = ((long)ny / 4 + threads) / threads;
            auto run = [&] {
                blas.gemm(dx, dw, dy, s.M, s.K, s.N);
                bias_gelu<<<blocks, threads>>>(dy, db, s.M, s.N);
            };
            t_blas = median_ms(run, repeats);
            CHECK_CUDA(cudaMemcpy(y.data(), dy, ny * 4, cudaMemcpyDeviceToHost));
            err_blas = sampled_error(y, x, w, bias, s, rows);
        }
        char shape[40];
        std::snprintf(shape, sizeof shape, "%dx%dx%d", s.M, s.K, s.N);
        std::string last;
        for (const auto &k : gpu_kernel_variants()) {
            if (k.schedule == last || (!only.empty() && k.schedule != only)) continue;
            if (!k.applies(s.M, s.K, s.N)) continue;
            last = k.schedule;  // the first variant whose guard holds, as GeluKernel picks it
            DeviceBuffer bx(dx, s.K, s.M), bw(dw, s.N, s.K), bb(db, s.N, 0), by(dy, s.N, s.M);
            CHECK_CUDA(cudaMemset(dy, 0, ny * 4));
            int rc = 0;
            auto run = [&] { rc |= k.run(&bx.buf, &bw.buf, &bb.buf, &by.buf); };
            const double t = median_ms(run, repeats);
            CHECK_CUDA(cudaDeviceSynchronize());
            CHECK_CUDA(cudaMemcpy(y.data(), dy, ny * 4, cudaMemcpyDeviceToHost));
            const double err = sampled_error(y, x, w, bias, s, rows);
            const bool ok = rc == 0 && err <= tol;
            all_ok = all_ok && ok;
            std::printf("%-18s %-12s %-28s %10.4f %12.4f %8.2f %10.2f %10.2f %9.2e%s\n", shape, k.schedule.c_str(),
                        ("v" + std::to_string(k.variant) + " " + k.guard).substr(0, 28).c_str(), t, t_blas,
                        t_blas / t, flops / t * 1e-9, flops / t_blas * 1e-9, err,
                        ok ? "" : (rc ? "  RUN FAILED" : "  MISMATCH"));
        }
        std::printf("%-18s %-12s %-28s %10s %12.4f %8s %10s %10.2f %9.2e\n", shape, "cuBLAS", "sgemm + bias_gelu", "-",
                    t_blas, "-", "-", flops / t_blas * 1e-9, err_blas);
        cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(dy);
    }
    std::printf("ratio = cuBLAS+epilogue time / Tessel time (>1: Tessel faster); errors: sampled rows vs float64, "
                "tolerance 1e-4*sqrt(K)\n%s\n", all_ok ? "ALL VERIFIED" : "SOME MISMATCHES");
    return all_ok ? 0 : 1;
}
