// tessel_bench: Tessel's CPU library schedule against OpenBLAS + a separate bias/GELU pass,
// on the shape suite in bench/shapes.txt, with the machine's FMA peak and STREAM bandwidth
// measured in the same run. Tessel's rows time the running example's graph compiled through
// the one path (driver/GeluLayer.h -> CompiledKernel): the kernel `tessel compile` ships.
//
// This file registers the benchmarks and runs them. Map: parse_options (BenchOptions.h; the
// rest goes to Google Benchmark, with 3 randomly interleaved repetitions by default) ->
// register_probes (Roofline.h: FMA peak, STREAM triad, as benchmarks interleaved with the
// kernels) -> per shape: buffers (BenchData.h), cross-check against OpenBLAS, register_paired
// (PairedTiming.h: Tessel, OpenBLAS and, for compute shapes, the FMA probe, or for decode
// shapes the read floor, one round per iteration on the interleaved harness; decode calls each
// after a cache flush), register_timed (tanh strict and erf on one shape) -> compile-time
// benchmarks -> RunSpecifiedBenchmarks -> print_summary (Report.h: medians of every timed
// iteration of this run).
#include "baselines/GeluReference.h"
#include "bench/BenchData.h"
#include "bench/BenchOptions.h"
#include "bench/PairedTiming.h"
#include "bench/Report.h"
#include "bench/Roofline.h"
#include "codegen/Compile.h"
#include "dsl/ir/Numerics.h"
#include "schedules/Library.h"
#include "schedules/ScheduleJson.h"

#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

extern "C" void openblas_set_num_threads(int);

