// tessel_bench's roofline: the OpenBLAS description, the probe benchmarks and the read floor.
#include "bench/Roofline.h"

#include "baselines/GeluReference.h"
#include "bench/BenchData.h"
#include "bench/PairedTiming.h"
#include "support/Statistics.h"

#include <benchmark/benchmark.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <map>

extern "C" int openblas_get_parallel(void);
extern "C" void cblas_sgemm();

namespace tessel::bench {

using autosched::FmaPeakProbe;
using autosched::TriadProbe;

namespace {

/** Smallest sample, NaN when a filter left the benchmark out. */
double fastest(const std::vector<double> &v) { return v.empty() ? NAN : *std::min_element(v.begin(), v.end()); }

}  // namespace

std::string openblas_build(int parallel) { return parallel == 2 ? "OpenMP" : parallel == 1 ? "pthread" : "sequential"; }

Machine describe_openblas() {
    Machine m;
    m.openblas = openblas_description();
    m.openblas_parallel = openblas_get_parallel();
    Dl_info info{};
    if (dladdr((void *)&cblas_sgemm, &info) && info.dli_fname) m.openblas_library = info.dli_fname;
    return m;
}

void register_probes(const BenchOptions &o, FmaPeakProbe *fma, TriadProbe *triad) {
    const int fma_iterations = std::clamp((int)(o.seconds_per_repetition / 0.05), 3, 100);
    benchmark::RegisterBenchmark("probe/fma_peak",
                                 [=](benchmark::State &state) {
                                     for (auto _ : state) {
                                         const double t = fma->run();
                                         state.SetIterationTime(t);
                                         g_samples["probe/fma_peak"].push_back(t);
                                     }
                                     state.counters["GFLOP/s"] = fma->flops() / median(g_samples["probe/fma_peak"]) * 1e-9;
                                 })
        ->UseManualTime()
        ->Iterations(fma_iterations)
        ->Unit(benchmark::kMillisecond);
    const int triad_iterations = std::clamp((int)(o.seconds_per_repetition / 0.015), 3, 100);
    benchmark::RegisterBenchmark("probe/stream_triad",
                                 [=](benchmark::State &state) {
                                     for (auto _ : state) {
                                         const double t = triad->run();
                                         state.SetIterationTime(t);
                                         g_samples["probe/stream_triad"].push_back(t);
                                     }
                                     state.counters["GB/s"] = triad->bytes() / median(g_samples["probe/stream_triad"]) * 1e-9;
                                 })
        ->UseManualTime()
        ->Iterations(triad_iterations)
        ->Unit(benchmark::kMillisecond);
}

void summarize_probes(Machine &m, const FmaPeakProbe &fma, const TriadProbe &triad) {
    const auto &f = g_samples["probe/fma_peak"];
    const auto &t = g_samples["probe/stream_triad"];
    m.fma_isa = fma.isa();
    m.fma_flops = fma.flops();
    m.fma_peak_gflops = fma.flops() / median(f) * 1e-9;
    m.fma_peak_gflops_best = fma.flops() / fastest(f) * 1e-9;
    m.triad_gbps = triad.bytes() / median(t) * 1e-9;
    m.triad_gbps_best = triad.bytes() / fastest(t) * 1e-9;
}

double ReadFloor::share(const std::string &kernel) const {
    const std::vector<double> &t = g_samples[kernel];
    std::vector<double> r;
    for (size_t i = 0; i < std::min(t.size(), per_round.size()); i++) r.push_back(per_round[i] / t[i]);
    return r.empty() ? NAN : median(r);
}

ReadFloor read_floor(const BenchShape &s, double element_bytes) {
    ReadFloor f;
    std::map<std::string, int> fastest;
    for (size_t i = 0;; i++) {
        double best = HUGE_VAL;
        std::string which;
        for (const autosched::ReadPattern &p : autosched::kReadPatterns) {
            const std::vector<double> &t = g_samples[floor_name(s, p, element_bytes)];
            if (i < t.size() && t[i] < best) best = t[i], which = p.name();
        }
        if (which.empty()) break;
        f.per_round.push_back(best);
        fastest[which]++;
    }
    f.seconds = f.per_round.empty() ? NAN : median(f.per_round);
    int most = 0;
    for (const auto &[name, n] : fastest)
        if (n > most) most = n, f.pattern = name;
    return f;
}

}  // namespace tessel::bench
