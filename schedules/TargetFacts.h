/** \file
 * TargetFacts: what one Halide target means on the chip — the one place machine facts are read
 * from. Built from the target asked for (not the machine Tessel runs on) plus this host's cache
 * sizes and cores; the tuning database's measured numbers (FMA peak, read bandwidth) are
 * applied on top by autosched::TargetModel::with_numbers.
 *
 * Readers: the register block of the CPU matmul schedules (CpuBlocking::for_target) and through
 * it the layout cost (lower::layout_options), the schedule checks (TargetLimits), the fusion
 * limits (lower::fusion_resources), the autoscheduler's cost model (autosched::TargetModel) and
 * the PTX check (CompiledKernel::ptx_report assembles for cuda.ptx_arch() and judges with
 * cuda.ptx_limits()).
 *
 * The CUDA architecture is the target's CUDA capability feature: "host-cuda" (which adds
 * cuda_capability_86, the newest Halide 21 knows) is sm_86. A CUDA target naming no capability
 * gets generic PTX from Halide (".target sm_20", which current ptxas no longer assembles for);
 * it is checked on the chip the nominal numbers below describe, sm_90 (kNominalCudaCapability).
 *
 *   const TargetFacts f = TargetFacts::for_target(parse_target("host-cuda"));
 *   f.cuda.ptx_arch() == "sm_86";  f.device == Device::Cuda
 */
#pragma once

#include "schedules/Schedule.h"

#include <Halide.h>

#include <cstdint>
#include <string>

namespace tessel::sched {

/** A CPU target's vector unit (from the target's features) and this host's caches and cores. */
struct CpuFacts {
    int natural_f32_lanes = 16;  ///< Halide's natural vector size for float on the target
    int f32_lanes = 16;          ///< natural_f32_lanes, at least 4 (what the schedules block by)
    bool avx512 = false;
    int vector_registers = 32;                                             ///< 32 with AVX-512, else 16
    int cores = 1;                                                         ///< this host's hardware threads
    int64_t l1_bytes = 32 << 10, l2_bytes = 1 << 20, l3_bytes = 32 << 20;  ///< this host's data caches
};

/** The chip a CUDA target naming no capability is checked on: the H100/H200 that CudaFacts'
 * nominal numbers describe. */
constexpr int kNominalCudaCapability = 90;

/** A CUDA target's chip: the architecture from the capability feature, limits and nominal
 * throughput of an sm_80/sm_90-class part (H100/H200 numbers). */
struct CudaFacts {
    int capability = 0;  ///< 86 for cuda_capability_86; kNominalCudaCapability if none; 0 on a CPU target
    int sms = 132;
    int max_threads_per_block = 1024;
    int max_threads_per_sm = 2048;
    int registers_per_sm = 65536;
    int max_registers_per_thread = 255;
    int64_t shared_per_block = 48 << 10;  ///< static + dynamic shared memory per block without opt-in
    int64_t shared_per_sm = 228 << 10;
    int64_t l2_bytes = 50 << 20;
    double dram_gbps = 4800;
    double fp32_tflops = 67;
    double launch_overhead_us = 4;
    /** "sm_86": the architecture ptxas assembles for. */
    std::string ptx_arch() const { return "sm_" + std::to_string(capability); }
};

struct TargetFacts {
    std::string target;  ///< the Halide target string
    Device device = Device::Cpu;
    CpuFacts cpu;
    CudaFacts cuda;
    /** The facts of `target`: CUDA when it has a GPU feature (cpu then describes the host side). */
    static TargetFacts for_target(const Halide::Target &target);
};

/** The CUDA capability of `target` as a number (86), from its highest cuda_capability_NN
 * feature; kNominalCudaCapability when it names none; 0 without CUDA. */
int cuda_capability(const Halide::Target &target);

}  // namespace tessel::sched
