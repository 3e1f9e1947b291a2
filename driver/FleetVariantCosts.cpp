/** \file
 * FleetVariantCosts (FleetVariantCosts.h): the costs job's key, payload and result document.
 */
#include "driver/FleetVariantCosts.h"

#include <stdexcept>

#include "autoscheduler/MeasureTask.h"
#include "autoscheduler/PostgresTuningDatabase.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "schedules/ScheduleJson.h"

namespace tessel {

namespace {

using nlohmann::json;

constexpr const char *kKind = "variant-costs";

json variant_to_json(const autosched::VariantCosts &v) {
    json per_call = json::array();
    for (const auto &[shape, s] : v.seconds_per_call) per_call.push_back({shape, s});
    return {{"name", v.name},
            {"compile_seconds", v.compile_seconds},
            {"tuning_seconds", v.tuning_seconds},
            {"code_bytes", v.code_bytes},
            {"seconds_per_call", per_call}};
}

autosched::VariantCosts variant_from_json(const json &j, const std::string &name, const std::vector<sched::Guard> &guards) {
    autosched::VariantCosts v;
    v.name = name;
    v.guards = guards;
    if (j.at("name").get<std::string>() != name)
        throw std::runtime_error("stored variant costs are for '" + j.at("name").get<std::string>() + "', not '" + name + "'");
    v.compile_seconds = j.at("compile_seconds").get<double>();
    v.tuning_seconds = j.at("tuning_seconds").get<double>();
    v.code_bytes = j.at("code_bytes").get<long long>();
    for (const json &p : j.at("seconds_per_call")) v.seconds_per_call[p.at(0).get<autosched::Extents>()] = p.at(1).get<double>();
    return v;
}

}  // namespace

VariantCostsJob variant_costs_job(const dsl::Graph &g, const dsl::FusionGroup &group, const sched::ScheduleSpec &schedule,
                                  const std::string &profile_text, const VariantMeasureOptions &o) {
    const autosched::MeasureTask task = autosched::make_measure_task(g, group, {}, o.measure_on.to_string());
    json code_targets = json::array();
    for (const auto &t : o.code_targets) code_targets.push_back(t.to_string());
    VariantCostsJob job;
    job.payload = {{"kind", kKind},
                   {"graph", task.graph_text},
                   {"group", autosched::to_json(task)["group"]},
                   {"schedule", sched::to_json(schedule)},
                   {"profile", profile_text},
                   {"measure_on", o.measure_on.to_string()},
                   {"code_targets", code_targets},
                   {"compile_cost", o.compile_cost == CompileCost::AheadOfTime ? "aot" : "jit"},
                   {"repeats", o.repeats},
                   {"tolerance", o.tolerance}};
    job.key = autosched::TuningKey::current();
    job.key.group_hash = autosched::structural_hash(g, group);
    job.key.shape_class = kKind;
    json what = {job.payload["schedule"], profile_text, code_targets, job.payload["compile_cost"], o.repeats, o.tolerance};
    job.key.shapes = autosched::sha256_hex(what.dump()).substr(0, 32);
    job.key.target = o.measure_on.to_string();
    job.key.numeric_mode = autosched::to_key_string(g.mode);
    return job;
}

bool is_variant_costs_payload(const json &payload) { return payload.is_object() && payload.value("kind", "") == kKind; }

json measure_variant_costs_job(const json &p) {
    const dsl::Graph g = dsl::parse(p.at("graph").get<std::string>(), "variant-costs job");
    autosched::MeasureTask task;
    task.graph_text = p.at("graph").get<std::string>();
    json t = autosched::to_json(task);
    t["group"] = p.at("group");
    const dsl::FusionGroup group = autosched::resolve_group(g, autosched::measure_task_from_json(t).group);
    const sched::ScheduleSpec schedule = sched::schedule_from_json(p.at("schedule"));
    VariantMeasureOptions o;
    o.measure_on = Halide::Target(p.at("measure_on").get<std::string>());
    for (const json &c : p.at("code_targets")) o.code_targets.push_back(Halide::Target(c.get<std::string>()));
    o.compile_cost = p.at("compile_cost").get<std::string>() == "aot" ? CompileCost::AheadOfTime : CompileCost::Jit;
    o.repeats = p.at("repeats").get<int>();
    o.tolerance = p.at("tolerance").get<double>();
    const autosched::ShapeProfile profile = autosched::parse_shape_profile(p.at("profile").get<std::string>(), "job profile");
    return costs_to_json(measure_group_variants(g, group, schedule, profile, o, group.name));
}

json costs_to_json(const GroupVariantCosts &c) {
    json candidates = json::array();
    for (const auto &v : c.candidates) candidates.push_back(variant_to_json(v));
    return {{"candidates", candidates}, {"fallback", variant_to_json(c.fallback)}};
}

GroupVariantCosts costs_from_json(const json &j, const sched::ScheduleSpec &schedule, const std::string &prefix) {
    const json &candidates = j.at("candidates");
    if (candidates.size() != schedule.variants.size())
        throw std::runtime_error("stored variant costs have " + std::to_string(candidates.size()) + " variants, the schedule " +
                                 std::to_string(schedule.variants.size()));
    GroupVariantCosts out;
    for (size_t i = 0; i < candidates.size(); i++)
        out.candidates.push_back(
            variant_from_json(candidates[i], prefix + "_v" + std::to_string(i + 1), schedule.variants[i].guards));
    out.fallback = variant_from_json(j.at("fallback"), prefix + " fallback", {});
    return out;
}

}  // namespace tessel
