#include "bench/MachineProbes.h"

#include <immintrin.h>
#include <omp.h>

#include <thread>

#include <algorithm>
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

volatile float g_sink = 0;

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

FmaPeakProbe::FmaPeakProbe(int threads, double seconds)
    : threads_(threads), avx512_(__builtin_cpu_supports("avx512f")) {
    while (run() < seconds / 4) iterations_ *= 2;
    iterations_ = std::max(1L, (long)(iterations_ * (seconds / run())));
}

double FmaPeakProbe::run() const {
    // Each thread times its own loop, so the time a sleeping thread waits to be scheduled
    // (milliseconds on a busy 2-core machine) is not counted as FMA time; the figure is
    // the sum of the threads' rates, returned as the equivalent time for flops().
    float sink = 0;
    double rate = 0;  // FMA loop iterations per second, all threads
#pragma omp parallel num_threads(threads_) reduction(+ : sink, rate)
    {
        const auto t0 = std::chrono::steady_clock::now();
        sink += avx512_ ? fma_loop_avx512(iterations_) : fma_loop_avx2(iterations_);
        rate += iterations_ / seconds_since(t0);
    }
    g_sink = g_sink + sink;
    return (double)iterations_ * threads_ / rate;
}

double FmaPeakProbe::flops() const { return 2.0 * (avx512_ ? 16 : 8) * kChains * (double)iterations_ * threads_; }

std::string FmaPeakProbe::isa() const { return avx512_ ? "avx512 zmm FMA" : "avx2 ymm FMA"; }

TriadProbe::TriadProbe(int threads, size_t bytes_per_array)
    : threads_(threads), a_(bytes_per_array / sizeof(double)), b_(a_.size()), c_(a_.size()) {
    const long n = (long)a_.size();
    double *a = a_.data(), *b = b_.data(), *c = c_.data();
    // First touch by the thread that streams each part in run().
#pragma omp parallel num_threads(threads_)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        for (long i = n * t / nt; i < n * (t + 1) / nt; i++) a[i] = 0, b[i] = 1, c[i] = 2;
    }
}

double TriadProbe::run() {
    // Each thread times its own (static) share, as the FMA probe does, so a thread's wait
    // to be scheduled is not counted; the result is the sum of the threads' bandwidths,
    // returned as the equivalent time for bytes().
    const long n = (long)a_.size();
    double *a = a_.data(), *b = b_.data(), *c = c_.data();
    const double s = 3.0;
    double elements_per_second = 0;
#pragma omp parallel num_threads(threads_) reduction(+ : elements_per_second)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const long lo = n * t / nt, hi = n * (t + 1) / nt;
        const auto t0 = std::chrono::steady_clock::now();
#pragma omp simd
        for (long i = lo; i < hi; i++) a[i] = b[i] + s * c[i];
        elements_per_second += (hi - lo) / seconds_since(t0);
    }
    return n / elements_per_second;
}

float stream_read(const float *data, size_t count, int threads) {
    float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const size_t lo = count * t / nt, hi = count * (t + 1) / nt;
        // The share is read as 4 streams in lockstep (its quarters), one cache line of each per
        // step, into 64 independent partial sums: measured faster than one stream here, and one
        // accumulator chain would be bound by the add latency, not by memory.
        const size_t quarter = (hi - lo) / 4 / 16 * 16;
        float acc[64] = {};
        for (size_t i = 0; i < quarter; i += 16)
            for (int q = 0; q < 4; q++)
                for (int j = 0; j < 16; j++) acc[q * 16 + j] += data[lo + q * quarter + i + j];
        float sum = 0;
        for (size_t i = lo + 4 * quarter; i < hi; i++) sum += data[i];
        for (float a : acc) sum += a;
        total += sum;
    }
    return total;
}

CacheFlusher::CacheFlusher(size_t bytes) : buffer_(bytes, 1) {}

void CacheFlusher::flush(int threads) {
    // Plain threads, not OpenMP: OpenMP's workers spin for a while after a parallel region,
    // and would take the cores from whichever implementation is timed right after the flush
    // (OpenBLAS's OpenMP build reuses those spinning workers; Halide's pool cannot).
    char *p = buffer_.data();
    const long lines = (long)(buffer_.size() / 64);
    std::vector<long> sums(threads, 0);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; t++) {
        pool.emplace_back([=, &sums] {
            long sum = 0;
            for (long i = lines * t / threads; i < lines * (t + 1) / threads; i++) {
                p[i * 64] += 1;
                sum += p[i * 64 + 32];
            }
            sums[t] = sum;
        });
    }
    for (auto &th : pool) th.join();
    for (long s : sums) sink_ = sink_ + s;
}

}  // namespace tessel::bench
