/** \file
 * ScheduleSpec <-> JSON. Every directive becomes an object with an "op" field naming it
 * ("split", "vectorize", ...) and its fields by name; stages are {"func", "update"}.
 * Reading validates structure only (unknown op, missing or mistyped field, a number that is not
 * an integer or does not fit the field's C++ int, e.g. a factor of 2^40); whether the
 * schedule fits an algorithm and target is checked when it is applied.
 */
#pragma once

#include "schedules/Schedule.h"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace tessel::sched {

/** A JSON document that is not a valid schedule; what() names the step and the field. */
class ScheduleJsonError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

nlohmann::json to_json(const ScheduleSpec &s);
ScheduleSpec schedule_from_json(const nlohmann::json &j);

/** File helpers. A file's optional "group" names the fusion group kind the schedule is for
 * (e.g. "reduction"; "matmul+epilogue" when absent). */
ScheduleSpec load_schedule(const std::string &path);
void save_schedule(const ScheduleSpec &s, const std::string &path);

}  // namespace tessel::sched
