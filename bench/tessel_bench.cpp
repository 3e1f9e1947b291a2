// tessel_bench: Tessel's CPU library schedule against OpenBLAS + a separate bias/GELU pass,
// on the shape suite in bench/shapes.txt, with the machine's FMA peak and STREAM bandwidth
// measured in the same run. Tessel's rows time the running example's graph compiled through
// the one path (driver/GeluLayer.h -> CompiledKernel): the kernel `tessel compile` ships.
//
// Map: parse_options (our flags; the rest go to Google Benchmark, with 3 randomly
// interleaved repetitions by default) -> register_probes (FMA peak, STREAM triad, as
// benchmarks interleaved with the kernels) -> per shape: buffers, cross-check against
// OpenBLAS, register_paired (Tessel, OpenBLAS and, for compute shapes, the FMA probe, or for
// decode shapes the read floor, alternated call by call; decode calls each after a cache
// flush), register_timed (tanh strict and erf on one shape) ->
// compile-time benchmarks -> RunSpecifiedBenchmarks -> print_summary (medians of every
// timed iteration of this run).
#include "baselines/GeluReference.h"
#include "bench/GroupVariants.h"
#include "dsl/ir/Numerics.h"
#include "autoscheduler/MachineProbes.h"
#include "bench/Suite.h"
#include "driver/GeluLayer.h"
#include "schedules/Library.h"
#include "support/Random.h"
#include "support/Statistics.h"
#include "schedules/ScheduleJson.h"

#include <benchmark/benchmark.h>
#include <omp.h>

#include <functional>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_parallel(void);
extern "C" void cblas_sgemm();

