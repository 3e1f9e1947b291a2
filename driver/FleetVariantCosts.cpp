/** \file
 * FleetVariantCosts (FleetVariantCosts.h): the costs job's key, payload and result document.
 */
#include "driver/FleetVariantCosts.h"

#include <cmath>
#include <stdexcept>

#include "autoscheduler/MeasureTask.h"
#include "autoscheduler/PostgresTuningDatabase.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "schedules/ScheduleJson.h"
#include "support/JsonField.h"

namespace tessel {

namespace {

using nlohmann::json;

json variant_to_json(const autosched::VariantCosts &v) {
    json per_call = json::array();
    for (const auto &[shape, s] : v.seconds_per_call) per_call.push_back({shape, s});
    return {{"name", v.name},
            {"compile_seconds", v.compile_seconds},
            {"tuning_seconds", v.tuning_seconds},
            {"code_bytes", v.code_bytes},
            {"seconds_per_call", per_call}};
}

/** A stored result's field: std::runtime_error with the field's path, like costs_from_json's. */
template <typename T>
T result_field(const json &j, const char *name, const std::string &path) {
    return json_field<T, std::runtime_error>(j, name, path);
}

/** A time that a cost can be (`path` names it): a number, finite and not negative. */
double cost_seconds(const json &v, const std::string &path) {
    double seconds = 0;
    std::string why;
    if (!json_as(v, path, &seconds, &why)) throw std::runtime_error(why);
    if (!std::isfinite(seconds) || seconds < 0) throw std::runtime_error(path + ": " + json_quote(v) + " is not a time");
    return seconds;
}

double cost_field(const json &j, const char *name, const std::string &path) {
    return cost_seconds(result_field<json>(j, name, path), path + "." + name);
}

autosched::VariantCosts variant_from_json(const json &j, const std::string &name, const std::vector<sched::Guard> &guards,
                                          const std::string &path) {
    autosched::VariantCosts v;
    v.name = name;
    v.guards = guards;
    const std::string stored = result_field<std::string>(j, "name", path);
    if (stored != name)
        throw std::runtime_error(path + ".name: the costs are for " + json_quote(json(stored)) + ", not " +
                                 json_quote(json(name)));
    v.compile_seconds = cost_field(j, "compile_seconds", path);
    v.tuning_seconds = cost_field(j, "tuning_seconds", path);
    v.code_bytes = result_field<long long>(j, "code_bytes", path);
    if (v.code_bytes < 0) throw std::runtime_error(path + ".code_bytes: " + std::to_string(v.code_bytes) + " is not a size");
    const auto per_call = result_field<std::vector<json>>(j, "seconds_per_call", path);
    for (size_t i = 0; i < per_call.size(); i++) {
        const std::string at = path + ".seconds_per_call[" + std::to_string(i) + "]";
        const json &pair = per_call[i];
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_object())
            throw std::runtime_error(at + ": expected [shape, seconds], found " + json_quote(pair));
        autosched::Extents shape;
        for (const auto &[symbol, extent] : pair[0].items()) {
            const long e = result_field<long>(pair[0], symbol.c_str(), at + "[0]");
            if (e < 1) throw std::runtime_error(at + "[0]." + symbol + ": " + std::to_string(e) + " is not a size (>= 1)");
            shape[symbol] = e;
        }
        v.seconds_per_call[shape] = cost_seconds(pair[1], at + "[1]");
    }
    return v;
}

}  // namespace

VariantCostsJob variant_costs_job(const dsl::Graph &g, const dsl::FusionGroup &group, const sched::ScheduleSpec &schedule,
                                  const std::string &profile_text, const VariantMeasureOptions &o) {
    const autosched::MeasureTask task = autosched::make_measure_task(g, group, {}, o.measure_on.to_string());
    VariantCostsJob job;
    job.payload = VariantCostsRequest{task.graph_text, task.group, schedule, profile_text, o}.to_json();
    job.key = autosched::TuningKey::current();
    job.key.group_hash = autosched::structural_hash(g, group);
    job.key.shape_class = VariantCostsRequest::kKind;
    json what = {job.payload["schedule"],     profile_text, job.payload["code_targets"],
                 job.payload["compile_cost"], o.repeats,    o.tolerance};
    job.key.shapes = autosched::sha256_hex(what.dump()).substr(0, 32);
    job.key.target = o.measure_on.to_string();
    job.key.numeric_mode = autosched::to_key_string(g.mode);
    return job;
}

json measure_variant_costs_job(const json &p) {
    const VariantCostsRequest r = VariantCostsRequest::from_json(p);
    const dsl::Graph g = dsl::parse(r.graph_text, "variant-costs job");
    const dsl::FusionGroup group = autosched::resolve_group(g, r.group);
    const autosched::ShapeProfile profile = autosched::parse_shape_profile(r.profile_text, "job profile");
    return costs_to_json(measure_group_variants(g, group, r.schedule, profile, r.options, group.name));
}

json costs_to_json(const GroupVariantCosts &c) {
    json candidates = json::array();
    for (const auto &v : c.candidates) candidates.push_back(variant_to_json(v));
    return {{"candidates", candidates}, {"fallback", variant_to_json(c.fallback)}};
}

GroupVariantCosts costs_from_json(const json &j, const sched::ScheduleSpec &schedule, const std::string &prefix,
                                  const std::string &path) {
    const auto candidates = result_field<std::vector<json>>(j, "candidates", path);
    if (candidates.size() != schedule.variants.size())
        throw std::runtime_error(path + ".candidates: " + std::to_string(candidates.size()) + " variants, the schedule has " +
                                 std::to_string(schedule.variants.size()));
    GroupVariantCosts out;
    for (size_t i = 0; i < candidates.size(); i++)
        out.candidates.push_back(variant_from_json(candidates[i], prefix + "_v" + std::to_string(i + 1),
                                                   schedule.variants[i].guards, path + ".candidates[" + std::to_string(i) + "]"));
    out.fallback = variant_from_json(result_field<json>(j, "fallback", path), prefix + " fallback", {}, path + ".fallback");
    return out;
}

}  // namespace tessel
