// Specialization glue of `tessel lib --profile`: profile checks and the measured variant plan.
#include "driver/LibrarySpecialization.h"

#include "driver/VariantCosts.h"

#include <stdexcept>

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

std::map<std::string, std::vector<size_t>> plan_library_variants(const dsl::Graph &g, const CompiledGraph &program,
                                                                 const autosched::ShapeProfile &profile,
                                                                 const Halide::Target &measure_on,
                                                                 const std::vector<Halide::Target> &code_targets,
                                                                 const KernelLibraryOptions &o, std::ostream &out) {
    VariantMeasureOptions mo;
    mo.measure_on = measure_on.without_feature(Feature::NoRuntime);
    mo.code_targets = code_targets;
    mo.compile_cost = CompileCost::AheadOfTime;
    mo.repeats = o.repeats;
    out << "specialization: " << profile.size() << " profiled shape(s) from " << o.profile_file << "; measured on "
        << mo.measure_on.to_string() << " (" << o.repeats << " interleaved rounds), code and compile time for "
        << code_targets.size() << " target(s), compile amortized over " << o.budgets.compiles_amortized_over << " run(s)\n";
    std::vector<autosched::KernelChoices> kernels;
    for (const auto &cg : program.groups()) {
        const CompiledKernel &k = *cg.kernel;
        const GroupVariantCosts c = measure_group_variants(g, k.group(), k.schedule(), profile, mo, k.group().name);
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
