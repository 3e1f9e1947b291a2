/** \file
 * The CUDA library schedules of the GELU MLP, compiled ahead of time by tessel_gpu_aot:
 * one entry per (schedule, variant), in the order the schedule tries them. Each function
 * is a Halide AOT pipeline: f(x, w, bias, y) with x Buffer(K, M), w Buffer(N, K),
 * bias Buffer(N), y Buffer(N, M), all float32, returning 0 on success.
 */
#pragma once

#include <HalideRuntime.h>

#include <string>
#include <vector>

struct GpuKernelVariant {
    std::string schedule;
    int variant;        ///< index in the schedule's variants; the last one is the fallback
    std::string guard;  ///< the guard as text
    bool (*applies)(long M, long K, long N);
    int (*run)(halide_buffer_t *x, halide_buffer_t *w, halide_buffer_t *bias, halide_buffer_t *y);
};

const std::vector<GpuKernelVariant> &gpu_kernel_variants();
