/** \file
 * GeluKernel: the GELU(x @ w + bias) algorithm with one ScheduleSpec applied, compiled by
 * Halide's JIT for the CPU, or ahead of time (including PTX for CUDA targets).
 *
 * A ScheduleSpec with guarded variants compiles one Halide pipeline per variant plus the
 * fallback; run() picks the first variant whose guards hold for the given shape.
 */
#pragma once

#include "algorithms/Gelu.h"
#include "codegen/Compile.h"
#include "schedules/Schedule.h"

#include <HalideBuffer.h>

#include <filesystem>
#include <memory>

namespace tessel {

/** Builds a fresh algorithm and applies `steps` to it; throws sched::ScheduleError. */
GeluMlp scheduled_gelu_mlp(const std::vector<sched::Directive> &steps, GeluForm form, NumericMode mode,
                           const Halide::Target &target, const std::string &schedule_name);

class GeluKernel {
public:
    /** JIT-compiles every variant of `schedule` for a CPU `target`. */
    GeluKernel(const sched::ScheduleSpec &schedule, GeluForm form, NumericMode mode, const Halide::Target &target);

    /** y = gelu(x @ w + bias); x is Buffer(K, M), w Buffer(N, K), bias Buffer(N), y Buffer(N, M). */
    void run(Halide::Runtime::Buffer<float> &x, Halide::Runtime::Buffer<float> &w,
             Halide::Runtime::Buffer<float> &bias, Halide::Runtime::Buffer<float> &y) const;

    double compile_seconds() const { return compile_seconds_; }
    const sched::ScheduleSpec &schedule() const { return schedule_; }

private:
    sched::ScheduleSpec schedule_;
    std::vector<JitKernel> variants_;  // one per schedule_.variants, then the fallback
    double compile_seconds_ = 0;
};

/** PTX of the GELU MLP under a CUDA `schedule` (fallback steps). */
std::string gelu_mlp_ptx(const sched::ScheduleSpec &schedule, GeluForm form, NumericMode mode,
                         const Halide::Target &target);

}  // namespace tessel
