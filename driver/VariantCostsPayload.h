/** \file
 * A variant-costs job's payload (driver/FleetVariantCosts.h) as values: what `tessel lib
 * --profile --enqueue` writes and a `tessel worker` measures from, i.e. the planned graph's text
 * and group, the schedule, the profile's text, the target to measure on, the code targets and the
 * rounds. Rows come from a shared server, so every field is checked when read and a bad one is
 * refused with its path, in Tessel's words (`payload.repeats: 0 is below 1`,
 * `payload.measure_on: "x86-64-linux-avx9" is not a Halide target`), by autosched::JobPayloadError;
 * the group's and the schedule's own readers name theirs. to_json() and from_json() round-trip.
 */
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "autoscheduler/MeasureGroup.h"
#include "driver/VariantCosts.h"
#include "schedules/Schedule.h"

namespace tessel {

struct VariantCostsRequest {
    static constexpr const char *kKind = "variant-costs";  ///< the payload's "kind"
    std::string graph_text;
    autosched::MeasureGroup group;
    sched::ScheduleSpec schedule;
    std::string profile_text;
    VariantMeasureOptions options;

    nlohmann::json to_json() const;
    static VariantCostsRequest from_json(const nlohmann::json &payload, const std::string &path = "payload");
};

/** True for a payload of this kind (workers dispatch on it). */
bool is_variant_costs_payload(const nlohmann::json &payload);

}  // namespace tessel
