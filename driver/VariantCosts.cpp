// Map: compile each variant (JIT to run, ahead of time for code bytes) -> per profiled shape:
// random inputs, the variants that serve it, a checked first call, timed rounds interleaved in a fresh order each (support/Interleaved.h).
#include "driver/VariantCosts.h"

#include "codegen/ObjectCodeSize.h"
#include "dsl/passes/GroupExtents.h"
#include "lowering/CompiledGraph.h"
#include "lowering/CompiledKernel.h"
#include "support/Clock.h"
#include "support/HostLock.h"
#include "support/ErrorStats.h"
#include "support/Interleaved.h"
#include "support/Random.h"

#include <HalideBuffer.h>

#include <unistd.h>
#include <atomic>
#include <filesystem>
#include <memory>
#include <sstream>

namespace tessel {

namespace fs = std::filesystem;
using autosched::Extents;
using autosched::VariantCosts;
using Halide::Runtime::Buffer;

namespace {

/** One variant compiled to run, with its one-time costs. */
struct CompiledVariant {
    VariantCosts costs;
    std::unique_ptr<CompiledKernel> kernel;
};

/** Code bytes of `s` for every code target (objects without the runtime); `seconds` gets the
 * time generating them took. */
int64_t code_bytes(const dsl::Graph &g, const dsl::FusionGroup &group, const sched::ScheduleSpec &s,
                   const std::vector<Halide::Target> &targets, double *seconds) {
    static std::atomic<int> serial{0};
    const fs::path dir =
        fs::temp_directory_path() / ("tessel-variant-costs-" + std::to_string(::getpid()) + "-" + std::to_string(serial++));
    fs::create_directories(dir);
    int64_t bytes = 0;
    *seconds = 0;
    try {
        for (const auto &t : targets) {
            const auto t0 = SteadyClock::now();
            const CompiledKernel aot(g, group, s, t.with_feature(Halide::Target::NoRuntime), KernelBackend::AheadOfTime);
            const auto files = aot.write_files(dir, "variant", {AotOutput::Object});
            *seconds += seconds_since(t0);
            for (const auto &f : files) bytes += executable_bytes(f);
        }
    } catch (...) {
        fs::remove_all(dir);
        throw;
    }
    fs::remove_all(dir);
    return bytes;
}

CompiledVariant compile_contender(const dsl::Graph &g, const dsl::FusionGroup &group, const sched::ScheduleSpec &s,
                                  std::string name, std::vector<sched::Guard> guards, const VariantMeasureOptions &o) {
    CompiledVariant c;
    c.costs.name = std::move(name);
    c.costs.guards = std::move(guards);
    c.kernel = std::make_unique<CompiledKernel>(g, group, s, o.measure_on, KernelBackend::Jit);
    double aot_seconds = 0;
    c.costs.code_bytes =
        code_bytes(g, group, s, o.code_targets.empty() ? std::vector{o.measure_on} : o.code_targets, &aot_seconds);
    c.costs.compile_seconds = o.compile_cost == CompileCost::Jit ? c.kernel->compile_seconds() : aot_seconds;
    return c;
}

/** The group's extents at one profiled binding, for the guards. */
std::map<std::string, long> group_extents_at(const dsl::Graph &g, const dsl::FusionGroup &group, const Extents &shape) {
    const std::map<std::string, int64_t> symbols(shape.begin(), shape.end());
    const auto e = dsl::group_extents(g, group).concrete(symbols);
    if (!e)
        throw std::invalid_argument("the profiled shape " + autosched::format_extents(shape) + " leaves a size of group '" +
                                    group.name + "' unbound");
    return {e->begin(), e->end()};
}

/** Times every contender on every profiled shape its guards admit (the last contender is the
 * reference, admitted everywhere), interleaved, after checking its outputs. */
void measure_on_profile(const dsl::Graph &g, const autosched::ShapeProfile &profile, std::vector<CompiledVariant> &contenders,
                        const VariantMeasureOptions &o) {
    const CompiledVariant &reference = contenders.back();
    const auto &args = reference.kernel->arguments();
    for (const auto &entry : profile) {
        const std::map<std::string, long> extents = group_extents_at(g, reference.kernel->group(), entry.shape);
        const std::map<std::string, int64_t> symbols(entry.shape.begin(), entry.shape.end());
        std::vector<size_t> serving;
        for (size_t c = 0; c < contenders.size(); c++) {
            bool admitted = true;
            for (const auto &guard : contenders[c].costs.guards) admitted = admitted && guard.holds(extents);
            if (admitted) serving.push_back(c);
        }
        // Shared random inputs; outputs of each contender's own.
        std::vector<Buffer<float>> inputs(args.size());
        std::vector<std::vector<Buffer<float>>> outputs(contenders.size(), std::vector<Buffer<float>>(args.size()));
        std::vector<std::vector<halide_buffer_t *>> raw(contenders.size(), std::vector<halide_buffer_t *>(args.size()));
        for (size_t a = 0; a < args.size(); a++) {
            std::vector<int64_t> shape = concrete_shape(g, args[a].value, symbols);
            std::vector<int> sizes(shape.rbegin(), shape.rend());
            if (sizes.empty()) sizes.push_back(1);
            if (!args[a].is_output) {
                inputs[a] = Buffer<float>(sizes);
                fill_uniform(inputs[a], 17 + (uint32_t)a);
            }
            for (size_t c : serving) {
                if (args[a].is_output) outputs[c][a] = Buffer<float>(sizes);
                raw[c][a] = args[a].is_output ? outputs[c][a].raw_buffer() : inputs[a].raw_buffer();
            }
        }
        // The first call of each is checked against the reference (the fallback).
        for (size_t c : serving) contenders[c].kernel->run(raw[c]);
        for (size_t c : serving)
            for (size_t a = 0; a < args.size(); a++) {
                if (!args[a].is_output || c + 1 == contenders.size()) continue;
                const Buffer<float> &got = outputs[c][a], &want = outputs.back()[a];
                const ErrorStats e = compare(got.data(), want.data(), got.number_of_elements());
                if (e.max_rel > o.tolerance) {
                    std::ostringstream msg;
                    msg << "variant '" << contenders[c].costs.name << "' disagrees with '" << reference.costs.name << "' at "
                        << autosched::format_extents(entry.shape) << ": output " << args[a].name << " max relative error "
                        << e.max_rel << " > " << o.tolerance;
                    throw std::runtime_error(msg.str());
                }
            }
        // Timed together after one warm-up round, in an order drawn afresh each round.
        std::vector<Contender> timed;
        for (size_t c : serving) timed.emplace_back(contenders[c].costs.name, [&, c] { contenders[c].kernel->run(raw[c]); });
        InterleavedOptions io;
        io.stop = StoppingRule::fixed(o.repeats);
        Interleaved harness(std::move(timed), io);
        const InterleavedResult &r = harness.run();
        for (size_t k = 0; k < serving.size(); k++) contenders[serving[k]].costs.seconds_per_call[entry.shape] = r.median(k);
    }
}

}  // namespace

GroupVariantCosts measure_group_variants(const dsl::Graph &g, const dsl::FusionGroup &group, const sched::ScheduleSpec &s,
                                         const autosched::ShapeProfile &profile, const VariantMeasureOptions &o,
                                         const std::string &prefix) {
    const HostLock lock(measuring_lock_path());
    std::vector<CompiledVariant> contenders;
    for (size_t i = 0; i < s.variants.size(); i++)
        contenders.push_back(
            compile_contender(g, group, s.variant_alone(i), prefix + "_v" + std::to_string(i + 1), s.variants[i].guards, o));
    contenders.push_back(compile_contender(g, group, s.keeping_variants({}), prefix + " fallback", {}, o));
    measure_on_profile(g, profile, contenders, o);
    GroupVariantCosts out;
    for (size_t i = 0; i + 1 < contenders.size(); i++) out.candidates.push_back(std::move(contenders[i].costs));
    out.fallback = std::move(contenders.back().costs);
    return out;
}

std::vector<VariantCosts> measure_whole_kernels(const dsl::Graph &g, const dsl::FusionGroup &group,
                                                const std::vector<std::pair<std::string, sched::ScheduleSpec>> &schedules,
                                                const autosched::ShapeProfile &profile, const VariantMeasureOptions &o) {
    const HostLock lock(measuring_lock_path());
    std::vector<CompiledVariant> contenders;
    for (const auto &[name, s] : schedules) contenders.push_back(compile_contender(g, group, s, name, {}, o));
    measure_on_profile(g, profile, contenders, o);
    std::vector<VariantCosts> out;
    for (auto &c : contenders) out.push_back(std::move(c.costs));
    return out;
}

}  // namespace tessel
