#include "autoscheduler/MachineProbes.h"

#include "support/Clock.h"

#include <immintrin.h>
#include <omp.h>

#include <fstream>
#include <stdexcept>
#include <thread>

#include <algorithm>
#include <chrono>

namespace tessel::autosched {

namespace {

// Accumulator chains per thread, sized to the register file of the ISA: each chain is one
// register, and the loop needs two more for the constants. AVX2 has 16 ymm registers: 12 chains
// + 2 = 14, no spill (16 chains + 2 would spill two accumulators to the stack every iteration,
// and the probe would time loads and stores). AVX-512 has 32 zmm: 24 + 2 = 26. Both cover FMA
// latency x FMA ports (4 x 2 = 8 chains on Zen 3/4 and recent Intel cores) with room to spare.
// tests/bench/check_fma_probe.py reads the compiled loops and fails on any stack access in them.
constexpr int kAvx2Chains = 12, kAvx512Chains = 24;

/** `iterations` x kAvx512Chains chains of 512-bit FMAs; returns a value so the loop is not removed. */
__attribute__((target("avx512f"), noinline)) float fma_loop_avx512(long iterations) {
    __m512 acc[kAvx512Chains];
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < kAvx512Chains; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iterations; it++) {
#pragma GCC unroll 24
        for (int i = 0; i < kAvx512Chains; i++) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    }
    __m512 sum = acc[0];
    for (int i = 1; i < kAvx512Chains; i++) sum = _mm512_add_ps(sum, acc[i]);
    // Lanes summed from memory: GCC 12's _mm512_reduce_add_ps reads an uninitialised register.
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, sum);
    float total = 0;
    for (float l : lanes) total += l;
    return total;
}

__attribute__((target("avx2,fma"), noinline)) float fma_loop_avx2(long iterations) {
    __m256 acc[kAvx2Chains];
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < kAvx2Chains; i++) acc[i] = _mm256_set1_ps((float)i);
    for (long it = 0; it < iterations; it++) {
#pragma GCC unroll 12
        for (int i = 0; i < kAvx2Chains; i++) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    }
    __m256 sum = acc[0];
    for (int i = 1; i < kAvx2Chains; i++) sum = _mm256_add_ps(sum, acc[i]);
    float out[8];
    _mm256_storeu_ps(out, sum);
    return out[0] + out[7];
}

volatile float g_sink = 0;

}  // namespace

VectorIsa host_vector_isa() { return __builtin_cpu_supports("avx512f") ? VectorIsa::Avx512 : VectorIsa::Avx2; }

FmaPeakProbe::FmaPeakProbe(int threads, double seconds, VectorIsa isa) : threads_(threads), isa_(isa) {
    if (isa == VectorIsa::Avx512 && !__builtin_cpu_supports("avx512f"))
        throw std::invalid_argument("the AVX-512 FMA probe needs a CPU with AVX-512F");
    while (run() < seconds / 4) iterations_ *= 2;
    iterations_ = std::max(1L, (long)(iterations_ * (seconds / run())));
}

double FmaPeakProbe::run() const {
    // Each thread times its own loop, so the time a sleeping thread waits to be scheduled
    // (milliseconds on a busy 2-core machine) is not counted as FMA time; the figure is
    // the sum of the threads' rates, returned as the equivalent time for flops().
    float sink = 0;
    double rate = 0;  // FMA loop iterations per second, all threads
    const bool wide = isa_ == VectorIsa::Avx512;
#pragma omp parallel num_threads(threads_) reduction(+ : sink, rate)
    {
        const tessel::SteadyClock::time_point t0 = tessel::SteadyClock::now();
        sink += wide ? fma_loop_avx512(iterations_) : fma_loop_avx2(iterations_);
        rate += iterations_ / seconds_since(t0);
    }
    g_sink = g_sink + sink;
    return (double)iterations_ * threads_ / rate;
}

int FmaPeakProbe::chains() const { return isa_ == VectorIsa::Avx512 ? kAvx512Chains : kAvx2Chains; }
int FmaPeakProbe::lanes() const { return isa_ == VectorIsa::Avx512 ? 16 : 8; }

double FmaPeakProbe::flops() const { return 2.0 * lanes() * chains() * (double)iterations_ * threads_; }

std::string FmaPeakProbe::isa() const {
    return isa_ == VectorIsa::Avx512 ? "avx512 zmm FMA, " + std::to_string(chains()) + " chains in 26 of 32 registers"
                                     : "avx2 ymm FMA, " + std::to_string(chains()) + " chains in 14 of 16 registers";
}

