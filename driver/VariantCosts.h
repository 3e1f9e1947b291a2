/** \file
 * The measured costs of one fusion group's guarded variants on a shape profile: what the
 * specialization planner (autoscheduler/SpecializationPlanner.h) chooses from, for `tessel
 * specialize` and `tessel lib --profile`. Measurement only; nothing here decides.
 *
 * A profile entry binds the graph's symbols (M=1 K=4096 N=4096 for the running example; H, K, M
 * for mlp_residual). For a group under a schedule with guarded variants, each variant alone (its
 * steps, no guards: ScheduleSpec::variant_alone) and the fallback are compiled once, by the
 * component every command uses (lowering/CompiledKernel.h), and measured:
 *  - admitted shapes: the profiled bindings whose group extents (dsl/passes/GroupExtents.h, what
 *    the dispatcher reads) satisfy the variant's guards; the fallback admits every shape;
 *  - checked: on every admitted shape each variant's outputs are compared with the fallback's on
 *    the same random inputs; a variant past the tolerance is an error naming it, the shape and
 *    the error (a miscompiled variant must never be planned);
 *  - seconds per call: on each shape the variants serving it are called in turn, round after
 *    round (one untimed round, then `repeats`), and each one's median is kept, so that the
 *    machine's drift falls on every variant alike (the benchmark's interleaving);
 *  - compile seconds: CompileCost::Jit, its JIT compilation on the measuring target (what every
 *    process start pays); CompileCost::AheadOfTime, generating its objects for every code target
 *    (what every build of a library pays);
 *  - code bytes: executable sections of its ahead-of-time objects (codegen/ObjectCodeSize.h),
 *    without the Halide runtime, summed over the code targets;
 *  - tuning seconds: 0 — library schedules are written by hand, never tuned.
 */
#pragma once

#include "autoscheduler/SpecializationPlanner.h"
#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"
#include "schedules/Schedule.h"

#include <Halide.h>

#include <string>
#include <vector>

namespace tessel {

enum class CompileCost { Jit, AheadOfTime };

struct VariantMeasureOptions {
    Halide::Target measure_on = Halide::get_host_target();  ///< must run on this machine
    std::vector<Halide::Target> code_targets;               ///< code bytes (and AOT compile) for each; empty = measure_on
    CompileCost compile_cost = CompileCost::Jit;
    int repeats = 5;          ///< timed rounds per shape
    double tolerance = 1e-3;  ///< |variant - fallback| / (1 + |fallback|)
};

/** Costs of a group's variants, named `<prefix>_v<k>` (k 1-based, the schedule's order) and
 * `<prefix> fallback`. */
struct GroupVariantCosts {
    std::vector<autosched::VariantCosts> candidates;  ///< schedule.variants order
    autosched::VariantCosts fallback;
};

/** Measures every variant of `schedule` and its fallback for `group` of `g` (planned on g) on
 * `profile`, holding the host's measuring lock (support/HostLock.h) throughout: compile times are
 * costs too, so another worker's or tuner's measurement on the same cores must not overlap any of
 * it. Throws std::invalid_argument when a profiled shape leaves a symbol of the group
 * unbound, std::runtime_error when a variant's results disagree with the fallback's. */
GroupVariantCosts measure_group_variants(const dsl::Graph &g, const dsl::FusionGroup &group, const sched::ScheduleSpec &schedule,
                                         const autosched::ShapeProfile &profile, const VariantMeasureOptions &options,
                                         const std::string &prefix);

/** Each schedule compiled whole, dispatch included, and measured on every profiled shape,
 * interleaved with the others (to check a plan against its alternatives by measurement; the
 * last one is the reference the others are checked against). Names are the pairs' first. Holds
 * the measuring lock like measure_group_variants. */
std::vector<autosched::VariantCosts> measure_whole_kernels(
    const dsl::Graph &g, const dsl::FusionGroup &group, const std::vector<std::pair<std::string, sched::ScheduleSpec>> &schedules,
    const autosched::ShapeProfile &profile, const VariantMeasureOptions &options);

}  // namespace tessel
