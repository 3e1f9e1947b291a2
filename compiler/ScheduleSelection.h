/** \file
 * Schedule selection: the one policy that decides which schedule a planned group gets.
 *
 *   1. user          --schedule NAME|FILE.json, for the groups of the kind it is for
 *   2. database      a tuning-database record for the group at its concrete sizes
 *   3. autoscheduler the cost model's pick, or (PlanOptions::tune) a measured tuning run,
 *                    when every size of the group is known
 *   4. library       the library default for the group's kind and the target's device
 *
 * Steps 2 and 3 are one call into the tuner (autosched::Tuner: a hit returns the record), so
 * tuning and running look the database up under the same key. Every choice is applied once to
 * a fresh lowering of the group before it is returned (every guarded variant and the fallback):
 * one that does not apply falls to the library default with the reason, except a user's
 * schedule, which is an error unless `user_fallback` asks for the default instead. The choice
 * carries where it came from (ScheduleProvenance) and why, which `tessel compile` and `tessel
 * run` print.
 */
#pragma once

#include "autoscheduler/Tuner.h"
#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"
#include "dsl/passes/LayoutAssignment.h"
#include "lowering/LowerToHalide.h"
#include "schedules/Library.h"
#include "schedules/Schedule.h"
#include "schedules/ScheduleProvenance.h"

#include <Halide.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

namespace tessel {

struct ScheduleChoice {
    sched::ScheduleSpec spec;
    ScheduleProvenance provenance = ScheduleProvenance::LibraryDefault;
    std::string reason;  ///< why this schedule (and, after a refusal, why not the one asked for)
    /** A schedule chosen by an earlier step that did not apply, with ApplySchedule's reason. */
    std::string refused;
    /** "schedule 'cpu_blocked' [database]": the name and where it came from. */
    std::string label() const;
};

struct ScheduleSelectionOptions {
    std::string user_schedule;    ///< library name or FILE.json; "" = no user schedule
    bool user_fallback = false;   ///< a user schedule that does not apply: the default, not an error
    std::string db;               ///< tuning database path; "" = none (no lookups)
    bool measure = false;         ///< on a database miss, measure candidates instead of the model's pick
    bool autoschedule = true;     ///< false: skip steps 2 and 3 (library defaults only)
    std::ostream *log = nullptr;  ///< the tuner's progress when measuring, one line per model pick
};

/** The workload of a group at concrete symbol sizes: a matmul+epilogue group's GroupExtents M,
 * K, N plus the epilogue's cost and how w is stored (nullopt when it has no M, K or N); any
 * other kind's GroupWork (autoscheduler/GroupKindSpace.h). nullopt when a size is unbound.
 * `lowered`: the group already lowered and not yet scheduled, read instead of lowering it again. */
std::optional<autosched::Workload> group_workload(const dsl::Graph &g, const dsl::FusionGroup &group,
                                                  const std::map<std::string, int64_t> &symbols,
                                                  const lower::LoweredGroup *lowered = nullptr);

class ScheduleSelection {
public:
    /** Throws std::invalid_argument for a user schedule that cannot be read or is for another
     * device than `target`'s. */
    ScheduleSelection(const Halide::Target &target, ScheduleSelectionOptions options);
    ~ScheduleSelection();
    ScheduleSelection(ScheduleSelection &&) noexcept;

    /** The schedule for `group` of `g` at `symbols` (sizes that are not bound leave the
     * autoscheduler out). `probe`: the group lowered and not scheduled. */
    ScheduleChoice choose(const dsl::Graph &g, const dsl::FusionGroup &group, const std::map<std::string, int64_t> &symbols,
                          const lower::LoweredGroup &probe) const;

    /** Whether choose() would find a tuning-database record of this very group at `workload`
     * (the key the tuner looks up: the group's structural hash, the shapes, the target, the mode);
     * false when choices do not come from the database (a user schedule, no database). */
    bool has_database_record(const dsl::Graph &g, const dsl::FusionGroup &group, const autosched::Workload &workload) const;

    const Halide::Target &target() const { return target_; }
    const ScheduleSelectionOptions &options() const { return options_; }
    /** The layout pass's rates for this machine and the target's ISA as stored in the database
     * (`tessel db probe`), else dsl::LayoutRates::defaults() (whose source then says why). */
    dsl::LayoutRates layout_rates() const;

private:
    Halide::Target target_;
    ScheduleSelectionOptions options_;
    std::optional<sched::GroupScheduleChoice> user_;
    struct Tuning;                            ///< the database and the cost model, opened once per selection
    mutable std::unique_ptr<Tuning> tuning_;  ///< opened on the first group with known sizes, or for layout_rates()
    Tuning &tuning() const;

    std::optional<ScheduleChoice> autoschedule(const dsl::Graph &g, const dsl::FusionGroup &group,
                                               const std::map<std::string, int64_t> &symbols,
                                               const lower::LoweredGroup &probe) const;
};

/** Applies every variant of `spec` and its fallback to fresh lowerings of `group` (no
 * compilation); the ScheduleError's message when one does not apply, else "". */
std::string schedule_refusal(const dsl::Graph &g, const dsl::FusionGroup &group, const sched::ScheduleSpec &spec,
                             const Halide::Target &target);

}  // namespace tessel