namespace tessel::bench {
// The machine probes are the autoscheduler's (it stores their numbers per machine).
using autosched::CacheFlusher;
using autosched::FmaPeakProbe;
using autosched::host_vector_isa;
using autosched::nominal_fma_peak;
using autosched::NominalPeak;
using autosched::stream_read;
using autosched::TriadProbe;
using autosched::VectorIsa;
namespace {

using Halide::Runtime::Buffer;

struct Options {
    int threads = 2;
    std::string shapes = TESSEL_BENCH_SHAPES;
    std::string schedule = "cpu_blocked";
    double seconds_per_repetition = 0.3;  ///< timed work per benchmark repetition
    std::string mode_shape = "mlp_up";    ///< where tanh strict/fast and erf are compared
    /** Shapes where the same work also runs as a two-output group and as x @ w.T (GroupVariants.h). */
    std::string variant_shapes = "mlp_up,decode_1";
    std::string error_shape = "odd_bert"; ///< where errors vs float64 are measured
    std::string baseline;                 ///< a second schedule timed beside `schedule` ("" = none)
    std::string save_schedule;            ///< write `schedule` as JSON here and exit
    std::string target = "host";          ///< what Tessel's kernels are compiled for (and the FMA probe's width)
};

void print_usage() {
    std::cout << "tessel_bench [--threads N] [--shapes FILE] [--schedule NAME] [--seconds S]\n"
                 "             [--mode-shape NAME] [--error-shape NAME] [--baseline NAME|FILE.json]\n"
                 "             [--save-schedule FILE.json] [--target T] [Google Benchmark flags]\n"
                 "  --threads N      threads for Tessel, OpenBLAS and the probes (default 2)\n"
                 "  --shapes FILE    shape suite (default bench/shapes.txt)\n"
                 "  --schedule NAME  Tessel CPU library schedule (or FILE.json) to time (default cpu_blocked)\n"
                 "  --baseline NAME  a second schedule (library name or FILE.json) timed in the same run,\n"
                 "                   e.g. the previous version of --schedule saved with --save-schedule\n"
                 "  --save-schedule FILE.json  write --schedule for this machine's target as JSON and exit\n"
                 "  --seconds S      timed seconds per benchmark repetition (default 0.3)\n"
                 "  --target T       Halide target of Tessel's kernels (default host); e.g.\n"
                 "                   x86-64-linux-avx-avx2-f16c-fma-sse41 for AVX2 on an AVX-512 machine.\n"
                 "                   The FMA probe runs the same vector width\n"
                 "  --variant-shapes A,B  shapes also timed as a two-output group and as x @ w.T\n"
                 "                   (default mlp_up,decode_1; \"\" for none)\n"
                 "JSON: --benchmark_format=json or --benchmark_out=FILE --benchmark_out_format=json\n";
}

/** Takes our flags out of argv, leaving Google Benchmark's. */
Options parse_options(int &argc, char **argv) {
    Options o;
    int out = 1;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto value = [&](const std::string &flag) -> std::string {
            if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
            if (a == flag && i + 1 < argc) return argv[++i];
            throw std::invalid_argument(flag + " needs a value");
        };
        auto is = [&](const char *flag) { return a == flag || a.rfind(std::string(flag) + "=", 0) == 0; };
        if (is("--threads")) o.threads = std::stoi(value("--threads"));
        else if (is("--shapes")) o.shapes = value("--shapes");
        else if (is("--schedule")) o.schedule = value("--schedule");
        else if (is("--seconds")) o.seconds_per_repetition = std::stod(value("--seconds"));
        else if (is("--mode-shape")) o.mode_shape = value("--mode-shape");
        else if (is("--variant-shapes")) o.variant_shapes = value("--variant-shapes");
        else if (is("--error-shape")) o.error_shape = value("--error-shape");
        else if (is("--baseline")) o.baseline = value("--baseline");
        else if (is("--save-schedule")) o.save_schedule = value("--save-schedule");
        else if (is("--target")) o.target = value("--target");
        else if (a == "--help" || a == "-h") print_usage(), argv[out++] = argv[i];
        else argv[out++] = argv[i];
    }
    argc = out;
    if (o.threads < 1) throw std::invalid_argument("--threads must be >= 1");
    return o;
}

/** Where the text report goes: stdout, or stderr when stdout carries Google Benchmark's JSON. */
FILE *g_text = stdout;
/** Keeps the floor probe's sum alive. */
volatile float g_sink = 0;

/** Every timed iteration of every benchmark, by name, across repetitions. */
std::map<std::string, std::vector<double>> g_samples;

/** Smallest sample, NaN when a filter left the benchmark out. */
double fastest(const std::vector<double> &v) { return v.empty() ? NAN : *std::min_element(v.begin(), v.end()); }

/** The machine's limits, from the probe benchmarks run interleaved with the kernels. */
struct Machine {
    double fma_peak_gflops = 0, fma_peak_gflops_best = 0;
    double fma_flops = 0;  ///< FLOPs of one probe run
    std::string fma_isa;
    NominalPeak nominal;
    double triad_gbps = 0, triad_gbps_best = 0;
    std::string openblas;
    std::string openblas_library;
    int openblas_parallel = -1;
};

std::string openblas_build(int parallel) {
    return parallel == 2 ? "OpenMP" : parallel == 1 ? "pthread" : "sequential";
}

Machine describe_openblas() {
    Machine m;
    m.openblas = openblas_description();
    m.openblas_parallel = openblas_get_parallel();
    Dl_info info{};
    if (dladdr((void *)&cblas_sgemm, &info) && info.dli_fname) m.openblas_library = info.dli_fname;
    return m;
}

/** Registers the FMA-peak and triad probes as benchmarks, so they sample the machine at
 * the same times (interleaved repetitions) as the kernels they are compared with. */
void register_probes(const Options &o, FmaPeakProbe *fma, TriadProbe *triad) {
    const int fma_iterations = std::clamp((int)(o.seconds_per_repetition / 0.05), 3, 100);
    benchmark::RegisterBenchmark("probe/fma_peak", [=](benchmark::State &state) {
        for (auto _ : state) {
            const double t = fma->run();
            state.SetIterationTime(t);
            g_samples["probe/fma_peak"].push_back(t);
        }
        state.counters["GFLOP/s"] = fma->flops() / median(g_samples["probe/fma_peak"]) * 1e-9;
    })->UseManualTime()->Iterations(fma_iterations)->Unit(benchmark::kMillisecond);
    const int triad_iterations = std::clamp((int)(o.seconds_per_repetition / 0.015), 3, 100);
    benchmark::RegisterBenchmark("probe/stream_triad", [=](benchmark::State &state) {
        for (auto _ : state) {
            const double t = triad->run();
            state.SetIterationTime(t);
            g_samples["probe/stream_triad"].push_back(t);
        }
        state.counters["GB/s"] = triad->bytes() / median(g_samples["probe/stream_triad"]) * 1e-9;
    })->UseManualTime()->Iterations(triad_iterations)->Unit(benchmark::kMillisecond);
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

/** Inputs and outputs of one shape, allocated once and shared by every implementation. */
struct ShapeData {
    BenchShape shape;
    Buffer<float> x, w, bias, y;
    Buffer<float> t, wt;  ///< group variants only: the exported matmul result, w stored [N, K]
    std::map<std::string, GroupVariant::Prepared> prepared;  ///< by variant label
    explicit ShapeData(const BenchShape &s)
        : shape(s), x(s.K, s.M), w(s.N, s.K), bias(s.N), y(s.N, s.M) {
        fill_uniform(x, 1), fill_uniform(w, 2), fill_uniform(bias, 3);
        y.fill(0.0f);
    }
};

int iterations_for(const BenchShape &s, const Options &o) {
    // A rough speed guess only sizes the run; every figure reported is measured.
    const double guess = s.kind == ShapeKind::Decode ? s.min_bytes() / 40e9 : s.flops() / 300e9;
    return std::clamp((int)(o.seconds_per_repetition / guess), 3, 400);
}

using Timed = std::vector<std::pair<std::string, std::function<void()>>>;  ///< name, call

/** Registers one timed implementation of a shape. Decode shapes flush every core's
 * caches before each iteration (outside the timed region), so w comes from DRAM. */
template <typename Fn>
void register_timed(const std::string &name, ShapeData *d, const Options &o, CacheFlusher *flusher, Fn fn) {
    const bool cold = d->shape.kind == ShapeKind::Decode;
    const int threads = o.threads;
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State &state) {
        for (auto _ : state) {
            if (cold) flusher->flush(threads);
            const auto t0 = std::chrono::steady_clock::now();
            fn();
            const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            state.SetIterationTime(t);
            g_samples[name].push_back(t);
        }
        const double t = median(g_samples[name]);
        state.counters["median_ms"] = t * 1e3;
        state.counters["GFLOP/s"] = d->shape.flops() / t * 1e-9;
        if (cold) state.counters["GB/s"] = d->shape.min_bytes() / t * 1e-9;
    })->UseManualTime()->Iterations(iterations_for(d->shape, o))->Unit(benchmark::kMillisecond);
}

