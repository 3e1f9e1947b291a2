#include "compiler/ScheduleSelection.h"

#include "autoscheduler/AttentionSpace.h"
#include "autoscheduler/GroupKindSpace.h"
#include "autoscheduler/MachineProbes.h"
#include "autoscheduler/TuningStore.h"
#include "dsl/ir/Numerics.h"
#include "dsl/passes/GroupExtents.h"
#include "lowering/ElementwiseProgram.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/ScheduleJson.h"

#include <iostream>
#include <stdexcept>

namespace tessel {

namespace {

sched::Device device_of(const Halide::Target &t) { return t.has_gpu_feature() ? sched::Device::Cuda : sched::Device::Cpu; }

/** A database's lookups without its commits (a read-only database, or none at all). */
class LookupOnlyCache : public autosched::TuningCache {
public:
    explicit LookupOnlyCache(autosched::TuningStore *db) : db_(db) {}
    std::optional<autosched::TuningRecord> lookup(const autosched::TuningKey &key) override {
        return db_ ? db_->lookup(key) : std::nullopt;
    }
    void commit(const autosched::TuningRecord &) override {}
    std::vector<autosched::TuningRecord> top_k(const autosched::TuningKey &key, int k) override {
        return db_ ? db_->top_k(key, k) : std::vector<autosched::TuningRecord>{};
    }

private:
    autosched::TuningStore *db_;
};

}  // namespace

std::string ScheduleChoice::label() const { return "schedule '" + spec.name + "' [" + to_string(provenance) + "]"; }

std::optional<autosched::Workload> group_workload(const dsl::Graph &g, const dsl::FusionGroup &group,
                                                  const std::map<std::string, int64_t> &symbols,
                                                  const lower::LoweredGroup *lowered) {
    const bool matmul = group.kind == dsl::GroupKind::MatmulEpilogue;
    // The attention backward has no search space yet: the library's nest serves it.
    if (group.kind == dsl::GroupKind::AttentionBackward) return std::nullopt;
    const dsl::GroupExtents extents = dsl::group_extents(g, group);
    if (matmul && !(extents.has("M") && extents.has("K") && extents.has("N"))) return std::nullopt;
    std::optional<lower::LoweredGroup> own;
    if (!lowered) lowered = &own.emplace(lower::lower_group(g, group));
    if (group.kind == dsl::GroupKind::Attention)
        return autosched::attention_workload(g, group, lower::group_shape(*lowered), symbols);
    if (!matmul) return autosched::group_kind_workload(g, group, lower::group_shape(*lowered), symbols);
    const auto e = extents.concrete(symbols);
    if (!e) return std::nullopt;
    autosched::Workload w{e->at("M"), e->at("K"), e->at("N")};
    autosched::add_epilogue_cost(g, group.nodes, w);
    // How w is stored: the search space offers the nests that read its panels in place.
    w.rhs_panel_width = lowered->rhs_panel_width;
    return w;
}

std::string schedule_refusal(const dsl::Graph &g, const dsl::FusionGroup &group, const sched::ScheduleSpec &spec,
                             const Halide::Target &target) {
    if (spec.program) {  // an elementwise program: no steps to apply, but not every group can be one
        if (!spec.steps.empty() || !spec.variants.empty())
            return "schedule '" + spec.name + "' is an elementwise program with steps or variants (a program has none)";
        if (auto why = lower::program_refusal(g, group)) return group.name + " cannot run as an elementwise program: " + *why;
        return "";
    }
    // As CompiledKernel builds it: in exact mode the variants that split a reduction are left out.
    const bool split_ok = dsl::allows_split_reductions(g.mode);
    try {
        for (size_t i = 0; i <= spec.variants.size(); i++) {
            const bool fallback = i == spec.variants.size();
            const auto &steps = fallback ? spec.steps : spec.variants[i].steps;
            if (!fallback && !split_ok && std::any_of(steps.begin(), steps.end(), [](const sched::Directive &d) {
                    return std::holds_alternative<sched::RFactor>(d);
                }))
                continue;
            lower::LoweredGroup fresh = lower::lower_group(g, group);
            lower::apply_to_group(steps, fresh, target, spec.name);
        }
    } catch (const sched::ScheduleError &e) {
        return e.what();
    }
    return "";
}

/** The database (read-only where it cannot be written), the machine's numbers and the cost
 * model, opened once for every group the selection serves. */
struct ScheduleSelection::Tuning {
    std::unique_ptr<autosched::TuningStore> db;
    std::unique_ptr<autosched::AnalyticalCostModel> model;
    std::optional<autosched::MachineNumbers> numbers;
    dsl::LayoutRates layout_rates = dsl::LayoutRates::defaults();
    std::unique_ptr<LookupOnlyCache> lookup_only;
    std::unique_ptr<autosched::IsolatedMeasurer> measurer;

