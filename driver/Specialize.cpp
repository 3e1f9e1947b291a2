#include "driver/Specialize.h"

#include "codegen/ObjectCodeSize.h"
#include "driver/GeluLayer.h"
#include "driver/TextFile.h"
#include "schedules/Library.h"
#include "support/Random.h"
#include "support/Statistics.h"

#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <map>
#include <memory>
#include <unistd.h>

namespace tessel {

namespace fs = std::filesystem;
using autosched::Extents;
using autosched::VariantCosts;
using Halide::Runtime::Buffer;

namespace {

/** Random buffers of one profiled shape, made once and shared by every variant timed on it. */
struct ShapeBuffers {
    Buffer<float> x, w, bias, y;
    explicit ShapeBuffers(const Extents &e)
        : x((int)e.at("K"), (int)e.at("M")), w((int)e.at("N"), (int)e.at("K")), bias((int)e.at("N")),
          y((int)e.at("N"), (int)e.at("M")) {
        fill_uniform(x, 1);
        fill_uniform(w, 2);
        fill_uniform(bias, 3);
    }
};

class Measurements {
public:
    Measurements(const autosched::ShapeProfile &profile, const Halide::Target &target, int repeats)
        : profile_(profile), target_(target), repeats_(repeats) {
        for (const auto &e : profile) {
            for (const char *k : {"M", "K", "N"})
                if (!e.shape.count(k))
                    throw std::invalid_argument("profile shape " + autosched::format_extents(e.shape) + " lacks " + k +
                                                " (the running example's extents are M, K, N)");
            buffers_.emplace(e.shape, std::make_unique<ShapeBuffers>(e.shape));
        }
    }

    /** A schedule's costs: compiled on its own, timed on the profiled shapes its guards admit. */
    VariantCosts measure(const std::string &name, const sched::ScheduleSpec &s, const std::vector<sched::Guard> &guards) {
        VariantCosts v;
        v.name = name;
        v.guards = guards;
        const GeluLayer layer(GeluForm::Tanh, dsl::NumericMode::Fast, s, target_);
        v.compile_seconds = layer.kernel().compile_seconds();
        v.code_bytes = code_bytes(layer, s);
        for (const auto &e : profile_) {
            bool admitted = true;
            for (const auto &g : guards) admitted = admitted && g.holds(e.shape);
            if (!admitted) continue;
            ShapeBuffers &b = *buffers_.at(e.shape);
            v.seconds_per_call[e.shape] = median_seconds([&] { layer.run(b.x, b.w, b.bias, b.y); }, repeats_);
        }
        return v;
    }

private:
    const autosched::ShapeProfile &profile_;
    Halide::Target target_;
    int repeats_;
    std::map<Extents, std::unique_ptr<ShapeBuffers>> buffers_;

