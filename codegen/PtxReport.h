/** \file
 * ptx-report: what a CUDA library schedule costs on the chip, checked without a GPU.
 *
 * For every variant of a compiled CUDA kernel (guarded variants first, then the fallback):
 * the PTX assembled for the given architecture with `ptxas -v` (registers per thread, static
 * shared memory, stack and spills per kernel). Halide places GPU shared memory in *dynamic*
 * shared memory, which ptxas does not see; the report adds the per-block footprint the schedule
 * checks computed from its bound/bound_extent directives (apply_schedule's AppliedResources).
 * One set of limits (PtxLimits) judges every report: the demo, `--emit ptx-report`, the tuner's
 * CUDA check and the tests all ask violations().
 *
 * Built by CompiledKernel::ptx_report (lowering/CompiledKernel.h). Example:
 *   PtxScheduleReport r = kernel.ptx_report();  // the target's architecture, e.g. sm_86
 *   std::cout << r.to_string();  if (!r.within_limits(kernel.ptx_limits())) return 1;
 */
#pragma once

#include "codegen/Ptxas.h"

#include <string>
#include <vector>

namespace tessel {

/** Limits a kernel must respect on the target chip (defaults: sm_80 and sm_90 alike;
 * CompiledKernel::ptx_limits fills them from the target's sched::CudaFacts). */
struct PtxLimits {
    int max_registers = 255;            ///< per thread
    long max_shared_bytes = 48 * 1024;  ///< static + dynamic shared memory per block without opt-in
    int max_threads_per_block = 1024;
};

/** The report of one variant of a schedule. */
struct PtxVariantReport {
    std::string label;              ///< "variant 1 (M <= 16)" or "fallback"
    PtxasReport ptxas;              ///< what ptxas says
    long threads_per_block = 0;     ///< largest GPU block the schedule declares
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
    /** One line: "ok (48/88 registers, no spills)" or the first violation. */
    std::string verdict(const PtxLimits &limits = {}) const;
};

}  // namespace tessel