namespace tessel::bench {
using autosched::CacheFlusher;
using autosched::FmaPeakProbe;
using autosched::nominal_fma_peak;
using autosched::stream_read;
using autosched::TriadProbe;
using autosched::VectorIsa;
namespace {

/** Keeps the floor probe's sum alive. */
volatile float g_sink = 0;

/** w [K][N] as dsl::quantized_int8 stores it, dequantized: per column, s = max|w| / 127 and
 * w' = i8(w / s) * s, each step rounded as the graph's f32 and i8 ops round. */
void dequantized_int8(const float *w, float *out, int K, int N) {
    for (int n = 0; n < N; n++) {
        float m = 0;
        for (int k = 0; k < K; k++) m = std::max(m, std::fabs(w[(size_t)k * N + n]));
        const float scale = m / 127.0f;
        for (int k = 0; k < K; k++)
            out[(size_t)k * N + n] = (float)dsl::round_to(dsl::DType::I8, w[(size_t)k * N + n] / scale) * scale;
    }
}

int run(int argc, char **argv) {
    const BenchOptions o = parse_options(argc, argv);
    for (int i = 1; i < argc; i++)
        if (std::string(argv[i]) == "--benchmark_format=json") g_text = stderr;
    // Threads for every party: Tessel's parallel loops (OpenMP, HL_NUM_THREADS), OpenBLAS.
    setenv("HL_NUM_THREADS", std::to_string(o.threads).c_str(), 1);
    omp_set_num_threads(o.threads);
    openblas_set_num_threads(o.threads);
    // Defaults for a noisy shared machine: 3 repetitions, randomly interleaved, so every
    // implementation and probe samples the same stretches of time.
    std::vector<char *> args(argv, argv + argc);
    std::string reps = "--benchmark_repetitions=3", interleave = "--benchmark_enable_random_interleaving=true";
    auto given = [&](const char *flag) {
        for (int i = 1; i < argc; i++)
            if (std::string(argv[i]).rfind(flag, 0) == 0) return true;
        return false;
    };
    if (!given("--benchmark_repetitions")) args.push_back(reps.data());
    if (!given("--benchmark_enable_random_interleaving")) args.push_back(interleave.data());
    argc = (int)args.size();
    argv = args.data();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

    const auto suite = load_suite(o.shapes);
    const Halide::Target target = parse_target(o.target);
    Machine machine = describe_openblas();
    std::fprintf(g_text, "tessel_bench: %d thread(s), target %s\nOpenBLAS %s [%s build, %s]\n", o.threads,
                 target.to_string().c_str(), machine.openblas.c_str(), openblas_build(machine.openblas_parallel).c_str(),
                 machine.openblas_library.c_str());
    if (machine.openblas_parallel != 2)
        std::fprintf(g_text,
                     "warning: not OpenBLAS's OpenMP build; its thread pool fights the OpenMP epilogue (use bench/run.sh)\n");
    std::fflush(g_text);
    const VectorIsa isa = target.has_feature(Halide::Target::AVX512) ? VectorIsa::Avx512 : VectorIsa::Avx2;
    FmaPeakProbe fma(o.threads, 0.05, isa);
    machine.nominal = nominal_fma_peak(isa, o.threads);
    TriadProbe triad(o.threads, size_t(128) << 20);
    register_probes(o, &fma, &triad);

    const sched::ScheduleSpec schedule = sched::resolve_schedule(o.schedule, target);
    if (!o.save_schedule.empty()) {
        sched::save_schedule(schedule, o.save_schedule);
        std::fprintf(g_text, "wrote %s to %s\n", o.schedule.c_str(), o.save_schedule.c_str());
        return 0;
    }
    Kernels k;
    using dsl::NumericMode;
    k.tanh_fast = std::make_unique<GeluLayer>(GeluForm::Tanh, NumericMode::Fast, schedule, target);
    k.tanh_strict = std::make_unique<GeluLayer>(GeluForm::Tanh, NumericMode::Strict, schedule, target);
    k.erf_fast = std::make_unique<GeluLayer>(GeluForm::Erf, NumericMode::Fast, schedule, target);
    k.erf_strict = std::make_unique<GeluLayer>(GeluForm::Erf, NumericMode::Strict, schedule, target);
    if (!o.baseline.empty())
        k.baseline =
            std::make_unique<GeluLayer>(GeluForm::Tanh, NumericMode::Fast, sched::resolve_schedule(o.baseline, target), target);
    if (!o.variant_shapes.empty())
        for (const std::string &label : group_variant_labels())
            if (o.variants.empty() || listed(o.variants, label))
                k.variants.push_back(make_group_variant(label, sched::resolve_group_schedule(o.schedule, target), target));

    // JIT compile time of every CPU library schedule, as a benchmark so it lands in the JSON.
    std::map<std::string, double> compile_seconds;
    for (const auto &entry : sched::schedule_library()) {
        if (entry.group != dsl::GroupKind::MatmulEpilogue) continue;
        if (entry.device != sched::Device::Cpu) continue;
        const std::string name = "compile/" + entry.name;
        benchmark::RegisterBenchmark(name.c_str(),
                                     [=, &compile_seconds](benchmark::State &state) {
                                         for (auto _ : state) {
                                             const GeluLayer layer(GeluForm::Tanh, dsl::NumericMode::Fast, entry.build(target),
                                                                   target);
                                             state.SetIterationTime(layer.kernel().compile_seconds());
                                             compile_seconds[entry.name] = layer.kernel().compile_seconds();
                                             state.counters["variants"] = (double)layer.kernel().variants().size();
                                         }
                                     })
            ->UseManualTime()
            ->Iterations(1)
            ->Unit(benchmark::kMillisecond);
    }

    CacheFlusher flusher;
    std::vector<std::unique_ptr<ShapeData>> data;
    std::vector<ErrorRow> errors;
    std::string error_shape;
    for (const BenchShape &s : suite) {
        data.push_back(std::make_unique<ShapeData>(s));
        ShapeData *d = data.back().get();
        // Cross-check before timing: Tessel and OpenBLAS must agree on this shape.
        Buffer<float> y_blas(s.N, s.M);
        k.tanh_fast->run(d->x, d->w, d->bias, d->y);
        gelu_mlp_openblas(d->x.data(), d->w.data(), d->bias.data(), y_blas.data(), s.M, s.K, s.N, GeluForm::Tanh);
        const ErrorStats e = compare(d->y.data(), y_blas.data(), (size_t)s.M * s.N);
        if (!(e.max_rel <= 1e-3)) {
            std::fprintf(stderr, "error: %s: Tessel and OpenBLAS disagree (max rel %.3g)\n", s.name.c_str(), e.max_rel);
            return 1;
        }
        if (s.name == o.error_shape) errors = measure_errors(*d, k), error_shape = s.name + " (" + s.dims() + ")";

        GeluLayer *fast = k.tanh_fast.get();
        Timed timed;
        timed.push_back({tessel_name(s, o.schedule, "tanh_fast"), [=] { fast->run(d->x, d->w, d->bias, d->y); }});
        if (k.baseline) {
            GeluLayer *base = k.baseline.get();
            base->run(d->x, d->w, d->bias, y_blas);
            const ErrorStats eb = compare(d->y.data(), y_blas.data(), (size_t)s.M * s.N);
            if (!(eb.max_rel <= 1e-3)) {
                std::fprintf(stderr, "error: %s: baseline and schedule disagree (max rel %.3g)\n", s.name.c_str(), eb.max_rel);
                return 1;
            }
            timed.push_back({tessel_name(s, "baseline", "tanh_fast"), [=] { base->run(d->x, d->w, d->bias, d->y); }});
        }
        if (listed(o.variant_shapes, s.name)) {
            // The same work as a two-output group and as x @ w.T, checked against the layer's y.
            d->t = Buffer<float>(s.N, s.M);
            d->wt = Buffer<float>(s.K, s.N);
            for (int n = 0; n < s.N; n++)
                for (int kk = 0; kk < s.K; kk++) d->wt(kk, n) = d->w(n, kk);
            for (const GroupVariant &v : k.variants) {
                Buffer<float> yv(s.N, s.M);
                std::map<std::string, Buffer<float> *> args{{"x", &d->x},       {"w", &d->w}, {"wt", &d->wt},
                                                            {"bias", &d->bias}, {"t", &d->t}, {"y", &yv}};
                const GroupVariant::Prepared *prep = &(d->prepared[v.label] = v.prepare_weights(args));
                v.run(args, *prep);
                ErrorStats ev = compare(yv.data(), d->y.data(), (size_t)s.M * s.N);
                if (v.label.rfind("w_bf16", 0) == 0 || v.label == "w_int8" || int4_group(v.label)) {
                    // Narrow weights: checked against OpenBLAS on w as stored (rounded to bf16, or
                    // quantized per column or group and dequantized), the same math.
                    Buffer<float> wr(s.N, s.K), yr(s.N, s.M);
                    if (v.label == "w_int8") {
                        dequantized_int8(d->w.data(), wr.data(), s.K, s.N);
                    } else if (const int group = int4_group(v.label)) {
                        std::vector<int8_t> packed((size_t)(s.K + 1) / 2 * s.N);
                        std::vector<float> scales((size_t)(s.K + group - 1) / group * s.N);
                        quantize_int4(d->w.data(), s.K, s.N, group, packed.data(), scales.data(), wr.data());
                    } else {
                        for (size_t i = 0; i < (size_t)s.K * s.N; i++)
                            wr.data()[i] = dsl::bf16_bits_to_float(dsl::float_to_bf16_bits(d->w.data()[i]));
                    }
                    gelu_mlp_openblas(d->x.data(), wr.data(), d->bias.data(), yr.data(), s.M, s.K, s.N, GeluForm::Tanh);
                    ev = compare(yv.data(), yr.data(), (size_t)s.M * s.N);
                }
                if (!(ev.max_rel <= 1e-3)) {
                    std::fprintf(stderr, "error: %s: %s and the layer disagree (max rel %.3g)\n", s.name.c_str(), v.label.c_str(),
                                 ev.max_rel);
                    return 1;
                }
                const GroupVariant *vp = &v;
                timed.push_back({tessel_name(s, o.schedule, v.label), [=] {
                                     std::map<std::string, Buffer<float> *> a{{"x", &d->x},       {"w", &d->w}, {"wt", &d->wt},
                                                                              {"bias", &d->bias}, {"t", &d->t}, {"y", &d->y}};
                                     vp->run(a, *prep);
                                 }});
            }
        }
        timed.push_back(
            {blas_name(s, "tanh"),
             [=] { gelu_mlp_openblas(d->x.data(), d->w.data(), d->bias.data(), d->y.data(), s.M, s.K, s.N, GeluForm::Tanh); }});
        if (s.kind == ShapeKind::Decode) {
            const int threads = o.threads;
            for (const autosched::ReadPattern &p : autosched::kReadPatterns)
                timed.push_back(
                    {floor_name(s, p), [=] { g_sink = g_sink + stream_read(d->w.data(), (size_t)s.K * s.N, threads, p); }});
            // The floors of the narrow weights' own bytes, where those variants run.
            std::set<double> narrow;
            for (const GroupVariant &v : k.variants)
                if (listed(o.variant_shapes, s.name) && weight_element_bytes(v.label) < 4)
                    narrow.insert(weight_element_bytes(v.label));
            for (const double bytes : narrow)
                for (const autosched::ReadPattern &p : autosched::kReadPatterns)
                    timed.push_back({floor_name(s, p, bytes), [=] {
                                         g_sink = g_sink +
                                                  stream_read(d->w.data(), (size_t)(s.K * (double)s.N * bytes / 4), threads, p);
                                     }});
        } else {
            // The FMA probe in the same rounds: "% of peak" is a ratio of rates measured
            // milliseconds apart, so clock drift between benchmarks does not enter it.
            const FmaPeakProbe *probe = &fma;
            timed.push_back({probe_name(s), [=] { g_sink = g_sink + (float)probe->run(); }});
        }
        if (s.name == o.mode_shape) {
            // The numeric modes and GELU forms in the same rounds: strict mode's cost is a paired ratio.
            GeluLayer *tanh_strict = k.tanh_strict.get(), *erf_fast = k.erf_fast.get(), *erf_strict = k.erf_strict.get();
            timed.push_back({tessel_name(s, o.schedule, "tanh_strict"), [=] { tanh_strict->run(d->x, d->w, d->bias, d->y); }});
            timed.push_back({tessel_name(s, o.schedule, "erf_fast"), [=] { erf_fast->run(d->x, d->w, d->bias, d->y); }});
            timed.push_back({tessel_name(s, o.schedule, "erf_strict"), [=] { erf_strict->run(d->x, d->w, d->bias, d->y); }});
            timed.push_back({blas_name(s, "erf"), [=] {
                                 gelu_mlp_openblas(d->x.data(), d->w.data(), d->bias.data(), d->y.data(), s.M, s.K, s.N,
                                                   GeluForm::Erf);
                             }});
        }
        register_paired(d, o, &flusher, timed);
    }

    benchmark::AddCustomContext(
        "openblas", machine.openblas + " [" + openblas_build(machine.openblas_parallel) + " build] " + machine.openblas_library);
    benchmark::AddCustomContext("threads", std::to_string(o.threads));
    benchmark::AddCustomContext("schedule", o.schedule);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    summarize_probes(machine, fma, triad);
    print_summary(o, machine, data, compile_seconds, errors, error_shape);
    return 0;
}

}  // namespace
}  // namespace tessel::bench

int main(int argc, char **argv) {
    try {
        return tessel::bench::run(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "tessel_bench: %s\n", e.what());
        return 1;
    }
}
