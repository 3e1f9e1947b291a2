/** \file
 * The named schedule library: every hand-written schedule Tessel ships, by name.
 * `tessel schedules` lists it; `--schedule NAME` picks from it.
 */
#pragma once

#include "schedules/Schedule.h"

#include <Halide.h>

#include <functional>
#include <string>
#include <vector>

namespace tessel::sched {

struct LibraryEntry {
    std::string name;
    Device device;
    std::string group;  ///< which fusion group kind it schedules, e.g. "matmul+epilogue"
    std::string summary;
    std::function<ScheduleSpec(const Halide::Target &)> make;
};

/** All library schedules, in a stable order. */
const std::vector<LibraryEntry> &schedule_library();

/** The library schedule Tessel uses by default for a fusion group of `kind` on `device`
 * ("" when the library has none for that kind: the lowering's default schedule is used). */
std::string default_library_schedule(const std::string &kind, Device device);

/** A schedule a user named: a path ending in ".json" is read with load_schedule, anything
 * else is a library name. Used by every command that takes `--schedule NAME|FILE.json`. */
ScheduleSpec resolve_schedule(const std::string &name_or_file, const Halide::Target &target);

/** The schedule named `name` for `target`; throws std::invalid_argument listing the names. */
ScheduleSpec library_schedule(const std::string &name, const Halide::Target &target);

}  // namespace tessel::sched
