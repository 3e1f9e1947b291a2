/** \file
 * The named schedule library: every hand-written schedule Tessel ships, by name.
 * `tessel schedules` lists it; `--schedule NAME` picks from it.
 *
 * Two sorts of entries: matmul+epilogue schedules address fixed stage names and are made from
 * the target alone (`make`); group-generic ones (GroupSchedules.h: elementwise and reduction
 * groups) are generated from the group's GroupShape and the target (`make_for_group`).
 */
#pragma once

#include "schedules/GroupSchedules.h"
#include "schedules/Schedule.h"

#include <Halide.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tessel::sched {

struct LibraryEntry {
    std::string name;
    Device device;
    dsl::GroupKind group;  ///< which fusion group kind it schedules
    std::string summary;
    /** Fixed-stage schedules (matmul+epilogue); empty for group-generic entries. */
    std::function<ScheduleSpec(const Halide::Target &)> make;
    /** Group-generic schedules; empty for fixed-stage entries. */
    std::function<ScheduleSpec(const GroupShape &, const Halide::Target &)> make_for_group;
    /** Fixed-stage schedules with nests that read a right operand stored in panels of the given
     * width in place (GroupShape::rhs_panel_width); empty when the entry has none. */
    std::function<ScheduleSpec(const Halide::Target &, int64_t panel_width)> make_for_panels;
    bool group_generic() const { return (bool)make_for_group; }
    /** make / make_for_group, with the result's `group` set to this entry's kind. */
    ScheduleSpec build(const Halide::Target &target) const;
    ScheduleSpec build_for_group(const GroupShape &shape, const Halide::Target &target) const;
};

/** All library schedules, in a stable order. */
const std::vector<LibraryEntry> &schedule_library();

/** The entry named `name`; throws std::invalid_argument listing the names. */
const LibraryEntry &library_entry(const std::string &name);

/** The library schedule Tessel uses by default for a fusion group of `kind` on `device`
 * (cpu_blocked / cuda_tiled_shared, cpu_elementwise / cuda_elementwise, cpu_rows / cuda_rows;
 * "" for an unknown kind: the lowering's default schedule is used). */
std::string default_library_schedule(dsl::GroupKind kind, Device device);

/** A schedule a user named: a path ending in ".json" is read with load_schedule, anything
 * else is a library name. Used by every command that takes `--schedule NAME|FILE.json`. */
ScheduleSpec resolve_schedule(const std::string &name_or_file, const Halide::Target &target);

/** The schedule named `name` for `target`; throws std::invalid_argument listing the names, or
 * for a group-generic entry (it needs a group: use the overload below). */
ScheduleSpec library_schedule(const std::string &name, const Halide::Target &target);

/** The schedule named `name` for a group of shape `shape` (fixed-stage entries use only its
 * rhs_panel_width, when they have panel nests).
 * For a lowered group: lower::library_schedule_for. */
ScheduleSpec library_schedule(const std::string &name, const GroupShape &shape, const Halide::Target &target);

/** `--schedule NAME|FILE.json` as graph commands use it: the fusion group kind it is for (a
 * library entry's group; a file's optional top-level "group", else "matmul+epilogue") and the
 * schedule for one group of that kind. */
struct GroupScheduleChoice {
    dsl::GroupKind group = dsl::GroupKind::MatmulEpilogue;
    Device device = Device::Cpu;
    std::optional<ScheduleSpec> fixed;  ///< files and fixed-stage library entries without panel nests
    std::function<ScheduleSpec(const GroupShape &, const Halide::Target &)> make_for_group;
    ScheduleSpec for_group(const GroupShape &shape, const Halide::Target &target) const {
        return fixed ? *fixed : make_for_group(shape, target);
    }
};
GroupScheduleChoice resolve_group_schedule(const std::string &name_or_file, const Halide::Target &target);

}  // namespace tessel::sched
