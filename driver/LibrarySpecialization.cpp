// Specialization glue of `tessel lib --profile`: profile checks and the measured variant plan.
#include "driver/LibrarySpecialization.h"

#include "autoscheduler/JobQueue.h"
#include "driver/FleetVariantCosts.h"
#include "driver/TextFile.h"
#include "driver/VariantCosts.h"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

namespace tessel {

using Feature = Halide::Target::Feature;

void check_profile_symbols(const autosched::ShapeProfile &profile, const std::set<std::string> &symbols,
                           const std::string &file) {
    for (const auto &e : profile) {
        for (const auto &[name, size] : e.shape)
            if (!symbols.count(name))
                throw std::invalid_argument(file + ": shape " + autosched::format_extents(e.shape) + " binds '" + name +
                                            "', which is not a symbol of the graph");
        for (const auto &sym : symbols)
            if (!e.shape.count(sym))
                throw std::invalid_argument(file + ": shape " + autosched::format_extents(e.shape) +
                                            " does not bind the graph's symbol " + sym);
    }
}

std::optional<std::map<std::string, std::vector<size_t>>> plan_library_variants(
    const dsl::Graph &g, const CompiledGraph &program, const autosched::ShapeProfile &profile, const Halide::Target &measure_on,
    const std::vector<Halide::Target> &code_targets, const KernelLibraryOptions &o, std::ostream &out) {
    VariantMeasureOptions mo;
    mo.measure_on = measure_on.without_feature(Feature::NoRuntime);
    mo.code_targets = code_targets;
    mo.compile_cost = CompileCost::AheadOfTime;
    mo.repeats = o.repeats;
    out << "specialization: " << profile.size() << " profiled shape(s) from " << o.profile_file << "; measured on "
        << mo.measure_on.to_string() << " (" << o.repeats << " interleaved rounds), code and compile time for "
        << code_targets.size() << " target(s), compile amortized over " << o.budgets.compiles_amortized_over << " run(s)\n";
    // On a server: costs a worker measured (or an earlier build stored) are used; with --enqueue
    // the missing ones become jobs instead of being measured here.
    std::unique_ptr<autosched::JobQueue> queue;
    if (autosched::is_postgres_url(o.db)) queue = std::make_unique<autosched::JobQueue>(o.db);
    if (o.enqueue && !queue)
        throw std::invalid_argument("tessel lib --enqueue needs a server: --db postgresql://user@host:port/dbname (got '" + o.db +
                                    "')");
    const std::string profile_text = queue ? read_text_file(o.profile_file) : "";
    std::vector<autosched::JobSpec> jobs;
    std::vector<VariantCostsJob> wanted;
    for (const auto &cg : program.groups()) {
        const CompiledKernel &k = *cg.kernel;
        if (!queue) continue;
        wanted.push_back(variant_costs_job(g, k.group(), k.schedule(), profile_text, mo));
        if (!queue->variant_costs(wanted.back().key) && o.enqueue)
            jobs.push_back(autosched::JobSpec{wanted.back().key, "", wanted.back().payload, 3});
    }
    if (!jobs.empty()) {
        const int64_t added = queue->enqueue(jobs);
        out << "enqueued " << added << " variant-costs job" << (added == 1 ? "" : "s") << " on " << queue->store().location()
            << " for target " << mo.measure_on.to_string() << " (" << (int64_t)jobs.size() - added
            << " already queued); run `tessel worker --db URL` on hosts of that target\n";
        if (!o.wait) return std::nullopt;
        std::vector<autosched::TuningKey> keys;
        for (const auto &j : jobs) keys.push_back(j.key);
        for (;;) {
            const autosched::QueueStatus s = queue->status_of(keys);
            if (s.queued + s.running == 0) {
                for (const auto &[id, error] : s.failures)
                    throw std::runtime_error("tessel lib: variant-costs job " + std::to_string(id) + " failed: " + error);
                break;
            }
            std::this_thread::sleep_for(std::chrono::seconds(1));
        }
        out << "every variant-costs job is done\n";
    }
    std::vector<autosched::KernelChoices> kernels;
    size_t group_index = 0;
    for (const auto &cg : program.groups()) {
        const CompiledKernel &k = *cg.kernel;
        std::optional<nlohmann::json> stored;
        if (queue) stored = queue->variant_costs(wanted[group_index].key);
        group_index++;
        if (stored) out << "  " << k.group().name << ": costs measured by a worker, from " << queue->store().location() << "\n";
        const GroupVariantCosts c = stored ? costs_from_json(*stored, k.schedule(), k.group().name)
                                           : measure_group_variants(g, k.group(), k.schedule(), profile, mo, k.group().name);
        kernels.push_back({k.group().name, c.candidates, c.fallback});
        for (const auto *v : [&] {
                 std::vector<const autosched::VariantCosts *> all;
                 for (const auto &x : kernels.back().candidates) all.push_back(&x);
                 all.push_back(&kernels.back().fallback);
                 return all;
             }()) {
            out << "  " << v->name << " [" << v->guards_text() << "]: compile " << v->compile_seconds << " s, code "
                << v->code_bytes << " B;";
            for (const auto &[shape, sec] : v->seconds_per_call)
                out << " " << autosched::format_extents(shape) << ": " << sec * 1e3 << " ms;";
            out << "\n";
        }
    }
    const autosched::SpecializationPlan plan = autosched::plan_specializations(profile, kernels, o.budgets);
    out << plan.to_string(kernels);
    if (!plan.feasible) throw std::invalid_argument("tessel lib: " + plan.infeasible_reason);
    std::map<std::string, std::vector<size_t>> kept;
    for (size_t k = 0; k < kernels.size(); k++) kept[kernels[k].kernel] = plan.chosen[k];
    return kept;
}

}  // namespace tessel