    int64_t code_bytes(const GeluLayer &layer, const sched::ScheduleSpec &s) const {
        const fs::path dir = fs::temp_directory_path() / ("tessel-specialize-" + std::to_string(::getpid()));
        fs::create_directories(dir);
        const CompiledKernel aot(layer.graph(), layer.group(), s, target_, KernelBackend::AheadOfTime);
        int64_t bytes = 0;
        for (const auto &f : aot.write_files(dir, "variant", {AotOutput::Object})) bytes += executable_bytes(f);
        fs::remove_all(dir);
        return bytes;
    }
};

sched::ScheduleSpec only_fallback(const sched::ScheduleSpec &s) {
    sched::ScheduleSpec f = s;
    f.variants.clear();
    return f;
}

sched::ScheduleSpec variant_alone(const sched::ScheduleSpec &s, size_t i) {
    sched::ScheduleSpec v = s;
    v.variants.clear();
    v.steps = s.variants[i].steps;
    return v;
}

/** Σ calls x time + one-time costs of a whole (dispatching) kernel, measured. */
double measured_total(const autosched::ShapeProfile &profile, const VariantCosts &whole,
                      const autosched::PlannerBudgets &b) {
    double t = whole.compile_seconds / b.compiles_amortized_over;
    for (const auto &e : profile) t += e.calls * whole.seconds_per_call.at(e.shape);
    return t;
}

}  // namespace

int specialize(const SpecializeOptions &o, std::ostream &out) {
    const autosched::ShapeProfile profile = autosched::parse_shape_profile(read_text_file(o.profile_file), o.profile_file);
    if (profile.empty()) throw std::invalid_argument(o.profile_file + ": the profile has no shapes");
    const Halide::Target target = parse_target(o.target);
    const sched::ScheduleSpec spec = sched::library_schedule(o.schedule, target);
    if (spec.device != sched::Device::Cpu) throw std::invalid_argument("tessel specialize measures CPU schedules; '" + o.schedule + "' is not one");
    Measurements m(profile, target, o.repeats);

    out << "specialize: gelu_tanh(x @ w + bias), fast mode, schedule '" << spec.name << "' on " << target.to_string()
        << "; " << spec.variants.size() << " guarded variants + fallback, " << profile.size() << " profiled shapes, "
        << o.repeats << " timed calls per shape\n";
    std::vector<VariantCosts> candidates;
    for (size_t i = 0; i < spec.variants.size(); i++)
        candidates.push_back(m.measure(spec.name + "_v" + std::to_string(i + 1), variant_alone(spec, i), spec.variants[i].guards));
    const VariantCosts fallback = m.measure(spec.name + " fallback", only_fallback(spec), {});

    out << "measured costs (compile s, code bytes from the object, then ms per call on the shapes it serves):\n";
    for (const VariantCosts *v : [&] {
             std::vector<const VariantCosts *> all;
             for (const auto &c : candidates) all.push_back(&c);
             all.push_back(&fallback);
             return all;
         }()) {
        std::string guards;
        for (const auto &g : v->guards) guards += (guards.empty() ? "" : " && ") + g.to_string();
        out << "  " << std::left << std::setw(18) << v->name << std::right << " [" << (guards.empty() ? "any shape" : guards)
            << "] compile " << std::fixed << std::setprecision(3) << v->compile_seconds << " s, code " << v->code_bytes
            << " B:";
        for (const auto &[shape, sec] : v->seconds_per_call) out << "  M=" << shape.at("M") << " " << sec * 1e3 << " ms";
        out << "\n" << std::defaultfloat;
    }

    const autosched::SpecializationPlan plan = autosched::plan_specializations(profile, candidates, fallback, o.budgets);
    out << plan.to_string(candidates, fallback);
    if (!plan.feasible) return 1;

    // Check the choice by measurement: each alternative compiled whole, dispatch included.
    sched::ScheduleSpec chosen = only_fallback(spec);
    for (size_t i : plan.chosen) chosen.variants.push_back(spec.variants[i]);
    struct Alternative {
        const char *label;
        sched::ScheduleSpec spec;
        bool within_budget;
    };
    const Alternative alternatives[] = {
        {"this plan", chosen, plan.totals.within_budget},
        {"fallback only", only_fallback(spec), plan.fallback_only.within_budget},
        {"every variant", spec, plan.every_candidate.within_budget},
    };
    out << "measured afterwards (each kernel compiled whole; expected total = calls x measured time + compile / "
        << o.budgets.compiles_amortized_over << "):\n";
    double plan_total = 0;
    std::vector<double> others;
    for (const auto &a : alternatives) {
        const VariantCosts whole = m.measure(a.label, a.spec, {});
        const double total = measured_total(profile, whole, o.budgets);
        out << "  " << std::left << std::setw(14) << a.label << std::right << " " << std::fixed << std::setprecision(4)
            << total << " s (compile " << whole.compile_seconds << " s, code " << whole.code_bytes << " B)"
            << (a.within_budget ? "" : " over budget") << "\n" << std::defaultfloat;
        if (&a == &alternatives[0]) plan_total = total;
        else if (a.within_budget) others.push_back(total);
    }
    out << "regret of the plan against the best measured alternative within budget: " << std::fixed << std::setprecision(1)
        << autosched::regret(plan_total, others) * 100 << " %\n" << std::defaultfloat;
    return 0;
}

}  // namespace tessel
