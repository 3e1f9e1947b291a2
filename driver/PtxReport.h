/** \file
 * ptx-report: what a CUDA library schedule costs on the chip, checked without a GPU.
 *
 * For every variant of a CUDA schedule (guarded variants first, then the fallback) it
 * applies the schedule to a fresh GELU MLP, generates the PTX, assembles it for the given
 * architecture with `ptxas -v` and reads registers per thread, static shared memory, stack
 * and spills per kernel. Halide places GPU shared memory in *dynamic* shared memory, which
 * ptxas does not see; the report adds the per-block footprint the schedule checks computed
 * from its bound/bound_extent directives (apply_schedule's AppliedResources).
 *
 * Example:
 *   PtxScheduleReport r = ptx_report("cuda_tiled");   // sm_90, tanh, strict
 *   std::cout << r.to_string();  if (!r.within_limits()) return 1;
 */
#pragma once

#include "algorithms/Gelu.h"
#include "codegen/Ptxas.h"
#include "schedules/Schedule.h"

#include <string>
#include <vector>

namespace tessel {

/** Limits a kernel must respect on the target chip (sm_90 defaults). */
struct PtxLimits {
    int max_registers = 255;           ///< per thread
    long max_shared_bytes = 48 * 1024; ///< static + dynamic shared memory per block without opt-in
    int max_threads_per_block = 1024;
};

/** The report of one variant of a schedule. */
struct PtxVariantReport {
    std::string label;          ///< "variant 1 (M <= 16)" or "fallback"
    PtxasReport ptxas;          ///< what ptxas says
    long threads_per_block = 0; ///< largest GPU block the schedule declares
    long dynamic_shared_bytes = 0;  ///< shared memory the schedule's bounds account for
    bool shared_complete = true;    ///< false when some shared Func has no bound (then a lower bound)
};

struct PtxScheduleReport {
    std::string schedule;
    std::string arch;
    std::vector<PtxVariantReport> variants;

    /** Every variant assembled, without spills, under every limit in `limits`. */
    bool within_limits(const PtxLimits &limits = {}) const;
    /** Why within_limits() is false: one line per violation; empty when it holds. */
    std::vector<std::string> violations(const PtxLimits &limits = {}) const;
    /** A readable table: one line per kernel (registers, shared, stack, spills). */
    std::string to_string() const;
};

/** Builds the report for `schedule` (its variants and fallback). Throws std::runtime_error
 * when ptxas is missing (check find_ptxas() first) and sched::ScheduleError when the
 * schedule is invalid. Does not run anything on a GPU. */
PtxScheduleReport ptx_report(const sched::ScheduleSpec &schedule, const std::string &arch = "sm_90",
                             GeluForm form = GeluForm::Tanh, NumericMode mode = NumericMode::Strict);

/** The same for the library schedule named `name` (host-cuda target). */
PtxScheduleReport ptx_report(const std::string &name, const std::string &arch = "sm_90",
                             GeluForm form = GeluForm::Tanh, NumericMode mode = NumericMode::Strict);

}  // namespace tessel
