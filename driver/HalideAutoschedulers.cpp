// HalideAutoschedulers.cpp
//   halide_plugin_directory / load_halide_autoscheduler   find and dlopen the wheel's plugins
//   schedule_gelu_with_halide                             estimates, apply_autoscheduler, JIT
//   benchmark_gelu_contenders / compare_autoschedulers    same inputs, same timing, one table
#include "autoscheduler/HalideAutoschedulers.h"

#include <functional>

#include "baselines/GeluReference.h"
#include "codegen/Compile.h"
#include "driver/GeluKernel.h"
#include "driver/Random.h"
#include "driver/Timing.h"
#include "schedules/Library.h"

#include <HalideBuffer.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <dlfcn.h>
#include <filesystem>
#include <iomanip>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace tessel::autosched {

namespace fs = std::filesystem;
using Halide::Runtime::Buffer;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string lower(std::string s) {
    for (char &c : s) c = (char)std::tolower((unsigned char)c);
    return s;
}

bool gpu_only(const std::string &name) { return name == "Anderson2021"; }

/** Shared inputs of one shape, filled once (seed 1, 2, 3 for x, w, bias). */
struct Inputs {
    Buffer<float> x, w, bias;
    explicit Inputs(const GemmShape &s) : x(s.K, s.M), w(s.N, s.K), bias(s.N) {
        fill_uniform(x, 1);
        fill_uniform(w, 2);
        fill_uniform(bias, 3);
    }
};

/** Largest relative error over `rows` evenly spread rows of y against the float64 reference. */
double sampled_error(const Inputs &in, const Buffer<float> &y, const GemmShape &s, GeluForm form, int rows) {
    double worst = 0;
    const int n = std::max(1, std::min(rows, s.M));
    std::set<int> picked;
    for (int i = 0; i < n; i++) picked.insert(n == 1 ? 0 : (int)((long long)i * (s.M - 1) / (n - 1)));
    for (int r : picked) {
        const std::vector<double> want = gelu_mlp_reference(in.x.data() + (size_t)r * s.K, in.w.data(), in.bias.data(),
                                                            1, s.K, s.N, form);
        worst = std::max(worst, compare(y.data() + (size_t)r * s.N, want.data(), want.size()).max_rel);
    }
    return worst;
}

/** Times `run` (returns a Halide status) and verifies y; fills the timing fields of `r`. */
template <typename Run>
void time_and_verify(ContenderResult &r, Run run, const Inputs &in, Buffer<float> &y, const CompareOptions &o) {
    int rc = 0;
    const double sec = median_seconds([&] { rc = rc ? rc : run(); }, o.repeats);
    if (rc != 0) {
        r.ok = false;
        r.message = "run failed: " + last_halide_error();
        return;
    }
    r.median_ms = sec * 1e3;
    r.gflops = 2.0 * r.shape.M * r.shape.K * r.shape.N / sec * 1e-9;
    r.max_rel_error = sampled_error(in, y, r.shape, o.form, o.verify_rows);
    r.ok = r.max_rel_error < 1e-3;
    if (!r.ok) r.message = "wrong result: max relative error " + std::to_string(r.max_rel_error);
}

}  // namespace

const std::vector<std::string> &halide_autoscheduler_names() {
    static const std::vector<std::string> names = {"Mullapudi2016", "Adams2019", "Li2018", "Anderson2021"};
    return names;
}

std::string halide_plugin_directory() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&Halide::load_plugin), &info) && info.dli_fname) {
        const fs::path dir = fs::path(info.dli_fname).parent_path();
        if (fs::exists(dir / "libautoschedule_mullapudi2016.so")) return dir.string();
    }
#ifdef TESSEL_HALIDE_LIB_DIR
    if (fs::exists(fs::path(TESSEL_HALIDE_LIB_DIR) / "libautoschedule_mullapudi2016.so")) return TESSEL_HALIDE_LIB_DIR;
#endif
    return "";
}

std::string load_halide_autoscheduler(const std::string &name) {
    static std::mutex mutex;
    static std::map<std::string, std::string> loaded;  // name -> "" or the error
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = loaded.find(name); it != loaded.end()) return it->second;
    std::string &result = loaded[name];
    const std::string dir = halide_plugin_directory();
    if (dir.empty()) return result = "cannot find Halide's autoscheduler plugins next to libHalide.so";
    const fs::path lib = fs::path(dir) / ("libautoschedule_" + lower(name) + ".so");
    if (!fs::exists(lib)) return result = "no plugin " + lib.string();
    try {
        Halide::load_plugin(lib.string());
    } catch (const Halide::Error &e) {
        result = "loading " + lib.string() + " failed: " + e.what();
    }
    return result;
}

