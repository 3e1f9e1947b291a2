#include "driver/VariantCostsPayload.h"

#include <cmath>

#include "autoscheduler/JobPayload.h"
#include "schedules/ScheduleJson.h"
#include "support/JsonField.h"

namespace tessel {

namespace {

using autosched::JobPayloadError;
using nlohmann::json;

/** A job payload's field: JobPayloadError with the field's path, like the tuning jobs'. */
template <typename T>
T payload_field(const json &j, const char *name, const std::string &path) {
    return json_field<T, JobPayloadError>(j, name, path);
}

/** A Halide target string (`path` names it), validated before Halide parses it. */
Halide::Target target_value(const json &v, const std::string &path) {
    std::string text, why;
    if (!json_as(v, path, &text, &why)) throw JobPayloadError(why);
    if (!Halide::Target::validate_target_string(text))
        throw JobPayloadError(path + ": " + json_quote(json(text)) + " is not a Halide target");
    return Halide::Target(text);
}

}  // namespace

json VariantCostsRequest::to_json() const {
    json code_targets = json::array();
    for (const auto &t : options.code_targets) code_targets.push_back(t.to_string());
    return {{"kind", kKind},
            {"graph", graph_text},
            {"group", autosched::to_json(group)},
            {"schedule", sched::to_json(schedule)},
            {"profile", profile_text},
            {"measure_on", options.measure_on.to_string()},
            {"code_targets", code_targets},
            {"compile_cost", options.compile_cost == CompileCost::AheadOfTime ? "aot" : "jit"},
            {"repeats", options.repeats},
            {"tolerance", options.tolerance}};
}

VariantCostsRequest VariantCostsRequest::from_json(const json &p, const std::string &path) {
    VariantCostsRequest r;
    r.graph_text = payload_field<std::string>(p, "graph", path);
    r.group = autosched::measure_group_from_json(payload_field<json>(p, "group", path), path + ".group");
    r.schedule = sched::schedule_from_json(payload_field<json>(p, "schedule", path));
    r.profile_text = payload_field<std::string>(p, "profile", path);
    VariantMeasureOptions &o = r.options;
    o.measure_on = target_value(payload_field<json>(p, "measure_on", path), path + ".measure_on");
    const auto targets = payload_field<std::vector<json>>(p, "code_targets", path);
    for (size_t i = 0; i < targets.size(); i++)
        o.code_targets.push_back(target_value(targets[i], path + ".code_targets[" + std::to_string(i) + "]"));
    const std::string cost = payload_field<std::string>(p, "compile_cost", path);
    if (cost != "aot" && cost != "jit")
        throw JobPayloadError(path + ".compile_cost: " + json_quote(json(cost)) + " is neither \"aot\" nor \"jit\"");
    o.compile_cost = cost == "aot" ? CompileCost::AheadOfTime : CompileCost::Jit;
    o.repeats = payload_field<int>(p, "repeats", path);
    if (o.repeats < 1) throw JobPayloadError(path + ".repeats: " + std::to_string(o.repeats) + " is below 1");
    o.tolerance = payload_field<double>(p, "tolerance", path);
    if (!(o.tolerance > 0) || !std::isfinite(o.tolerance))
        throw JobPayloadError(path + ".tolerance: " + json_quote(p.at("tolerance")) + " is not a positive tolerance");
    return r;
}

bool is_variant_costs_payload(const json &payload) {
    // A "kind" of another type is not this payload's (value() would throw on it).
    if (!payload.is_object()) return false;
    const auto kind = payload.find("kind");
    return kind != payload.end() && kind->is_string() && kind->get<std::string>() == VariantCostsRequest::kKind;
}

}  // namespace tessel