NominalPeak nominal_fma_peak(VectorIsa isa, int threads) {
    NominalPeak p;
    std::ifstream in("/proc/cpuinfo");
    std::string line, vendor;
    int family = -1, model = -1;
    auto value = [](const std::string &l) { return l.substr(l.find(':') + 1); };
    while (std::getline(in, line)) {
        if (line.rfind("vendor_id", 0) == 0 && vendor.empty())
            vendor = value(line);
        else if (line.rfind("cpu family", 0) == 0 && family < 0)
            family = std::stoi(value(line));
        else if (line.rfind("model\t", 0) == 0 && model < 0)
            model = std::stoi(value(line));
        else if (line.rfind("cpu MHz", 0) == 0 && p.ghz == 0)
            p.ghz = std::stod(value(line)) / 1000;
    }
    const bool amd = vendor.find("AMD") != std::string::npos, intel = vendor.find("Intel") != std::string::npos;
    // FP32 FLOPs per cycle per core: 2 FMA pipes x lanes x 2, where the core executes the vector
    // width natively. Zen 4 runs 512-bit FMAs as two 256-bit halves (its AVX-512 rate is its
    // AVX2 rate); Zen 5 and Intel server cores with AVX-512 have two 512-bit FMA pipes (some
    // Xeon Silver/Bronze parts have one: the probe then reads half of this).
    if (amd && family == 0x19) {
        p.flops_per_cycle = 32;
        p.core = model >= 0x60 || (model >= 0x10 && model < 0x20) || (model >= 0xa0 && model < 0xb0) ? "AMD Zen 4" : "AMD Zen 3";
    } else if (amd && family == 0x1a) {
        p.flops_per_cycle = isa == VectorIsa::Avx512 ? 64 : 32;
        p.core = "AMD Zen 5";
    } else if (intel && family == 6) {
        p.flops_per_cycle = isa == VectorIsa::Avx512 ? 64 : 32;
        p.core = "Intel family 6 model " + std::to_string(model);
    }
    p.gflops = p.flops_per_cycle * p.ghz * threads;
    return p;
}

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
        const tessel::SteadyClock::time_point t0 = tessel::SteadyClock::now();
#pragma omp simd
        for (long i = lo; i < hi; i++) a[i] = b[i] + s * c[i];
        elements_per_second += (hi - lo) / seconds_since(t0);
    }
    return n / elements_per_second;
}

// The cold-read floor of decode rows. It must read w at least as fast as the fastest kernel
// does, or a kernel shows above 100 % of it. Which pattern reads fastest differs between
// machines (docs/results/measurement_notes.md, read-floor), so the bench times each pattern in
// kReadPatterns, paired with the kernels, and the floor is the fastest.
__attribute__((target_clones("avx512f", "avx2", "default"))) float stream_read(const float *data, size_t count, int threads,
                                                                               ReadPattern pattern) {
    constexpr int kTasks = 8, kMaxStreams = 8;
    const int streams = std::clamp(pattern.streams, 1, kMaxStreams);
    const size_t step = (size_t)std::max(16, pattern.step / 16 * 16);
    float total = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : total) schedule(dynamic, 1)
    for (int task = 0; task < kTasks; task++) {
        const size_t lo = count * task / kTasks, hi = count * (task + 1) / kTasks;
        const size_t part = (hi - lo) / streams / step * step;
        // One vector of partial sums per stream: independent add chains, so memory is the limit.
        float acc[kMaxStreams][16] = {};
        for (size_t i = 0; i < part; i += step)
            for (int q = 0; q < streams; q++)
                for (size_t jb = 0; jb < step; jb += 16)
                    for (int j = 0; j < 16; j++) acc[q][j] += data[lo + q * part + i + jb + j];
        float sum = 0;
        for (size_t i = lo + streams * part; i < hi; i++) sum += data[i];
        for (const auto &a : acc)
            for (float x : a) sum += x;
        total += sum;
    }
    return total;
}

std::string ReadPattern::name() const {
    const int bytes = step * (int)sizeof(float);
    return std::to_string(streams) + "x" +
           (bytes % 1024 == 0 ? std::to_string(bytes / 1024) + "KiB" : std::to_string(bytes) + "B");
}

CacheFlusher::CacheFlusher(size_t bytes, Threads threads) : buffer_(bytes, 1), threads_(threads) {}

void CacheFlusher::flush(int threads) {
    char *p = buffer_.data();
    const long lines = (long)(buffer_.size() / 64);
    std::vector<long> sums(threads, 0);
    auto part = [&](int t) {
        long sum = 0;
        for (long i = lines * t / threads; i < lines * (t + 1) / threads; i++) {
            p[i * 64] += 1;
            sum += p[i * 64 + 32];
        }
        sums[t] = sum;
    };
    if (threads_ == Threads::OpenMP) {
#pragma omp parallel for schedule(static, 1) num_threads(threads)
        for (int t = 0; t < threads; t++) part(t);
    } else {
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; t++) pool.emplace_back(part, t);
        for (auto &th : pool) th.join();
    }
    for (long s : sums) sink_ = sink_ + s;
}

}  // namespace tessel::autosched
