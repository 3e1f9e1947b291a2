// tessel_bench's rows on the interleaved harness: a Google Benchmark iteration is one round.
#include "bench/PairedTiming.h"

#include "support/Interleaved.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>

namespace tessel::bench {

namespace {

/** Runs `impls` on the harness, one round per iteration of `state` (its manual time the round's
 * timed seconds), then appends each implementation's samples to g_samples. */
void run_rounds(benchmark::State &state, const Timed &impls, bool cold, autosched::CacheFlusher *flusher, int threads) {
    std::vector<Contender> contenders;
    for (const auto &impl : impls) contenders.emplace_back(impl.first, impl.second);
    InterleavedOptions io;
    io.warmup_rounds = 0;  // Google Benchmark's repetitions warm up
    if (cold) io.before_call = [flusher, threads](size_t) { flusher->flush(threads); };
    Interleaved harness(std::move(contenders), io);
    for (auto _ : state) state.SetIterationTime(harness.run_round());
    const InterleavedResult &r = harness.result();
    for (size_t j = 0; j < impls.size(); j++) {
        std::vector<double> &all = g_samples[impls[j].first];
        all.insert(all.end(), r.samples[j].begin(), r.samples[j].end());
    }
}

}  // namespace

int iterations_for(const BenchShape &s, const BenchOptions &o) {
    // A rough speed guess only sizes the run; every figure reported is measured.
    const double guess = s.kind == ShapeKind::Decode ? s.min_bytes() / 40e9 : s.flops() / 300e9;
    return std::clamp((int)(o.seconds_per_repetition / guess), 3, 400);
}

void register_timed(const std::string &name, ShapeData *d, const BenchOptions &o, autosched::CacheFlusher *flusher,
                    std::function<void()> fn) {
    const bool cold = d->shape.kind == ShapeKind::Decode;
    const int threads = o.threads;
    const Timed impls{{name, std::move(fn)}};
    benchmark::RegisterBenchmark(name.c_str(),
                                 [=](benchmark::State &state) {
                                     run_rounds(state, impls, cold, flusher, threads);
                                     const double t = median(g_samples[name]);
                                     state.counters["median_ms"] = t * 1e3;
                                     state.counters["GFLOP/s"] = d->shape.flops() / t * 1e-9;
                                     if (cold) state.counters["GB/s"] = d->shape.min_bytes() / t * 1e-9;
                                 })
        ->UseManualTime()
        ->Iterations(iterations_for(d->shape, o))
        ->Unit(benchmark::kMillisecond);
}

void register_paired(ShapeData *d, const BenchOptions &o, autosched::CacheFlusher *flusher, const Timed &impls) {
    const std::string name = d->shape.name + "/paired";
    const int threads = o.threads;
    const bool cold = d->shape.kind == ShapeKind::Decode;
    benchmark::RegisterBenchmark(name.c_str(),
                                 [=](benchmark::State &state) {
                                     run_rounds(state, impls, cold, flusher, threads);
                                     for (const auto &impl : impls)
                                         state.counters[impl.first + " ms"] = median(g_samples[impl.first]) * 1e3;
                                 })
        ->UseManualTime()
        ->Iterations(iterations_for(d->shape, o))
        ->Unit(benchmark::kMillisecond);
}

double paired_ratio(const std::string &a, const std::string &b, double scale) {
    const std::vector<double> &ta = g_samples[a], &tb = g_samples[b];
    std::vector<double> r;
    for (size_t i = 0; i < std::min(ta.size(), tb.size()); i++) r.push_back(scale * tb[i] / ta[i]);
    return r.empty() ? NAN : median(r);
}

}  // namespace tessel::bench
