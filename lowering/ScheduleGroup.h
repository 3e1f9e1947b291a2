/** \file
 * The bridge between a lowered group and the schedule library: the GroupShape group-generic
 * schedules are generated from, library and default schedules for a group, applying steps to a
 * group's Funcs, and the fusion options (resource limits) of a requested target.
 */
#pragma once

#include "dsl/analysis/BufferAssignment.h"
#include "dsl/passes/Fusion.h"
#include "dsl/passes/LayoutAssignment.h"
#include "lowering/LowerToHalide.h"
#include "schedules/ApplySchedule.h"
#include "schedules/GroupSchedules.h"
#include "schedules/Schedule.h"

#include <Halide.h>

#include <map>
#include <string>

namespace tessel::lower {

/** The group as group-generic schedules see it (schedules/GroupSchedules.h); `group` must
 * not be scheduled yet (its reduction loops are read from the Halide Funcs). */
sched::GroupShape group_shape(const LoweredGroup &group);

/** Library schedule `name` for `group`: group-generic entries (cpu_rows...) are generated
 * from its shape, fixed ones (matmul+epilogue) returned as they are. Throws
 * std::invalid_argument for an unknown name. */
sched::ScheduleSpec library_schedule_for(const std::string &name, const LoweredGroup &group, const Halide::Target &target);

/** The schedule a group gets when none is chosen or the chosen one does not apply: the
 * always-applicable group-generic library schedule for its kind and the target's device
 * (cpu_elementwise or cpu_rows; cuda_elementwise or cuda_rows). */
sched::ScheduleSpec default_group_schedule(const LoweredGroup &group, const Halide::Target &target);

/** Applies `steps` to `group`'s Funcs for `target` (the Halide calls happen in ApplySchedule). */
sched::AppliedResources apply_to_group(const std::vector<sched::Directive> &steps, LoweredGroup &group,
                                       const Halide::Target &target, const std::string &schedule_name);

/** The in-place check of a memory plan whose group i runs schedule `specs[i]`
 * (sched::writes_each_element_once: no split with a shifted tail). The one check
 * rematerialization, plan() and CompiledGraph's plans use. */
dsl::InPlaceCheck in_place_check(std::vector<sched::ScheduleSpec> specs);

/** What the fusion planner may assume about one kernel of `target` — the target asked for, not
 * the machine Tessel runs on (sched::TargetFacts): CUDA targets get the chip's registers per
 * thread, shared memory per block and L2; CPU targets AVX-512's 32 x 16 lanes when the target
 * has AVX-512, else AVX2's 16 x 8. */
dsl::TargetResources fusion_resources(const Halide::Target &target);

/** Fusion options for `target` with estimates at `symbols`. */
dsl::FusionOptions fusion_options(const Halide::Target &target, const std::map<std::string, int64_t> &symbols = {});

/** Layout-assignment options for a CPU `target`: the register block of its matmul schedules
 * (sched::CpuBlocking) and the machine's rates (`rates`: this machine's as stored by `tessel db
 * probe`, or dsl::LayoutRates::defaults()), with the expected calls `shapes` (empty: the fusion
 * plan's symbol sizes). */
dsl::LayoutOptions layout_options(const Halide::Target &target,
                                  std::vector<std::pair<std::map<std::string, int64_t>, double>> shapes = {},
                                  const dsl::LayoutRates &rates = dsl::LayoutRates::defaults());

}  // namespace tessel::lower