    Tuning(const std::string &path, const Halide::Target &target, bool measure) {
        std::string note;
        db = autosched::open_tuning_store_for_reading(path, &note);
        // Said once per process: every command that looks schedules up opens the database.
        static bool noted = false;
        if (!note.empty() && !noted) {
            std::cerr << "tessel: " << note << "\n";
            noted = true;
        }
        // This machine's numbers and layout rates when stored (`tessel db probe`, `tessel tune`);
        // nominal and the defaults otherwise. Rates stored but unusable are never used: the
        // defaults are, and they say why.
        if (db && !target.has_gpu_feature()) {
            const std::string machine = autosched::machine_identity(), isa = autosched::probe_isa(target);
            numbers = db->machine_numbers(machine, isa);
            try {
                if (auto stored = db->layout_rates(machine, isa)) layout_rates = *stored;
            } catch (const autosched::TuningDatabaseError &e) {
                layout_rates.source += "; " + std::string(e.what());
            }
        }
        model =
            std::make_unique<autosched::AnalyticalCostModel>(autosched::TargetModel::for_target(target).with_numbers(numbers));
        lookup_only = std::make_unique<LookupOnlyCache>(db.get());
        if (measure && !target.has_gpu_feature()) measurer = std::make_unique<autosched::IsolatedMeasurer>();
    }
    autosched::TuningCache *cache() const {
        return db && db->writable() ? static_cast<autosched::TuningCache *>(db.get()) : lookup_only.get();
    }
};

ScheduleSelection::ScheduleSelection(const Halide::Target &target, ScheduleSelectionOptions options)
    : target_(target), options_(std::move(options)) {
    if (!options_.user_schedule.empty()) {
        try {
            user_ = sched::resolve_group_schedule(options_.user_schedule, target_);
        } catch (const sched::ScheduleJsonError &e) {
            throw std::invalid_argument("--schedule " + options_.user_schedule + ": " + e.what());
        }
        if (user_->device != device_of(target_))
            throw std::invalid_argument("schedule '" + options_.user_schedule + "' is for " + sched::to_string(user_->device) +
                                        " but target " + target_.to_string() + " is " + sched::to_string(device_of(target_)));
    }
}

ScheduleSelection::~ScheduleSelection() = default;
ScheduleSelection::ScheduleSelection(ScheduleSelection &&) noexcept = default;

ScheduleSelection::Tuning &ScheduleSelection::tuning() const {
    if (!tuning_) tuning_ = std::make_unique<Tuning>(options_.db, target_, options_.measure);
    return *tuning_;
}

dsl::LayoutRates ScheduleSelection::layout_rates() const {
    return options_.db.empty() ? dsl::LayoutRates::defaults() : tuning().layout_rates;
}

std::optional<ScheduleChoice> ScheduleSelection::autoschedule(const dsl::Graph &g, const dsl::FusionGroup &group,
                                                              const std::map<std::string, int64_t> &symbols,
                                                              const lower::LoweredGroup &probe) const {
    const auto w = group_workload(g, group, symbols, &probe);
    if (!w) return std::nullopt;
    const Tuning &t = tuning();
    autosched::TunerParams params;
    params.machine = t.numbers;
    params.measure = t.measurer != nullptr;
    autosched::Tuner tuner(*t.model, t.measurer.get(), t.cache(), params);
    autosched::TuneRequest request;
    request.graph = &g;
    request.group = group;
    request.symbols = symbols;
    request.workload = *w;
    request.target = target_;
    autosched::TuneResult r = tuner.tune(request, params.measure ? options_.log : nullptr);
    if (r.schedule.steps.empty()) return std::nullopt;
    ScheduleChoice c;
    c.spec = std::move(r.schedule);
    c.provenance = r.source;
    c.reason = r.decision.empty() ? std::string(to_string(r.source)) + " at " + w->to_string() : r.decision;
    if (options_.log)
        *options_.log << "autoscheduler for " << group.name << " at " << w->to_string() << ": " << r.decision
                      << (r.params.nest == autosched::NestFamily::None ? "" : " (" + r.params.to_string() + ")") << "\n";
    return c;
}

bool ScheduleSelection::has_database_record(const dsl::Graph &g, const dsl::FusionGroup &group,
                                            const autosched::Workload &workload) const {
    if (user_ || !options_.autoschedule || options_.db.empty()) return false;
    autosched::TuneRequest request;
    request.graph = &g;
    request.group = group;
    request.workload = workload;
    request.target = target_;
    return tuning().cache()->lookup(autosched::Tuner::key_for(request)).has_value();
}

ScheduleChoice ScheduleSelection::choose(const dsl::Graph &g, const dsl::FusionGroup &group,
                                         const std::map<std::string, int64_t> &symbols, const lower::LoweredGroup &probe) const {
    std::string refused;
    auto accept = [&](ScheduleChoice c) -> std::optional<ScheduleChoice> {
        const std::string why = schedule_refusal(g, group, c.spec, target_);
        if (why.empty()) {
            c.refused = refused;
            return c;
        }
        refused = "schedule '" + c.spec.name + "': " + why;
        return std::nullopt;
    };

    if (user_ && probe.kind == user_->group) {
        ScheduleChoice c{user_->for_group(lower::group_shape(probe), target_), ScheduleProvenance::User,
                         "--schedule " + options_.user_schedule, ""};
        if (auto ok = accept(std::move(c))) return *ok;
        if (!options_.user_fallback)
            throw std::invalid_argument("--schedule " + options_.user_schedule + " does not apply to group " + group.name + " [" +
                                        dsl::to_string(group.kind) + "]: " + refused +
                                        " (pass --schedule-fallback to use the default schedule for such groups)");
    } else if (!user_ && options_.autoschedule && !options_.db.empty()) {
        if (auto c = autoschedule(g, group, symbols, probe))
            if (auto ok = accept(std::move(*c))) return *ok;
    }

    ScheduleChoice c;
    c.provenance = ScheduleProvenance::LibraryDefault;
    c.refused = refused;
    const std::string name = sched::default_library_schedule(group.kind, device_of(target_));
    c.spec = name.empty() ? lower::default_group_schedule(probe, target_) : lower::library_schedule_for(name, probe, target_);
    c.reason = "the library default for " + std::string(dsl::to_string(group.kind)) + " groups on " +
               sched::to_string(device_of(target_));
    if (!schedule_refusal(g, group, c.spec, target_).empty()) {
        c.spec = lower::default_group_schedule(probe, target_);
        c.reason = "the always-applicable group-generic default";
    }
    return c;
}

}  // namespace tessel
