/** \file
 * Applies a ScheduleSpec to Halide Funcs. This is the only code in Tessel that calls
 * Halide's scheduling API.
 *
 * Every directive is checked before the corresponding Halide call: the stage and loop
 * variable must exist, split factors must be positive, vector widths must be ones the
 * target has, GPU thread blocks must respect the target's thread limits, unrolling is
 * capped, GPU shared memory (where its footprint is known from `bound` directives)
 * must fit, and a reduction is split into partial sums only where the numeric mode allows. A violation throws ScheduleError naming the schedule, the step and the limit.
 * Halide errors raised while applying are caught and rethrown as ScheduleError with
 * Halide's message attached.
 */
#pragma once

#include "schedules/Schedule.h"

#include <Halide.h>

#include <map>
#include <stdexcept>
#include <string>

namespace tessel::sched {

/** A schedule that cannot be applied; what() says which step and why. */
class ScheduleError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/** The stages a schedule addresses: Funcs and input parameters by name, and the target
 * the pipeline will be compiled for (limits and vector widths come from it). */
struct ScheduleTarget {
    std::map<std::string, Halide::Func> funcs;
    std::map<std::string, Halide::ImageParam> inputs;
    Halide::Target target;
    /** The graph's numeric mode keeps every reduction in program order (exact): rfactor, which
     * splits a reduction into partial sums, is refused. */
    bool ordered_reductions = false;
};

/** Resource limits the checks use, derived from the target. */
struct TargetLimits {
    int natural_f32_lanes = 8;  ///< CPU: floats per native vector register
    int max_vector_lanes = 32;  ///< widest vectorize() accepted
    int max_threads_per_block = 1024;
    int max_threads_x = 1024, max_threads_y = 1024, max_threads_z = 64;
    int max_shared_bytes = 48 * 1024;  ///< static shared memory per block
    int max_unroll = 64;
    static TargetLimits for_target(const Halide::Target &t);
};

/** What the checks learned while applying a schedule: the largest GPU thread block and the
 * GPU shared memory per block of every shared Func whose extents are all known from
 * `bound`/`bound_extent` directives (shared_complete says whether that is all of them). */
struct AppliedResources {
    long max_threads_per_block = 0;
    long shared_bytes = 0;
    bool shared_complete = true;
};

/** Applies `steps` in order. `schedule_name` only labels error messages. Throws
 * ScheduleError on the first invalid step; the Funcs are then partially scheduled and
 * must be discarded (define the algorithm afresh). */
AppliedResources apply_schedule(const std::vector<Directive> &steps, ScheduleTarget &target,
                                const std::string &schedule_name = "schedule");

/** Checks a schedule without keeping its effect: applies it to a throwaway copy of the
 * algorithm produced by `define`. Returns "" when valid, else the error message. */
template <typename DefineFn>
std::string check_schedule(const std::vector<Directive> &steps, DefineFn define, const std::string &schedule_name = "schedule") {
    try {
        ScheduleTarget t = define();
        apply_schedule(steps, t, schedule_name);
        return "";
    } catch (const ScheduleError &e) {
        return e.what();
    }
}

}  // namespace tessel::sched
