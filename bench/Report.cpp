// tessel_bench's report: errors against float64, and the summary of the timed rows.
#include "bench/Report.h"

#include "baselines/GeluReference.h"
#include "bench/PairedTiming.h"
#include "codegen/Compile.h"
#include "schedules/Library.h"
#include "support/Statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tessel::bench {

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
            k.erf_strict->run(d.x, d.w, d.bias, d.y);
            rows.push_back({"tessel erf strict", compare(d.y.data(), ref.data(), count)});
            k.erf_fast->run(d.x, d.w, d.bias, d.y);
            rows.push_back({"tessel erf fast", compare(d.y.data(), ref.data(), count)});
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
                              Epilogue{"epilogue only: tessel erf strict", k.erf_strict.get(), GeluForm::Erf},
                              Epilogue{"epilogue only: tessel erf fast", k.erf_fast.get(), GeluForm::Erf}}) {
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

void print_summary(const BenchOptions &o, const Machine &m, const std::vector<std::unique_ptr<ShapeData>> &data,
                   const std::map<std::string, double> &compile_seconds, const std::vector<ErrorRow> &errors,
                   const std::string &error_shape) {
    std::fprintf(g_text, "\n== Tessel vs OpenBLAS+epilogue, %d thread(s), medians of all timed iterations ==\n", o.threads);
    std::fprintf(g_text, "FMA peak (%s loop): %.1f GFLOP/s median, %.1f best | STREAM triad: %.1f GB/s median, %.1f best\n",
                 m.fma_isa.c_str(), m.fma_peak_gflops, m.fma_peak_gflops_best, m.triad_gbps, m.triad_gbps_best);
    if (m.nominal.flops_per_cycle > 0)
        std::fprintf(g_text,
                     "FMA peak, independent count: %s, %.0f FLOP/cycle/core x %.2f GHz (reported clock) x %d = %.1f GFLOP/s; "
                     "probe / count = %.2f\n",
                     m.nominal.core.c_str(), m.nominal.flops_per_cycle, m.nominal.ghz, o.threads, m.nominal.gflops,
                     m.fma_peak_gflops / m.nominal.gflops);
    else
        std::fprintf(g_text, "FMA peak, independent count: unknown core type (no FLOP/cycle figure)\n");
    std::fprintf(g_text, "OpenBLAS: %s, %s build, %s\n", m.openblas.c_str(), openblas_build(m.openblas_parallel).c_str(),
                 m.openblas_library.c_str());
    std::fprintf(g_text, "Epilogue: GELU tanh; Tessel numeric mode fast (vectorized), OpenBLAS pass uses libmvec tanhf.\n");
    std::fprintf(
        g_text,
        "Decode shapes: caches flushed before each iteration (%d threads of the OpenMP pool every kernel here runs on\n"
        "write+read a %zu MiB buffer, so the pool is awake when the call starts, as between back-to-back kernels);\n"
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
            std::snprintf(
                buf, sizeof buf,
                "%5.1f%% of roofline (BLAS %.1f%%) | roofline %.2f ms (%s; w read at %.1f GB/s, %s, IQR %.0f%%), Tessel %.1f GB/s%s",
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
        std::fprintf(g_text,
                     "(--target narrows Tessel and the FMA probe to AVX2; OpenBLAS still runs its own kernel (%s,\n"
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
        std::fprintf(g_text, "%-14s %10s %12s %7s %10s %7s %10s %7s %12s %7s %10s %7s  %s\n", "shape", "x @ w ms", "x@T(w) prep.",
                     "ratio", "w panels", "ratio", "w bf16", "ratio", "bf16 panels", "ratio", "w int8", "ratio",
                     "prepare ms (wT / panels / bf16 / both / int8)");
        for (const auto &d : data) {
            if (!listed(o.variant_shapes, d->shape.name)) continue;
            const BenchShape &s = d->shape;
            // A variant left out by --variants has no samples (nan) and no preparation.
            const auto prep_ms = [&](const char *label) {
                auto it = d->prepared.find(label);
                return it == d->prepared.end() ? NAN : it->second.seconds * 1e3;
            };
            const double t1 = median(g_samples[tessel_name(s, o.schedule, "tanh_fast")]);
            const double tp = median(g_samples[tessel_name(s, o.schedule, "x_wT_prepared")]);
            const double tk = median(g_samples[tessel_name(s, o.schedule, "w_panels")]);
            const double tb = median(g_samples[tessel_name(s, o.schedule, "w_bf16")]);
            const double tbk = median(g_samples[tessel_name(s, o.schedule, "w_bf16_panels")]);
            const double tq = median(g_samples[tessel_name(s, o.schedule, "w_int8")]);
            std::fprintf(
                g_text,
                "%-14s %10.3f %12.3f %6.3fx %10.3f %6.3fx %10.3f %6.3fx %12.3f %6.3fx %10.3f %6.3fx  %.1f / %.1f / %.1f / "
                "%.1f / %.1f\n",
                s.name.c_str(), t1 * 1e3, tp * 1e3, t1 / tp, tk * 1e3, t1 / tk, tb * 1e3, t1 / tb, tbk * 1e3, t1 / tbk, tq * 1e3,
                t1 / tq, prep_ms("x_wT_prepared"), prep_ms("w_panels"), prep_ms("w_bf16"), prep_ms("w_bf16_panels"),
                prep_ms("w_int8"));
            if (s.kind == ShapeKind::Decode) {
                // Each variant's bytes of w over its time, as a share of the same-run read floor.
                // (bytes read per second relative to the floor's, paired round by round).
                const ReadFloor f = read_floor(s);
                // A narrow weight against the floor of its own bytes (read in the same rounds).
                const ReadFloor f2 = read_floor(s, 2), f1 = read_floor(s, 1);
                auto share = [&](const char *label) {
                    const double bytes = weight_element_bytes(label);
                    const ReadFloor &own = bytes == 1 ? f1 : bytes == 2 ? f2 : f;
                    return d->prepared.count(label) ? 100 * own.share(tessel_name(s, o.schedule, label)) : NAN;
                };
                std::fprintf(g_text,
                             "%-14s read floor %.3f ms = %.1f GB/s (%s); share of the floor of the bytes each reads: x @ w "
                             "%.1f%%, panels %.1f%%, bf16 %.1f%%, bf16 panels %.1f%% (2-byte floor %.3f ms), int8 %.1f%% "
                             "(1-byte floor %.3f ms)\n",
                             "", f.seconds * 1e3, s.min_bytes() / f.seconds * 1e-9, f.pattern.c_str(),
                             100 * f.share(tessel_name(s, o.schedule, "tanh_fast")), share("w_panels"), share("w_bf16"),
                             share("w_bf16_panels"), f2.seconds * 1e3, share("w_int8"), f1.seconds * 1e3);
            }
            for (const char *label : {"w_int4", "w_int4_g128"}) {
                if (!d->prepared.count(label)) continue;
                const double t4 = median(g_samples[tessel_name(s, o.schedule, label)]);
                std::fprintf(g_text, "%-14s int4, groups of %d: %.3f ms, %.3fx x @ w, %.3fx int8", "", int4_group(label),
                             t4 * 1e3, t1 / t4, tq / t4);
                if (s.kind == ShapeKind::Decode) {
                    const double bytes = weight_element_bytes(label);
                    const ReadFloor own = read_floor(s, bytes);
                    std::fprintf(g_text, "; %.1f%% of the floor of its %.3g bytes per element (%.3f ms)",
                                 100 * own.share(tessel_name(s, o.schedule, label)), bytes, own.seconds * 1e3);
                }
                std::fprintf(g_text, "\n");
            }
        }
        std::fprintf(g_text,
                     "(ratio = x @ w ms / variant ms: > 1.000x means the variant is faster; x@T(w) prep. is w stored\n"
                     " [N, K], transposed once when prepared; panels are the register block's width; int8 is w quantized\n"
                     " per output column, int4 in groups along K loaded already quantized, each checked against OpenBLAS\n"
                     " on the dequantized w)\n");
    }

    for (const auto &d : data) {
        if (d->shape.name != o.mode_shape) continue;
        std::fprintf(g_text, "\nGELU epilogue forms on %s (%s), schedule %s:\n", d->shape.name.c_str(), d->shape.dims().c_str(),
                     o.schedule.c_str());
        for (const char *e : {"tanh_fast", "tanh_strict", "erf_fast", "erf_strict"}) {
            const double t = median(g_samples[tessel_name(d->shape, o.schedule, e)]);
            std::fprintf(g_text, "  tessel %-12s %9.3f ms %8.1f GFLOP/s\n", e, t * 1e3, d->shape.flops() / t * 1e-9);
        }
        // Paired: each round's strict time over the same round's fast time.
        for (const char *form : {"tanh", "erf"}) {
            const std::string fast = tessel_name(d->shape, o.schedule, std::string(form) + "_fast"),
                              strict = tessel_name(d->shape, o.schedule, std::string(form) + "_strict");
            std::fprintf(g_text, "  %s: strict / fast time %.3fx (median of paired rounds)\n", form, paired_ratio(fast, strict));
        }
        for (const char *e : {"tanh", "erf"}) {
            const double t = median(g_samples[blas_name(d->shape, e)]);
            std::fprintf(g_text, "  openblas %-10s %9.3f ms %8.1f GFLOP/s\n", e, t * 1e3, d->shape.flops() / t * 1e-9);
        }
    }
    std::fprintf(g_text,
                 "\nError vs the float64 reference on %s (x, w, bias uniform in [-1, 1)),\n"
                 "and of the epilogue alone (K = 1, v in [-8, 8], 65536 points):\n",
                 error_shape.c_str());
    for (const auto &r : errors)
        std::fprintf(g_text, "  %-38s max abs %.2e  max rel %.2e\n", r.what.c_str(), r.err.max_abs, r.err.max_rel);
    std::fprintf(g_text, "\nJIT compile time (all guarded variants, tanh fast):\n");
    for (const auto &[name, s] : compile_seconds) std::fprintf(g_text, "  %-14s %8.3f s\n", name.c_str(), s);
}

}  // namespace tessel::bench