/** ONE benchmark per shape whose every iteration times each implementation once, in an order
 * drawn afresh every iteration (round_order: rotating one order would have each implementation
 * always follow the same one and find its inputs in the caches); decode shapes flush the
 * caches before each call, compute shapes time the FMA probe among the implementations.
 * Two-thread bandwidth and clock drift by tens of percent within seconds; samples taken
 * milliseconds apart compare the implementations under the same conditions, which blocks of
 * consecutive iterations of separate benchmarks do not. Each implementation's samples are kept under its own name, as register_timed keeps
 * them, sample i of every implementation from iteration i (paired_ratio reads them so). */
void register_paired(ShapeData *d, const Options &o, CacheFlusher *flusher, const Timed &impls) {
    const std::string name = d->shape.name + "/paired";
    const int threads = o.threads;
    const bool cold = d->shape.kind == ShapeKind::Decode;
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State &state) {
        uint64_t round = 0;
        for (auto _ : state) {
            double iteration = 0;
            for (const size_t j : round_order(impls.size(), round)) {
                const auto &[impl, fn] = impls[j];
                if (cold) flusher->flush(threads);
                const auto t0 = std::chrono::steady_clock::now();
                fn();
                const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                g_samples[impl].push_back(t);
                iteration += t;
            }
            state.SetIterationTime(iteration);
            round++;
        }
        for (const auto &[impl, fn] : impls) state.counters[impl + " ms"] = median(g_samples[impl]) * 1e3;
    })->UseManualTime()->Iterations(iterations_for(d->shape, o))->Unit(benchmark::kMillisecond);
}

/** Median over paired iterations of (rate of `a`) / (rate of `b`) for the same work per call,
 * i.e. b's time over a's in the same iteration; `scale` converts (e.g. the probe's FLOPs over
 * the kernel's). NaN when either was not timed. */
double paired_ratio(const std::string &a, const std::string &b, double scale = 1.0) {
    const std::vector<double> &ta = g_samples[a], &tb = g_samples[b];
    std::vector<double> r;
    for (size_t i = 0; i < std::min(ta.size(), tb.size()); i++) r.push_back(scale * tb[i] / ta[i]);
    return r.empty() ? NAN : median(r);
}

bool listed(const std::string &list, const std::string &name) {
    return ("," + list + ",").find("," + name + ",") != std::string::npos;
}

struct Kernels {
    // One JIT kernel per GELU epilogue variant, all from the same library schedule.
    std::unique_ptr<GeluLayer> tanh_fast, tanh_strict, erf;
    std::unique_ptr<GeluLayer> baseline;  ///< --baseline, tanh fast (null when not asked for)
    std::vector<GroupVariant> variants;   ///< the same work as other group shapes, same schedule
};

std::string tessel_name(const BenchShape &s, const std::string &schedule, const std::string &epilogue) {
    return s.name + "/tessel:" + schedule + "/" + epilogue;
}
std::string blas_name(const BenchShape &s, const std::string &epilogue) { return s.name + "/openblas/" + epilogue; }
std::string probe_name(const BenchShape &s) { return s.name + "/probe/fma_peak"; }
std::string floor_name(const BenchShape &s, const autosched::ReadPattern &p) { return s.name + "/floor/read_w_" + p.name(); }

/** The read floor of a decode shape, paired: in each round the fastest of the read patterns
 * (the minimum of four samples, so the floor leans fast, the safe side for a bound); `seconds`
 * is the median over rounds, and `share(kernel)` the median over rounds of floor / kernel, the
 * kernel's share of the floor's bandwidth in the same round. */
