#include "driver/Specialize.h"

#include "algorithms/GeluMlp.h"
#include "driver/GeluLayer.h"
#include "driver/TextFile.h"
#include "driver/VariantCosts.h"
#include "dsl/Simplify.h"
#include "schedules/Library.h"

#include <iomanip>

namespace tessel {

using autosched::VariantCosts;

namespace {

/** Σ calls x time + compile / starts of a whole (dispatching) kernel, measured. */
double measured_total(const autosched::ShapeProfile &profile, const VariantCosts &whole, const autosched::PlannerBudgets &b) {
    double t = whole.compile_seconds / b.compiles_amortized_over;
    for (const auto &e : profile) t += e.calls * whole.seconds_per_call.at(e.shape);
    return t;
}

void print_costs(std::ostream &out, const VariantCosts &v) {
    out << "  " << std::left << std::setw(18) << v.name << std::right << " [" << v.guards_text() << "] compile " << std::fixed
        << std::setprecision(3) << v.compile_seconds << " s, code " << v.code_bytes << " B:";
    for (const auto &[shape, sec] : v.seconds_per_call) out << "  M=" << shape.at("M") << " " << sec * 1e3 << " ms";
    out << "\n" << std::defaultfloat;
}

}  // namespace

int specialize(const SpecializeOptions &o, std::ostream &out) {
    const autosched::ShapeProfile profile = autosched::parse_shape_profile(read_text_file(o.profile_file), o.profile_file);
    if (profile.empty()) throw std::invalid_argument(o.profile_file + ": the profile has no shapes");
    for (const auto &e : profile)
        for (const char *k : {"M", "K", "N"})
            if (!e.shape.count(k))
                throw std::invalid_argument("profile shape " + autosched::format_extents(e.shape) + " lacks " + k +
                                            " (the running example's extents are M, K, N)");
    const Halide::Target target = parse_target(o.target);
    const sched::ScheduleSpec spec = sched::library_schedule(o.schedule, target);
    if (spec.device != sched::Device::Cpu)
        throw std::invalid_argument("tessel specialize measures CPU schedules; '" + o.schedule + "' is not one");
    const dsl::Graph graph = dsl::simplify_graph(gelu_mlp_layer(true, dsl::NumericMode::Fast)).graph;
    const dsl::FusionGroup group = gelu_layer_group(graph, target);
    VariantMeasureOptions mo;
    mo.measure_on = target;
    mo.repeats = o.repeats;

    out << "specialize: gelu_tanh(x @ w + bias), fast mode, schedule '" << spec.name << "' on " << target.to_string() << "; "
        << spec.variants.size() << " guarded variants + fallback, " << profile.size() << " profiled shapes, " << o.repeats
        << " timed rounds per shape (variants interleaved call by call)\n";
    const GroupVariantCosts costs = measure_group_variants(graph, group, spec, profile, mo, spec.name);
    out << "measured costs (JIT compile s, code bytes from the object, then ms per call on the shapes it serves):\n";
    for (const auto &c : costs.candidates) print_costs(out, c);
    print_costs(out, costs.fallback);

    const std::vector<autosched::KernelChoices> kernels = {{"", costs.candidates, costs.fallback}};
    const autosched::SpecializationPlan plan = autosched::plan_specializations(profile, kernels, o.budgets);
    out << plan.to_string(kernels);
    if (!plan.feasible) return 1;

    // Check the choice by measurement: each alternative compiled whole, dispatch included, timed
    // interleaved with the others.
    std::vector<size_t> every(spec.variants.size());
    for (size_t i = 0; i < every.size(); i++) every[i] = i;
    const std::vector<std::pair<std::string, sched::ScheduleSpec>> alternatives = {
        {"this plan", spec.keeping_variants(plan.chosen[0])},
        {"fallback only", spec.keeping_variants({})},
        {"every variant", spec.keeping_variants(every)},
    };
    const bool within_budget[] = {plan.totals.within_budget, plan.fallback_only.within_budget,
                                  plan.every_candidate.within_budget};
    out << "measured afterwards (each kernel compiled whole; expected total = calls x measured time + compile / "
        << o.budgets.compiles_amortized_over << "):\n";
    const std::vector<VariantCosts> whole = measure_whole_kernels(graph, group, alternatives, profile, mo);
    double plan_total = 0;
    std::vector<double> others;
    for (size_t a = 0; a < whole.size(); a++) {
        const double total = measured_total(profile, whole[a], o.budgets);
        out << "  " << std::left << std::setw(14) << whole[a].name << std::right << " " << std::fixed << std::setprecision(4)
            << total << " s (compile " << whole[a].compile_seconds << " s, code " << whole[a].code_bytes << " B)"
            << (within_budget[a] ? "" : " over budget") << "\n"
            << std::defaultfloat;
        if (a == 0)
            plan_total = total;
        else if (within_budget[a])
            others.push_back(total);
    }
    out << "regret of the plan against the best measured alternative within budget: " << std::fixed << std::setprecision(1)
        << autosched::regret(plan_total, others) * 100 << " %\n"
        << std::defaultfloat;
    return 0;
}

}  // namespace tessel
