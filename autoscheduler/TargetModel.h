/** \file
 * TargetModel: what the autoscheduler knows about the machine it schedules for. The search
 * space, the pruning rules and the cost model read their limits from here instead of from
 * hard-coded lists.
 *
 * CPU: cores, f32 lanes, vector registers and cache sizes (sched::TargetFacts), and FMA
 * throughput and memory bandwidth: this machine's measured numbers when the tuning database has
 * them (MachineNumbers.h, with_numbers), else nominal defaults for this machine class.
 * CUDA: the target's sched::CudaFacts (architecture from its capability feature; SMs,
 * thread/register/shared-memory limits and bandwidth).
 */
#pragma once

#include "schedules/Schedule.h"
#include "schedules/TargetFacts.h"

#include <Halide.h>

#include <cstdint>
#include <optional>
#include <string>

namespace tessel::autosched {

struct MachineNumbers;

struct CpuModel {
    int cores = 2;
    int lanes = 16;  ///< f32 lanes per vector register
    int vector_registers = 32;
    int fma_units = 2;    ///< vector FMAs issued per cycle
    int load_ports = 2;   ///< vector loads per cycle
    int fma_latency = 4;  ///< cycles; independent accumulators needed = latency x units
    double ghz = 3.5;
    int64_t l1_bytes = 32 << 10, l2_bytes = 1 << 20, l3_bytes = 32 << 20;
    double dram_gbps = 40;  ///< two-thread streaming bandwidth
    double l3_gbps = 150;
    double l2_gbps = 300;           ///< per core, for partial sums and accumulators
    double scalar_call_ns = 12;     ///< one libm call such as tanhf
    double task_overhead_us = 1.0;  ///< per parallel task (Halide thread pool)
    double call_overhead_us = 5.0;
    /** Where ghz and dram_gbps come from: "nominal", or the measured numbers' text. */
    std::string numbers = "nominal";
    double peak_gflops() const { return 2.0 * lanes * fma_units * ghz * cores; }
};

/** The CUDA chip the model schedules for: the target facts themselves. */
using CudaModel = sched::CudaFacts;

struct TargetModel {
    sched::Device device = sched::Device::Cpu;
    std::string target;  ///< the Halide target string
    CpuModel cpu;
    CudaModel cuda;
    /** The model for a Halide target: CUDA when the target has CUDA, else this CPU. */
    static TargetModel for_target(const Halide::Target &target);
    /** The model of `facts`: the same as for_target of the facts' target. */
    static TargetModel for_facts(const sched::TargetFacts &facts);
    /** The model with this machine's measured FMA peak (as the clock that gives it) and cold read
     * bandwidth in place of the nominal ones; unchanged for CUDA or numbers of another ISA. */
    TargetModel with_numbers(const std::optional<MachineNumbers> &numbers) const;
    std::string to_string() const;
};

}  // namespace tessel::autosched
