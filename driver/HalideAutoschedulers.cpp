// HalideAutoschedulers.cpp
//   halide_plugin_directory / load_halide_autoscheduler   find and dlopen the wheel's plugins
//   schedule_group_with_halide                            estimates, apply_autoscheduler, JIT
//   benchmark_contenders / compare_autoschedulers         same inputs, same timing, one table
#include "driver/HalideAutoschedulers.h"

#include "codegen/Compile.h"
#include "dsl/passes/GroupExtents.h"
#include "lowering/CompiledGraph.h"
#include "lowering/CompiledKernel.h"
#include "lowering/LowerToHalide.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/Library.h"
#include "support/Clock.h"
#include "support/ErrorStats.h"
#include "support/Interleaved.h"
#include "support/Random.h"

#include <HalideBuffer.h>

#include <dlfcn.h>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <thread>

namespace tessel::autosched {

namespace fs = std::filesystem;
using Halide::Runtime::Buffer;

namespace {

std::string lower(std::string s) {
    for (char &c : s) c = (char)std::tolower((unsigned char)c);
    return s;
}

bool gpu_only(const std::string &name) { return name == "Anderson2021"; }

/** Buffers of one shape in CompiledKernel::arguments() order; inputs filled once (seed 1, 2...). */
struct Buffers {
    std::vector<Buffer<float>> all;
    std::vector<size_t> outputs;  ///< positions of the outputs in `all`
    Buffers(const CompiledKernel &k, const dsl::Graph &g, const Symbols &symbols) {
        uint32_t seed = 1;
        for (const auto &a : k.arguments()) {
            std::vector<int64_t> shape = concrete_shape(g, a.value, symbols);
            std::vector<int> sizes(shape.rbegin(), shape.rend());
            if (sizes.empty()) sizes.push_back(1);
            all.emplace_back(sizes);
            if (a.is_output)
                outputs.push_back(all.size() - 1);
            else
                fill_uniform(all.back(), seed++);
        }
    }
    std::vector<halide_buffer_t *> raw() {
        std::vector<halide_buffer_t *> r;
        for (auto &b : all) r.push_back(b.raw_buffer());
        return r;
    }
    std::vector<std::vector<float>> output_values() const {
        std::vector<std::vector<float>> v;
        for (size_t i : outputs) v.emplace_back(all[i].data(), all[i].data() + all[i].number_of_elements());
        return v;
    }
};

std::string shape_text(const dsl::GroupExtents &e, const Symbols &symbols) {
    std::string s;
    const auto c = e.concrete(symbols);
    for (const char *n : {"M", "K", "N"})
        if (c && c->count(n)) s += (s.empty() ? "" : " ") + std::string(n) + "=" + std::to_string(c->at(n));
    return s;
}

/** A compiled contender: its result row and one call of it (0 on success, else `*error`). */
struct CompiledContender {
    ContenderResult row;
    std::function<int(std::string *)> run;
};

/** Checks each contender's outputs against `want` (one call each), then times them together on
 * the interleaved harness (support/Interleaved.h: one warm-up round, then `repeats` rounds, each
 * in an order drawn afresh), so the machine's drift falls on all of them alike. Fills the rows. */
void verify_and_time(std::vector<CompiledContender> &contenders, Buffers &b, const std::vector<std::vector<float>> &want,
                     double flops, const CompareOptions &o) {
    for (auto &c : contenders) {
        if (!c.row.ok) continue;
        std::string error;
        if (c.run(&error) != 0) {
            c.row.ok = false;
            c.row.message = "run failed: " + error;
            continue;
        }
        const auto got = b.output_values();
        for (size_t i = 0; i < got.size(); i++)
            c.row.max_rel_error = std::max(c.row.max_rel_error, compare(got[i].data(), want[i].data(), got[i].size()).max_rel);
        if (c.row.max_rel_error >= 1e-3) {
            c.row.ok = false;
            c.row.message =
                "wrong result: max relative error " + std::to_string(c.row.max_rel_error) + " vs the reference kernel";
        }
    }
    std::vector<Contender> timed;
    std::vector<CompiledContender *> ran;
    for (auto &c : contenders) {
        if (!c.row.ok) continue;
        ran.push_back(&c);
        timed.emplace_back(c.row.name, [&c](Call &call) {
            std::string error;
            if (c.run(&error) != 0) {
                c.row.ok = false;
                c.row.message = "run failed: " + error;
                call.fail(c.row.message);
            }
        });
    }
    InterleavedOptions io;
    io.stop = StoppingRule::fixed(o.repeats);
    Interleaved harness(std::move(timed), io);
    const InterleavedResult &r = harness.run();
    for (size_t k = 0; k < ran.size(); k++)
        for (double s : r.samples[k]) ran[k]->row.samples.push_back(s * 1e3);
    for (auto &c : contenders) {
        if (!c.row.ok) continue;
        c.row.median_ms = median(c.row.samples);
        c.row.spread = relative_spread(c.row.samples);
        c.row.gflops = flops / (c.row.median_ms * 1e-3) * 1e-9;
    }
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

HalideScheduledGroup schedule_group_with_halide(const std::string &autoscheduler, const dsl::Graph &g,
                                                const dsl::FusionGroup &group, const Symbols &symbols,
                                                const Halide::Target &target, const std::map<std::string, std::string> &extra) {
    HalideScheduledGroup r;
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
        lower::LoweredGroup lg = lower::lower_group(g, group);
        for (size_t i = 0; i < lg.inputs.size(); i++) {
            const auto shape = concrete_shape(g, lg.input_values[i], symbols);
            for (size_t a = 0; a < shape.size(); a++)
                lg.inputs[i].dim((int)(shape.size() - 1 - a)).set_estimate(0, (int)shape[a]);
        }
        for (size_t i = 0; i < lg.outputs.size(); i++) {
            size_t first = 0;  // the first value of this output Func (a Tuple's elements share a shape)
            while (lg.output_func[first] != i) first++;
            const auto shape = concrete_shape(g, lg.output_values[first], symbols);
            Halide::Region est;
            for (auto it = shape.rbegin(); it != shape.rend(); ++it) est.push_back({0, (int)*it});
            lg.outputs[i].set_estimates(est);
        }
        std::map<std::string, std::string> params = {
            {"parallelism", std::to_string(std::max(1u, std::thread::hardware_concurrency()))}};
        for (const auto &[k, v] : extra) params[k] = v;
        Halide::Pipeline p = lg.pipeline();
        auto t0 = SteadyClock::now();
        Halide::AutoSchedulerResults results = p.apply_autoscheduler(target, {autoscheduler, params});
        r.search_seconds = seconds_since(t0);
        r.schedule_source = results.schedule_source;
        t0 = SteadyClock::now();
        r.callable = compile_jit(p, lg.arguments(), target, group.name + "_" + lower(autoscheduler)).callable;
        r.compile_seconds = seconds_since(t0);
        r.ok = true;
    } catch (const Halide::Error &e) {
        r.message = autoscheduler + " failed in Halide: " + e.what();
    } catch (const std::exception &e) {
        r.message = autoscheduler + " failed: " + e.what();
    }
    return r;
}

std::vector<ContenderResult> benchmark_contenders(const dsl::Graph &g, const dsl::FusionGroup &group, const Symbols &symbols,
                                                  const CompareOptions &o) {
    const Halide::Target &target = o.target;
    // The reference: the group's default library schedule, compiled as shipped.
    const lower::LoweredGroup probe = lower::lower_group(g, group);
    const std::string default_name =
        sched::default_library_schedule(group.kind, target.has_gpu_feature() ? sched::Device::Cuda : sched::Device::Cpu);
    const CompiledKernel reference(g, group, lower::library_schedule_for(default_name, probe, target), target);
    Buffers buffers(reference, g, symbols);
    reference.run(buffers.raw());
    const std::vector<std::vector<float>> want = buffers.output_values();
    const dsl::GroupExtents extents = dsl::group_extents(g, group);
    const auto e = extents.concrete(symbols);
    const double flops = e && e->count("K") && e->count("M") && e->count("N") ? 2.0 * e->at("M") * e->at("K") * e->at("N") : 0.0;
    const std::string shape = shape_text(extents, symbols);

    // Every contender compiled first (kept alive here), then verified and timed together.
    std::vector<CompiledContender> contenders;
    std::vector<std::unique_ptr<HalideScheduledGroup>> halide_kernels;
    std::vector<std::unique_ptr<CompiledKernel>> tessel_kernels;
    const std::vector<halide_buffer_t *> raw = buffers.raw();
    for (const std::string &name : o.autoschedulers.empty() ? halide_autoscheduler_names() : o.autoschedulers) {
        CompiledContender c;
        c.row.name = name;
        c.row.shape = shape;
        halide_kernels.push_back(
            std::make_unique<HalideScheduledGroup>(schedule_group_with_halide(name, g, group, symbols, target)));
        HalideScheduledGroup &k = *halide_kernels.back();
        c.row.search_seconds = k.search_seconds;
        c.row.compile_seconds = k.compile_seconds;
        c.row.message = k.message;
        c.row.ok = k.ok;
        c.run = [&k, &raw](std::string *error) {
            Halide::JITUserContext context;
            Halide::JITUserContext *context_ptr = &context;
            std::vector<const void *> argv{&context_ptr};
            for (halide_buffer_t *b : raw) argv.push_back(b);
            const int rc = k.callable.call_argv_fast((int)argv.size(), argv.data());
            if (rc) *error = last_halide_error();
            return rc;
        };
        contenders.push_back(std::move(c));
    }
    std::vector<std::pair<std::string, std::function<sched::ScheduleSpec()>>> tessel;
    for (const std::string &name : o.tessel_schedules)
        tessel.push_back({name, [&, name] { return lower::library_schedule_for(name, probe, target); }});
    for (const auto &[label, spec] : o.tessel_specs) tessel.push_back({label, [&spec] { return spec; }});
    for (const auto &[name, make] : tessel) {
        CompiledContender c;
        c.row.name = "tessel:" + name;
        c.row.shape = shape;
        try {
            tessel_kernels.push_back(std::make_unique<CompiledKernel>(g, group, make(), target));
            const CompiledKernel &kernel = *tessel_kernels.back();
            c.row.compile_seconds = kernel.compile_seconds();
            c.row.ok = true;
            c.run = [&kernel, &raw](std::string *error) {
                try {
                    kernel.run(raw);
                    return 0;
                } catch (const CompileError &e) {
                    *error = e.what();
                    return -1;
                }
            };
        } catch (const std::exception &e) {
            c.row.message = e.what();
        }
        contenders.push_back(std::move(c));
    }
    verify_and_time(contenders, buffers, want, flops, o);
    std::vector<ContenderResult> rows;
    for (auto &c : contenders) rows.push_back(std::move(c.row));
    return rows;
}

int compare_autoschedulers(const dsl::Graph &g, const dsl::FusionGroup &group, const std::vector<Symbols> &shapes,
                           std::ostream &out, const CompareOptions &o) {
    bool all_tessel = true, any_halide = false;
    std::vector<std::string> notes;
    out << "group " << group.name << " (" << dsl::to_string(group.kind) << ") of graph " << g.name << ", numeric mode "
        << dsl::to_string(g.mode) << ", target " << o.target.to_string() << ", median of " << o.repeats
        << " rounds, contenders interleaved call by call (spread: IQR / median)\n";
    out << std::left << std::setw(24) << "shape" << std::setw(20) << "contender" << std::right << std::setw(10) << "search s"
        << std::setw(11) << "compile s" << std::setw(12) << "median ms" << std::setw(10) << "GFLOP/s" << std::setw(16)
        << "vs best Halide" << std::setw(9) << "spread"
        << "\n";
    for (const Symbols &symbols : shapes) {
        const std::vector<ContenderResult> rows = benchmark_contenders(g, group, symbols, o);
        double best_halide = 0;
        for (const auto &r : rows)
            if (r.ok && r.name.rfind("tessel:", 0) != 0) best_halide = std::max(best_halide, 1.0 / r.median_ms);
        for (const auto &r : rows) {
            const bool tessel = r.name.rfind("tessel:", 0) == 0;
            if (tessel)
                all_tessel = all_tessel && r.ok;
            else
                any_halide = any_halide || r.ok;
            out << std::left << std::setw(24) << r.shape << std::setw(20) << r.name << std::right << std::fixed;
            if (!r.ok) {
                const bool skipped = r.message.find("GPUs only") != std::string::npos;
                out << std::setw(10) << "-" << std::setw(11) << "-" << std::setw(12) << "-" << std::setw(10) << "-"
                    << std::setw(16) << (skipped ? "n/a" : "failed") << std::setw(9) << "-"
                    << "\n";
                notes.push_back(r.shape + " " + r.name + ": " + r.message);
                continue;
            }
            std::ostringstream search;
            search << std::fixed << std::setprecision(2) << r.search_seconds;
            out << std::setw(10) << (tessel ? std::string("-") : search.str()) << std::setw(11) << std::setprecision(2)
                << r.compile_seconds << std::setw(12) << std::setprecision(3) << r.median_ms << std::setw(10)
                << std::setprecision(1) << r.gflops << std::setw(15) << std::setprecision(2)
                << (best_halide > 0 ? (1.0 / r.median_ms) / best_halide : 0.0) << "x" << std::setw(8) << std::setprecision(1)
                << r.spread * 100 << "%\n";
        }
        // Tessel schedules given by label (the tuned one) against the library's, round by round:
        // a ratio of medians would mix the rounds' drift into the verdict.
        auto timed_row = [&](const std::string &name) -> const ContenderResult * {
            for (const auto &r : rows)
                if (r.ok && r.name == "tessel:" + name) return &r;
            return nullptr;
        };
        for (const auto &[label, spec] : o.tessel_specs)
            for (const std::string &library : o.tessel_schedules) {
                const ContenderResult *a = timed_row(label), *b = timed_row(library);
                if (!a || !b || a->samples.size() != b->samples.size()) continue;
                const PairedComparison c = compare_paired(a->samples, b->samples);
                out << "  " << a->name << " vs " << b->name << ": " << std::fixed << std::setprecision(3) << c.median_ratio
                    << " (median of per-round time ratios), faster in " << c.a_faster << " of " << a->samples.size()
                    << " rounds, p = " << c.p_value << ": "
                    << (c.separated(0.95) ? (c.median_ratio < 1 ? "faster" : "slower") : "tied") << " at 95 %\n";
            }
    }
    for (const auto &n : notes) out << "  note: " << n << "\n";
    return all_tessel && any_halide ? 0 : 1;
}

}  // namespace tessel::autosched
