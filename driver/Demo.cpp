#include "driver/Demo.h"

#include "autoscheduler/PostgresKernelStore.h"
#include "baselines/GeluReference.h"
#include "codegen/Compile.h"
#include "codegen/KernelCache.h"
#include "codegen/Ptxas.h"
#include "compiler/Plan.h"
#include "driver/GeluLayer.h"
#include "schedules/Library.h"
#include "support/Interleaved.h"
#include "support/ProcessClock.h"
#include "support/Random.h"

#include "algorithms/GeluMlp.h"
#include "dsl/Simplify.h"

#include <cmath>
#include <iomanip>

namespace tessel {

using Halide::Runtime::Buffer;

namespace {

/** The CPU schedule: a library name, a JSON file, or "auto" (database hit / autoscheduler). */
sched::ScheduleSpec demo_schedule(const DemoOptions &o, const Halide::Target &target, std::ostream &out) {
    if (o.cpu_schedule == "auto") {
        // The one policy every command uses: a database hit, else the autoscheduler.
        PlanOptions po;
        po.symbols = {{"M", o.M}, {"K", o.K}, {"N", o.N}};
        po.schedules.db = o.db;
        po.schedules.measure = o.tune;
        po.schedules.log = &out;
        const PlannedProgram p = plan(gelu_mlp_layer(o.form == GeluForm::Tanh, o.mode), target, po);
        if (p.fusion.groups.size() == 1 && p.schedules[0].provenance != ScheduleProvenance::LibraryDefault)
            return p.schedules[0].spec;
    }
    return sched::resolve_schedule(o.cpu_schedule == "auto" ? "cpu_blocked" : o.cpu_schedule, target);
}

/** Why the demo runs the numeric mode it does, in one line. */
std::string mode_reason(dsl::NumericMode mode, GeluForm form) {
    switch (mode) {
    case dsl::NumericMode::Strict:
        return std::string("the default: every op as written, IEEE special values kept") +
               (form == GeluForm::Tanh ? "; the tanh GELU as vector code with bounded error (lowering/VectorMath.h, docs/TSL.md)"
                                       : "");
    case dsl::NumericMode::Exact: return "reductions in program order, no partial sums";
    case dsl::NumericMode::Fast: return "rewrites that change rounding allowed (the tanh GELU as a vectorized sigmoid)";
    }
    return "";
}

}  // namespace

int run_demo(const DemoOptions &o, std::ostream &out) {
    const Halide::Target target = parse_target(o.target);
    const std::string cache_note =
        use_kernel_cache(o.kernel_cache, o.db, o.kernel_cache == "off" ? nullptr : autosched::shared_kernel_store_for(o.db));
    const double lookup_start = seconds_since_process_start();
    const sched::ScheduleSpec schedule = demo_schedule(o, target, out);
    const double lookup_seconds = seconds_since_process_start() - lookup_start;
    out << "Tessel demo: y = gelu_" << to_string(o.form) << "(x @ w + bias), M=" << o.M << " K=" << o.K << " N=" << o.N
        << "\n  numeric mode " << dsl::to_string(o.mode) << " (" << mode_reason(o.mode, o.form) << ")\n"
        << "  target " << target.to_string() << ", schedule " << schedule.name << "\n";
    if (!cache_note.empty()) out << "  " << cache_note << "\n";

    // Each variant compiled when first used: the first result waits only for the one it needs.
    const GeluLayer kernel(o.form, o.mode, schedule, target, KernelBackend::JitOnFirstUse);
    Buffer<float> x(o.K, o.M), w(o.N, o.K), bias(o.N), y(o.N, o.M), y_blas(o.N, o.M);
    fill_uniform(x, 1), fill_uniform(w, 2), fill_uniform(bias, 3);
    const double first_call_start = seconds_since_process_start();
    kernel.run(x, w, bias, y);
    const double first_result_at = seconds_since_process_start();
    const double compile_seconds = kernel.kernel().compile_seconds();  // lowering up front, compiling in the call
    int compiled = 0, cached = 0;
    double compiled_in_call = 0;
    for (const auto &v : kernel.kernel().variants())
        compiled += v.compiled, cached += v.from_cache, compiled_in_call += v.compile_seconds;
    const double first_call_seconds = first_result_at - first_call_start - compiled_in_call;
    const int variants = (int)kernel.kernel().variants().size();
    out << std::fixed << std::setprecision(3) << "  " << (cached == compiled ? "kernel cache: loaded " : "compile: ")
        << compile_seconds * 1e3 << " ms (" << compiled << " of " << variants << " kernel(s), each compiled on first use; "
        << cached << " from the kernel cache";
    if (KernelCache *c = KernelCache::active())
        out << " in " << c->directory().string();
    else
        out << ", which is off";
    out << ")\n";

    const auto ref = gelu_mlp_reference(x.data(), w.data(), bias.data(), o.M, o.K, o.N, o.form);
    gelu_mlp_openblas(x.data(), w.data(), bias.data(), y_blas.data(), o.M, o.K, o.N, o.form);
    const size_t count = (size_t)o.M * o.N;
    const ErrorStats vs_ref = compare(y.data(), ref.data(), count);
    const ErrorStats vs_blas = compare(y.data(), y_blas.data(), count);
    // Tolerance: float32 accumulation over K terms of magnitude <= 1 loses about sqrt(K) ulps.
    const double tolerance = 1e-5 * std::sqrt((double)o.K) * 4;
    const bool ok = vs_ref.max_rel <= tolerance && vs_blas.max_rel <= 2 * tolerance;
    out << std::scientific << std::setprecision(2) << "  max error vs float64 reference: " << vs_ref.max_abs << " abs, "
        << vs_ref.max_rel << " rel\n"
        << "  max error vs OpenBLAS+epilogue:  " << vs_blas.max_abs << " abs, " << vs_blas.max_rel << " rel\n"
        << "  tolerance " << tolerance << " rel: " << (ok ? "VERIFIED" : "MISMATCH") << "\n";
    // Cold start: program start (after the loader) to the first result, which the check above
    // then verified; the float64 reference's own time is not part of it.
    out << std::fixed << std::setprecision(1) << "  cold start: first result " << first_result_at * 1e3
        << " ms after program start (schedule lookup " << lookup_seconds * 1e3 << " ms, "
        << (cached == compiled ? "kernels loaded from the cache " : "compile ") << compile_seconds * 1e3 << " ms, first call "
        << first_call_seconds * 1e3 << " ms)\n";

    const double flops = 2.0 * o.M * o.K * o.N;
    const double t_tessel = median_seconds([&] { kernel.run(x, w, bias, y); }, o.repeats);
    const double t_blas = median_seconds(
        [&] { gelu_mlp_openblas(x.data(), w.data(), bias.data(), y_blas.data(), o.M, o.K, o.N, o.form); }, o.repeats);
    out << std::fixed << std::setprecision(3) << "  time (median of " << o.repeats << ", warm): Tessel " << t_tessel * 1e3
        << " ms (" << std::setprecision(1) << flops / t_tessel * 1e-9 << " GFLOP/s), OpenBLAS+epilogue " << std::setprecision(3)
        << t_blas * 1e3 << " ms (" << std::setprecision(1) << flops / t_blas * 1e-9 << " GFLOP/s) [" << openblas_description()
        << "]\n"
        << "  (timings here are indicative; `make bench` measures properly)\n";
    // Strict mode's cost, measured here: the same layer in fast mode, timed the same way.
    if (o.mode != dsl::NumericMode::Fast) {
        const GeluLayer fast(o.form, dsl::NumericMode::Fast, schedule, target);
        Buffer<float> y_fast(o.N, o.M);
        const double t_fast = median_seconds([&] { fast.run(x, w, bias, y_fast); }, o.repeats);
        out << std::fixed << std::setprecision(3) << "  fast mode, same schedule: " << t_fast * 1e3 << " ms ("
            << std::setprecision(2) << t_tessel / t_fast << "x the " << dsl::to_string(o.mode) << " time)"
            << (t_tessel > 1.1 * t_fast ? "; `tessel demo --mode fast` if rounding may change" : "") << "\n";
    }

    bool cuda_ok = true;
    if (o.cuda) {
        if (find_ptxas().empty()) {
            out << "CUDA: skipped (ptxas not found; install the CUDA toolkit)\n";
        } else {
            // Every guarded variant of the CUDA schedule, compiled ahead of time and assembled.
            const Halide::Target cuda = parse_target("host-cuda");
            const GeluLayer layer(o.form, o.mode, sched::library_schedule(o.cuda_schedule, cuda), cuda,
                                  KernelBackend::AheadOfTime);
            const PtxScheduleReport r = layer.kernel().ptx_report();
            cuda_ok = r.within_limits(layer.kernel().ptx_limits());
            out << "CUDA (ahead of time, host-cuda): " << r.to_string();
        }
    }
    out << store_deferred_kernels();
    return ok && cuda_ok ? 0 : 1;
}

}  // namespace tessel
