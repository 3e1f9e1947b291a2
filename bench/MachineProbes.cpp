#include "bench/MachineProbes.h"

#include <immintrin.h>
#include <omp.h>

#include <chrono>

namespace tessel::bench {

namespace {

constexpr int kChains = 16;

/** `iterations` x 16 chains of 512-bit FMAs; returns a value so the loop is not removed. */
__attribute__((target("avx512f"))) float fma_loop_avx512(long iterations) {
    __m512 acc[kChains];
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < kChains; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iterations; it++) {
#pragma GCC unroll 16
        for (int i = 0; i < kChains; i++) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    }
    __m512 sum = acc[0];
    for (int i = 1; i < kChains; i++) sum = _mm512_add_ps(sum, acc[i]);
    return _mm512_reduce_add_ps(sum);
}

__attribute__((target("avx2,fma"))) float fma_loop_avx2(long iterations) {
    __m256 acc[kChains];
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < kChains; i++) acc[i] = _mm256_set1_ps((float)i);
    for (long it = 0; it < iterations; it++) {
#pragma GCC unroll 16
        for (int i = 0; i < kChains; i++) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    }
    __m256 sum = acc[0];
    for (int i = 1; i < kChains; i++) sum = _mm256_add_ps(sum, acc[i]);
    float out[8];
    _mm256_storeu_ps(out, sum);
    return out[0] + out[7];
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double measure_fma_peak_gflops(int threads, double seconds, std::string *isa) {
    const bool avx512 = __builtin_cpu_supports("avx512f");
    const int lanes = avx512 ? 16 : 8;
    if (isa) *isa = avx512 ? "avx512 (zmm)" : "avx2 (ymm)";
    auto run = [&](long iterations) {
        volatile float sink = 0;
        const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
        {
            const float r = avx512 ? fma_loop_avx512(iterations) : fma_loop_avx2(iterations);
#pragma omp atomic
            sink += r;
        }
        return seconds_since(t0);
    };
    // Calibrate to about `seconds`, then take the best of three runs (a peak, by definition).
    long iterations = 1 << 20;
    while (run(iterations) < seconds / 4) iterations *= 2;
    iterations = (long)(iterations * (seconds / run(iterations)));
    double best = 1e30;
    for (int r = 0; r < 3; r++) best = std::min(best, run(iterations));
    return 2.0 * lanes * kChains * (double)iterations * threads / best * 1e-9;
}

std::vector<double> measure_triad_gbps(int threads, size_t bytes_per_array, int passes) {
    const long n = (long)(bytes_per_array / sizeof(double));
    std::vector<double> a(n), b(n), c(n);
    const double s = 3.0;
    auto pass = [&] {
        const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for simd schedule(static) num_threads(threads)
        for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
        return seconds_since(t0);
    };
    // First-touch the pages with the same static partition the timed passes use.
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long i = 0; i < n; i++) a[i] = 0, b[i] = 1, c[i] = 2;
    pass();
    std::vector<double> gbps;
    for (int p = 0; p < passes; p++) gbps.push_back(3.0 * sizeof(double) * n / pass() * 1e-9);
    return gbps;
}

CacheFlusher::CacheFlusher(size_t bytes) : buffer_(bytes, 1) {}

void CacheFlusher::flush(int threads) {
    char *p = buffer_.data();
    const long lines = (long)(buffer_.size() / 64);
    long sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum) num_threads(threads)
    for (long i = 0; i < lines; i++) {
        p[i * 64] += 1;
        sum += p[i * 64 + 32];
    }
    sink_ = sink_ + sum;
}

}  // namespace tessel::bench