struct ReadFloor {
    std::vector<double> per_round;
    double seconds = 0;
    std::string pattern;  ///< the pattern fastest in most rounds
    double share(const std::string &kernel) const {
        const std::vector<double> &t = g_samples[kernel];
        std::vector<double> r;
        for (size_t i = 0; i < std::min(t.size(), per_round.size()); i++) r.push_back(per_round[i] / t[i]);
        return r.empty() ? NAN : median(r);
    }
};
ReadFloor read_floor(const BenchShape &s) {
    ReadFloor f;
    std::map<std::string, int> fastest;
    for (size_t i = 0;; i++) {
        double best = HUGE_VAL;
        std::string which;
        for (const autosched::ReadPattern &p : autosched::kReadPatterns) {
            const std::vector<double> &t = g_samples[floor_name(s, p)];
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

struct ErrorRow {
    std::string what;
    ErrorStats err;
};

/** Errors vs the float64 reference for each epilogue (and OpenBLAS's), on one shape. */
std::vector<ErrorRow> measure_errors(ShapeData &d, const Kernels &k) {
    const BenchShape &s = d.shape;
    std::vector<ErrorRow> rows;
    const size_t count = (size_t)s.M * s.N;
    for (GeluForm form : {GeluForm::Tanh, GeluForm::Erf}) {
        const auto ref = gelu_mlp_reference(d.x.data(), d.w.data(), d.bias.data(), s.M, s.K, s.N, form);
        if (form == GeluForm::Tanh) {
            k.tanh_strict->run(d.x, d.w, d.bias, d.y);
            rows.push_back({"tessel tanh strict", compare(d.y.data(), ref.data(), count)});
            k.tanh_fast->run(d.x, d.w, d.bias, d.y);
            rows.push_back({"tessel tanh fast (v*sigmoid(2u))", compare(d.y.data(), ref.data(), count)});
        } else {
            k.erf->run(d.x, d.w, d.bias, d.y);
            rows.push_back({"tessel erf", compare(d.y.data(), ref.data(), count)});
        }
        gelu_mlp_openblas(d.x.data(), d.w.data(), d.bias.data(), d.y.data(), s.M, s.K, s.N, form);
        rows.push_back({"openblas+epilogue " + to_string(form) + " (libmvec)", compare(d.y.data(), ref.data(), count)});
    }
    // The epilogue alone: K = 1, x = 1, bias = 0 makes the matmul exact, so y = gelu(v) for
    // v = w spread over [-8, 8], and the error is the GELU formula's alone.
    const int n = 1 << 16;
    Buffer<float> x1(1, 1), wv(n, 1), b0(n), y1(n, 1);
    x1.fill(1.0f), b0.fill(0.0f);
    for (int i = 0; i < n; i++) wv(i, 0) = -8.0f + 16.0f * i / (n - 1);
    struct Epilogue {
        const char *what;
        GeluLayer *kernel;
        GeluForm form;
    };
    for (const Epilogue &e : {Epilogue{"epilogue only: tessel tanh strict", k.tanh_strict.get(), GeluForm::Tanh},
                              Epilogue{"epilogue only: tessel tanh fast", k.tanh_fast.get(), GeluForm::Tanh},
                              Epilogue{"epilogue only: tessel erf", k.erf.get(), GeluForm::Erf}}) {
        e.kernel->run(x1, wv, b0, y1);
        std::vector<double> want(n);
        for (int i = 0; i < n; i++) want[i] = gelu_reference(wv(i, 0), e.form);
        rows.push_back({e.what, compare(y1.data(), want.data(), n)});
    }
    for (GeluForm form : {GeluForm::Tanh, GeluForm::Erf}) {
        gelu_mlp_openblas(x1.data(), wv.data(), b0.data(), y1.data(), 1, 1, n, form);
        std::vector<double> want(n);
        for (int i = 0; i < n; i++) want[i] = gelu_reference(wv(i, 0), form);
        rows.push_back({"epilogue only: openblas pass " + to_string(form), compare(y1.data(), want.data(), n)});
    }
    return rows;
}

void print_summary(const Options &o, const Machine &m, const std::vector<std::unique_ptr<ShapeData>> &data,
                   const std::map<std::string, double> &compile_seconds, const std::vector<ErrorRow> &errors,
                   const std::string &error_shape) {
    std::fprintf(g_text, "\n== Tessel vs OpenBLAS+epilogue, %d thread(s), medians of all timed iterations ==\n", o.threads);
    std::fprintf(g_text, "FMA peak (%s loop): %.1f GFLOP/s median, %.1f best | STREAM triad: %.1f GB/s median, %.1f best\n",
                 m.fma_isa.c_str(), m.fma_peak_gflops, m.fma_peak_gflops_best, m.triad_gbps, m.triad_gbps_best);
    if (m.nominal.flops_per_cycle > 0)
        std::fprintf(g_text, "FMA peak, independent count: %s, %.0f FLOP/cycle/core x %.2f GHz (reported clock) x %d = %.1f GFLOP/s; "
                             "probe / count = %.2f\n",
                     m.nominal.core.c_str(), m.nominal.flops_per_cycle, m.nominal.ghz, o.threads, m.nominal.gflops,
                     m.fma_peak_gflops / m.nominal.gflops);
    else
        std::fprintf(g_text, "FMA peak, independent count: unknown core type (no FLOP/cycle figure)\n");
    std::fprintf(g_text, "OpenBLAS: %s, %s build, %s\n", m.openblas.c_str(), openblas_build(m.openblas_parallel).c_str(),
                 m.openblas_library.c_str());
    std::fprintf(g_text, "Epilogue: GELU tanh; Tessel numeric mode fast (vectorized), OpenBLAS pass uses libmvec tanhf.\n");
    std::fprintf(g_text, "Decode shapes: caches flushed before each iteration (%d threads write+read a %zu MiB buffer);\n"
                         "roofline = the slower of the FLOPs at the best FMA peak and reading w once after the same flush\n"
                         "(floor/read_w_*: OpenMP sums over w in 1, 2 and 8 streams per task, 1 KiB steps, and 8 streams in 128 B steps,\n"
                         " timed like the kernels; per round the fastest; %% of roofline = median over rounds of floor / kernel).\n\n",
                o.threads, (size_t)256);
    // What the main rows ran: the schedule for this target (its register block in the
    // description) and, per row, the variant whose guards hold at that shape.
    const Halide::Target target = parse_target(o.target);
    const sched::ScheduleSpec ran = sched::resolve_group_schedule(o.schedule, target)
                                        .for_group(sched::example_group_shape(dsl::GroupKind::MatmulEpilogue), target);
    std::fprintf(g_text, "Tessel: schedule %s for %s (%s): %s\n\n", ran.name.c_str(), o.target.c_str(),
                 target.has_feature(Halide::Target::AVX512) ? "AVX-512, 32 zmm" : "AVX2, 16 ymm", ran.description.c_str());
    std::fprintf(g_text, "%-14s %-16s %10s %12s %8s %9s %9s  %s\n", "shape", "MxKxN", "Tessel ms", "OpenBLAS ms", "ratio",
                "GFLOP/s", "BLAS GF/s", "% of FMA peak / % of decode roofline; the nest that ran");
    for (const auto &d : data) {
        const BenchShape &s = d->shape;
        const double tt = median(g_samples[tessel_name(s, o.schedule, "tanh_fast")]);
        const double tb = median(g_samples[blas_name(s, "tanh")]);
        std::string frac;
        char buf[256];
        if (s.kind == ShapeKind::Decode) {
            // Roofline of this shape in this run: the slower of reading w once (timed cold,
            // like the kernels) and doing the FLOPs at the FMA peak.
            const ReadFloor f = read_floor(s);
            // The FLOPs at the best probe rate: the standalone probe's median sinks when another
            // tenant takes the core, and a floor must be the fastest the machine can do.
            const double compute_floor = s.flops() / (m.fma_peak_gflops_best * 1e9);
            const bool read_bound = f.seconds >= compute_floor;
            const double roof = std::max(f.seconds, compute_floor);
            // Percentages are of this roofline. Its read floor is the paired cold read of w in
            // the same rounds (never the triad median: STREAM's copy pattern is not a read of
            // w), and the share is taken round by round, so drift between rounds cancels.
            const std::string tessel = tessel_name(s, o.schedule, "tanh_fast"), blas = blas_name(s, "tanh");
            const double share = read_bound ? f.share(tessel) : compute_floor / tt;
            const double blas_share = read_bound ? f.share(blas) : compute_floor / tb;
            std::snprintf(buf, sizeof buf, "%5.1f%% of roofline (BLAS %.1f%%) | roofline %.2f ms (%s; w read at %.1f GB/s, %s, IQR %.0f%%), Tessel %.1f GB/s%s",
                          100 * share, 100 * blas_share, roof * 1e3, read_bound ? "cold read of w" : "FMA peak",
                          s.min_bytes() / f.seconds * 1e-9, f.pattern.c_str(), 100 * relative_spread(f.per_round),
                          s.min_bytes() / tt * 1e-9,
                          share > 1.0 || blas_share > 1.0 ? " ABOVE THE FLOOR: a read pattern is missing (bench/README)" : "");
        } else {
            // Each iteration's kernel rate over the probe's rate in the same iteration; the median.
            const double scale = s.flops() / m.fma_flops;
            std::snprintf(buf, sizeof buf, "%5.1f%% peak (BLAS %.1f%%; peak %.1f GFLOP/s paired)",
                          100 * paired_ratio(tessel_name(s, o.schedule, "tanh_fast"), probe_name(s), scale),
                          100 * paired_ratio(blas_name(s, "tanh"), probe_name(s), scale),
                          m.fma_flops / median(g_samples[probe_name(s)]) * 1e-9);
        }
        frac = buf;
        const size_t v = ran.pick_variant({{"M", (long)s.M}, {"K", (long)s.K}, {"N", (long)s.N}});
        std::string guards;
        if (v < ran.variants.size())
            for (const auto &g : ran.variants[v].guards) guards += (guards.empty() ? "" : " && ") + g.to_string();
        frac += v < ran.variants.size() ? "; variant " + std::to_string(v + 1) + " (" + guards + ")" : std::string("; fallback");
        std::fprintf(g_text, "%-14s %-16s %10.3f %12.3f %7.2fx %9.1f %9.1f  %s\n", s.name.c_str(), s.dims().c_str(), tt * 1e3,
                    tb * 1e3, tb / tt, s.flops() / tt * 1e-9, s.flops() / tb * 1e-9, frac.c_str());
    }
    // ratio = OpenBLAS time / Tessel time: > 1 means Tessel is faster.
    std::fprintf(g_text, "(ratio = OpenBLAS ms / Tessel ms; > 1.00x means Tessel is faster)\n");
    if (!target.has_feature(Halide::Target::AVX512) && __builtin_cpu_supports("avx512f"))
        std::fprintf(g_text, "(--target narrows Tessel and the FMA probe to AVX2; OpenBLAS still runs its own kernel (%s,\n"
                             " AVX-512 on this host), so its %% of the AVX2 peak can exceed 100 %%: the ratio is the fair figure)\n",
                     m.openblas.substr(0, m.openblas.find(' ')).c_str());
    if (!o.baseline.empty()) {
        std::fprintf(g_text, "\nBaseline %s vs %s (same run, tanh fast):\n", o.baseline.c_str(), o.schedule.c_str());
        std::fprintf(g_text, "%-14s %12s %10s %12s %9s %9s\n", "shape", "baseline ms", "Tessel ms", "OpenBLAS ms", "base/BLAS",
                     "speedup");
        for (const auto &d : data) {
            const BenchShape &s = d->shape;
            const double tt = median(g_samples[tessel_name(s, o.schedule, "tanh_fast")]);
            const double t0 = median(g_samples[tessel_name(s, "baseline", "tanh_fast")]);
            const double tb = median(g_samples[blas_name(s, "tanh")]);
            std::fprintf(g_text, "%-14s %12.3f %10.3f %12.3f %8.2fx %8.2fx\n", s.name.c_str(), t0 * 1e3, tt * 1e3, tb * 1e3,
                         tb / t0, t0 / tt);
        }
    }

    if (!o.variant_shapes.empty()) {
        std::fprintf(g_text, "\nThe same work as other group shapes (schedule %s, tanh fast, same run):\n", o.schedule.c_str());
        std::fprintf(g_text, "%-14s %12s %14s %8s %12s %8s\n", "shape", "one output", "two outputs", "ratio", "x @ w.T", "ratio");
        for (const auto &d : data) {
            if (!listed(o.variant_shapes, d->shape.name)) continue;
            const BenchShape &s = d->shape;
            const double t1 = median(g_samples[tessel_name(s, o.schedule, "tanh_fast")]);
            const double t2 = median(g_samples[tessel_name(s, o.schedule, "two_outputs")]);
            const double tt = median(g_samples[tessel_name(s, o.schedule, "x_wT")]);
            std::fprintf(g_text, "%-14s %10.3f ms %12.3f ms %7.2fx %10.3f ms %7.2fx\n", s.name.c_str(), t1 * 1e3, t2 * 1e3,
                         t2 / t1, tt * 1e3, tt / t1);
        }
        std::fprintf(g_text, "(ratio = variant ms / one-output ms; the two-output group also writes M x N more)\n");

        // Layouts: w declared a weight and prepared once (transposed, narrowed or packed).
        std::fprintf(g_text, "\nWeights prepared once (dsl/passes/LayoutAssignment.h), same run, schedule %s, tanh fast:\n",
                     o.schedule.c_str());
        std::fprintf(g_text, "%-14s %10s %12s %7s %10s %7s %10s %7s %12s %7s  %s\n", "shape", "x @ w ms", "x@T(w) prep.",
                     "ratio", "w panels", "ratio", "w bf16", "ratio", "bf16 panels", "ratio", "prepare ms (wT / panels / bf16 / both)");
        for (const auto &d : data) {
            if (!listed(o.variant_shapes, d->shape.name)) continue;
            const BenchShape &s = d->shape;
            const auto &prep = d->prepared;
            const double t1 = median(g_samples[tessel_name(s, o.schedule, "tanh_fast")]);
            const double tp = median(g_samples[tessel_name(s, o.schedule, "x_wT_prepared")]);
            const double tk = median(g_samples[tessel_name(s, o.schedule, "w_panels")]);
            const double tb = median(g_samples[tessel_name(s, o.schedule, "w_bf16")]);
            const double tbk = median(g_samples[tessel_name(s, o.schedule, "w_bf16_panels")]);
            std::fprintf(g_text, "%-14s %10.3f %12.3f %6.3fx %10.3f %6.3fx %10.3f %6.3fx %12.3f %6.3fx  %.1f / %.1f / %.1f / %.1f\n",
                         s.name.c_str(), t1 * 1e3, tp * 1e3, t1 / tp, tk * 1e3, t1 / tk, tb * 1e3, t1 / tb, tbk * 1e3, t1 / tbk,
                         prep.at("x_wT_prepared").seconds * 1e3, prep.at("w_panels").seconds * 1e3,
                         prep.at("w_bf16").seconds * 1e3, prep.at("w_bf16_panels").seconds * 1e3);
            if (s.kind == ShapeKind::Decode) {
                // Each variant's bytes of w over its time, as a share of the same-run read floor.
                // (bytes read per second relative to the floor's, paired round by round).
                const ReadFloor f = read_floor(s);
                auto share = [&](const char *label) {
                    return 100 * f.share(tessel_name(s, o.schedule, label)) * prep.at(label).read_bytes / s.min_bytes();
                };
                std::fprintf(g_text, "%-14s read floor %.3f ms = %.1f GB/s (%s); of that bandwidth: x @ w %.1f%%, "
                                     "panels %.1f%%, bf16 %.1f%%, bf16 panels %.1f%%\n",
                             "", f.seconds * 1e3, s.min_bytes() / f.seconds * 1e-9, f.pattern.c_str(),
                             100 * f.share(tessel_name(s, o.schedule, "tanh_fast")), share("w_panels"), share("w_bf16"),
                             share("w_bf16_panels"));
            }
        }
        std::fprintf(g_text, "(ratio = x @ w ms / variant ms: > 1.000x means the variant is faster; x@T(w) prep. is w stored\n"
                             " [N, K], transposed once when prepared; panels are the register block's width)\n");
    }

    for (const auto &d : data) {
        if (d->shape.name != o.mode_shape) continue;
        std::fprintf(g_text, "\nGELU epilogue forms on %s (%s), schedule %s:\n", d->shape.name.c_str(), d->shape.dims().c_str(),
                    o.schedule.c_str());
        for (const char *e : {"tanh_fast", "tanh_strict", "erf"}) {
            const double t = median(g_samples[tessel_name(d->shape, o.schedule, e)]);
            std::fprintf(g_text, "  tessel %-12s %9.3f ms %8.1f GFLOP/s\n", e, t * 1e3, d->shape.flops() / t * 1e-9);
        }
        for (const char *e : {"tanh", "erf"}) {
            const double t = median(g_samples[blas_name(d->shape, e)]);
            std::fprintf(g_text, "  openblas %-10s %9.3f ms %8.1f GFLOP/s\n", e, t * 1e3, d->shape.flops() / t * 1e-9);
        }
    }
    std::fprintf(g_text, "\nError vs the float64 reference on %s (x, w, bias uniform in [-1, 1)),\n"
                         "and of the epilogue alone (K = 1, v in [-8, 8], 65536 points):\n", error_shape.c_str());
    for (const auto &r : errors)
        std::fprintf(g_text, "  %-38s max abs %.2e  max rel %.2e\n", r.what.c_str(), r.err.max_abs, r.err.max_rel);
    std::fprintf(g_text, "\nJIT compile time (all guarded variants, tanh fast):\n");
    for (const auto &[name, s] : compile_seconds) std::fprintf(g_text, "  %-14s %8.3f s\n", name.c_str(), s);
}

int run(int argc, char **argv) {
    const Options o = parse_options(argc, argv);
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
        std::fprintf(g_text, "warning: not OpenBLAS's OpenMP build; its thread pool fights the OpenMP epilogue (use bench/run.sh)\n");
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
    k.erf = std::make_unique<GeluLayer>(GeluForm::Erf, NumericMode::Fast, schedule, target);
    if (!o.baseline.empty())
        k.baseline = std::make_unique<GeluLayer>(GeluForm::Tanh, NumericMode::Fast, sched::resolve_schedule(o.baseline, target), target);
    if (!o.variant_shapes.empty()) k.variants = make_group_variants(sched::resolve_group_schedule(o.schedule, target), target);

    // JIT compile time of every CPU library schedule, as a benchmark so it lands in the JSON.
    std::map<std::string, double> compile_seconds;
    for (const auto &entry : sched::schedule_library()) {
        if (entry.group != dsl::GroupKind::MatmulEpilogue) continue;
        if (entry.device != sched::Device::Cpu) continue;
        const std::string name = "compile/" + entry.name;
        benchmark::RegisterBenchmark(name.c_str(), [=, &compile_seconds](benchmark::State &state) {
            for (auto _ : state) {
                const GeluLayer layer(GeluForm::Tanh, dsl::NumericMode::Fast, entry.build(target), target);
                state.SetIterationTime(layer.kernel().compile_seconds());
                compile_seconds[entry.name] = layer.kernel().compile_seconds();
                state.counters["variants"] = (double)layer.kernel().variants().size();
            }
        })->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
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
                std::map<std::string, Buffer<float> *> args{{"x", &d->x}, {"w", &d->w}, {"wt", &d->wt},
                                                            {"bias", &d->bias}, {"t", &d->t}, {"y", &yv}};
                const GroupVariant::Prepared *prep = &(d->prepared[v.label] = v.prepare_weights(args));
                v.run(args, *prep);
                ErrorStats ev = compare(yv.data(), d->y.data(), (size_t)s.M * s.N);
                if (v.label.rfind("w_bf16", 0) == 0) {
                    // bf16 weights: checked against OpenBLAS on w rounded to bf16, the same math.
                    Buffer<float> wr(s.N, s.K), yr(s.N, s.M);
                    for (size_t i = 0; i < (size_t)s.K * s.N; i++)
                        wr.data()[i] = dsl::bf16_bits_to_float(dsl::float_to_bf16_bits(d->w.data()[i]));
                    gelu_mlp_openblas(d->x.data(), wr.data(), d->bias.data(), yr.data(), s.M, s.K, s.N, GeluForm::Tanh);
                    ev = compare(yv.data(), yr.data(), (size_t)s.M * s.N);
                }
                if (!(ev.max_rel <= 1e-3)) {
                    std::fprintf(stderr, "error: %s: %s and the layer disagree (max rel %.3g)\n", s.name.c_str(),
                                 v.label.c_str(), ev.max_rel);
                    return 1;
                }
                const GroupVariant *vp = &v;
                timed.push_back({tessel_name(s, o.schedule, v.label), [=] {
                                     std::map<std::string, Buffer<float> *> a{{"x", &d->x}, {"w", &d->w}, {"wt", &d->wt},
                                                                             {"bias", &d->bias}, {"t", &d->t}, {"y", &d->y}};
                                     vp->run(a, *prep);
                                 }});
            }
        }
        timed.push_back({blas_name(s, "tanh"), [=] {
                             gelu_mlp_openblas(d->x.data(), d->w.data(), d->bias.data(), d->y.data(), s.M, s.K, s.N,
                                               GeluForm::Tanh);
                         }});
        if (s.kind == ShapeKind::Decode) {
            const int threads = o.threads;
            for (const autosched::ReadPattern &p : autosched::kReadPatterns)
                timed.push_back({floor_name(s, p),
                                 [=] { g_sink = g_sink + stream_read(d->w.data(), (size_t)s.K * s.N, threads, p); }});
        } else {
            // The FMA probe in the same rounds: "% of peak" is a ratio of rates measured
            // milliseconds apart, so clock drift between benchmarks does not enter it.
            const FmaPeakProbe *probe = &fma;
            timed.push_back({probe_name(s), [=] { g_sink = g_sink + (float)probe->run(); }});
        }
        register_paired(d, o, &flusher, timed);
        if (s.name == o.mode_shape) {
            GeluLayer *strict = k.tanh_strict.get(), *erf = k.erf.get();
            register_timed(tessel_name(s, o.schedule, "tanh_strict"), d, o, &flusher,
                           [=] { strict->run(d->x, d->w, d->bias, d->y); });
            register_timed(tessel_name(s, o.schedule, "erf"), d, o, &flusher,
                           [=] { erf->run(d->x, d->w, d->bias, d->y); });
            register_timed(blas_name(s, "erf"), d, o, &flusher, [=] {
                gelu_mlp_openblas(d->x.data(), d->w.data(), d->bias.data(), d->y.data(), s.M, s.K, s.N, GeluForm::Erf);
            });
        }
    }

    benchmark::AddCustomContext("openblas", machine.openblas + " [" + openblas_build(machine.openblas_parallel) +
                                                " build] " + machine.openblas_library);
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
