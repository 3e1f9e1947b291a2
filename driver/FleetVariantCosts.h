/** \file
 * `tessel lib --profile --enqueue`: a group's variant costs (driver/VariantCosts.h) measured by a
 * `tessel worker` instead of here, and kept on the tuning server for every later build.
 *
 * A costs job carries what measure_group_variants() needs, as values: the planned graph's text
 * and the group (autoscheduler/MeasureTask.h's MeasureGroup), the schedule, the profile's text,
 * the target to measure on, the code targets and the rounds. Its key (the jobs table's and the
 * server's variant_costs table's) is a TuningKey of shape class "variant-costs": the group's
 * structural hash, the measuring target, the numeric mode, the versions, and in `shapes` a hash
 * of the schedule, the profile, the code targets and the rounds, so costs are reused only for
 * exactly that measurement. The worker claims it like a tuning job (its target, class, build);
 * `tessel lib --profile --db URL` finds the costs and plans from them without measuring.
 */
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "autoscheduler/TuningKey.h"
#include "driver/VariantCosts.h"
#include "driver/VariantCostsPayload.h"

namespace tessel {

/** What a costs job for `group` of `g` carries (payload) and is keyed by. */
struct VariantCostsJob {
    autosched::TuningKey key;
    nlohmann::json payload;
};

VariantCostsJob variant_costs_job(const dsl::Graph &g, const dsl::FusionGroup &group, const sched::ScheduleSpec &schedule,
                                  const std::string &profile_text, const VariantMeasureOptions &options);

/** Runs a costs job's measurement here (the worker's side); returns costs_to_json(). */
nlohmann::json measure_variant_costs_job(const nlohmann::json &payload);

nlohmann::json costs_to_json(const GroupVariantCosts &costs);
/** The costs of `schedule`'s variants (names `<prefix>_v<k>`, guards from the schedule) from a
 * costs_to_json() document (`path` names it in messages); throws std::runtime_error naming the
 * field when it does not fit the schedule or a value is not a cost (a negative or non-finite
 * time, a negative size). */
GroupVariantCosts costs_from_json(const nlohmann::json &j, const sched::ScheduleSpec &schedule, const std::string &prefix,
                                  const std::string &path = "variant costs");

}  // namespace tessel