HalideScheduledGelu schedule_gelu_with_halide(const std::string &autoscheduler, const GemmShape &shape,
                                              const Halide::Target &target, GeluForm form, NumericMode mode,
                                              const std::map<std::string, std::string> &extra) {
    HalideScheduledGelu r;
    r.autoscheduler = autoscheduler;
    if (gpu_only(autoscheduler) && !target.has_gpu_feature()) {
        r.message = autoscheduler + " schedules GPUs only; target " + target.to_string() + " has no GPU feature";
        return r;
    }
    if (std::string why = load_halide_autoscheduler(autoscheduler); !why.empty()) {
        r.message = why;
        return r;
    }
    try {
        GeluMlp alg = define_gelu_mlp(form, mode);
        alg.x.dim(0).set_estimate(0, shape.K);
        alg.x.dim(1).set_estimate(0, shape.M);
        alg.w.dim(0).set_estimate(0, shape.N);
        alg.w.dim(1).set_estimate(0, shape.K);
        alg.bias.dim(0).set_estimate(0, shape.N);
        alg.y.set_estimates({{0, shape.N}, {0, shape.M}});
        std::map<std::string, std::string> params = {
            {"parallelism", std::to_string(std::max(1u, std::thread::hardware_concurrency()))}};
        for (const auto &[k, v] : extra) params[k] = v;
        Halide::Pipeline p(alg.y);
        auto t0 = Clock::now();
        Halide::AutoSchedulerResults results = p.apply_autoscheduler(target, {autoscheduler, params});
        r.search_seconds = seconds_since(t0);
        r.schedule_source = results.schedule_source;
        t0 = Clock::now();
        JitKernel k = compile_jit(alg.y, alg.arguments(), target, "gelu_mlp_" + lower(autoscheduler));
        r.callable = k.callable;
        r.compile_seconds = seconds_since(t0);
        r.ok = true;
    } catch (const Halide::Error &e) {
        r.message = autoscheduler + " failed in Halide: " + e.what();
    } catch (const std::exception &e) {
        r.message = autoscheduler + " failed: " + e.what();
    }
    return r;
}

std::vector<ContenderResult> benchmark_gelu_contenders(const GemmShape &shape, const CompareOptions &o) {
    const Halide::Target target = parse_target(o.target);
    const Inputs in(shape);
    std::vector<ContenderResult> rows;
    for (const std::string &name : o.autoschedulers.empty() ? halide_autoscheduler_names() : o.autoschedulers) {
        ContenderResult r;
        r.name = name;
        r.shape = shape;
        HalideScheduledGelu k = schedule_gelu_with_halide(name, shape, target, o.form, o.mode);
        r.search_seconds = k.search_seconds;
        r.compile_seconds = k.compile_seconds;
        r.message = k.message;
        if (k.ok) {
            Buffer<float> y(shape.N, shape.M);
            Inputs &mut = const_cast<Inputs &>(in);
            time_and_verify(r, [&] { return k.callable(mut.x, mut.w, mut.bias, y); }, in, y, o);
        }
        rows.push_back(std::move(r));
    }
    std::vector<std::pair<std::string, std::function<sched::ScheduleSpec()>>> tessel;
    for (const std::string &name : o.tessel_schedules)
        tessel.push_back({name, [&target, name] { return sched::library_schedule(name, target); }});
    for (const auto &[label, spec] : o.tessel_specs) tessel.push_back({label, [&spec] { return spec; }});
    for (const auto &[name, make] : tessel) {
        ContenderResult r;
        r.name = "tessel:" + name;
        r.shape = shape;
        try {
            auto t0 = Clock::now();
            GeluKernel kernel(make(), o.form, o.mode, target);
            r.compile_seconds = seconds_since(t0);
            Buffer<float> y(shape.N, shape.M);
            Inputs &mut = const_cast<Inputs &>(in);
            time_and_verify(
                r,
                [&] {
                    try {
                        kernel.run(mut.x, mut.w, mut.bias, y);
                        return 0;
                    } catch (const CompileError &) {
                        return -1;
                    }
                },
                in, y, o);
        } catch (const std::exception &e) {
            r.message = e.what();
        }
        rows.push_back(std::move(r));
    }
    return rows;
}

int compare_autoschedulers(const std::vector<GemmShape> &shapes, std::ostream &out, const CompareOptions &o) {
    bool all_tessel = true, any_halide = false;
    std::vector<std::string> notes;
    out << "GELU(x @ w + bias), " << to_string(o.form) << "/" << to_string(o.mode) << ", target "
        << parse_target(o.target).to_string() << ", median of " << o.repeats << " runs\n";
    out << std::left << std::setw(16) << "shape MxKxN" << std::setw(20) << "contender" << std::right
        << std::setw(10) << "search s" << std::setw(11) << "compile s" << std::setw(12) << "median ms"
        << std::setw(10) << "GFLOP/s" << std::setw(16) << "vs best Halide" << "\n";
    for (const GemmShape &s : shapes) {
        const std::vector<ContenderResult> rows = benchmark_gelu_contenders(s, o);
        double best_halide = 0;
        for (const auto &r : rows)
            if (r.ok && r.name.rfind("tessel:", 0) != 0) best_halide = std::max(best_halide, r.gflops);
        const std::string shape = std::to_string(s.M) + "x" + std::to_string(s.K) + "x" + std::to_string(s.N);
        for (const auto &r : rows) {
            const bool tessel = r.name.rfind("tessel:", 0) == 0;
            if (tessel) all_tessel = all_tessel && r.ok;
            else any_halide = any_halide || r.ok;
            out << std::left << std::setw(16) << shape << std::setw(20) << r.name << std::right << std::fixed;
            if (!r.ok) {
                const bool skipped = r.message.find("GPUs only") != std::string::npos;
                out << std::setw(10) << "-" << std::setw(11) << "-" << std::setw(12) << "-" << std::setw(10) << "-"
                    << std::setw(16) << (skipped ? "n/a" : "failed") << "\n";
                notes.push_back(shape + " " + r.name + ": " + r.message);
                continue;
            }
            std::ostringstream search;
            search << std::fixed << std::setprecision(2) << r.search_seconds;
            out << std::setw(10) << (tessel ? std::string("-") : search.str()) << std::setw(11) << std::setprecision(2)
                << r.compile_seconds << std::setw(12) << std::setprecision(3) << r.median_ms << std::setw(10)
                << std::setprecision(1) << r.gflops << std::setw(15) << std::setprecision(2)
                << (best_halide > 0 ? r.gflops / best_halide : 0.0) << "x\n";
        }
    }
    for (const auto &n : notes) out << "  note: " << n << "\n";
    return all_tessel && any_halide ? 0 : 1;
}

}  // namespace tessel::autosched
