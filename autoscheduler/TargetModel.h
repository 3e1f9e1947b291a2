/** \file
 * TargetModel: what the autoscheduler knows about the machine it schedules for. The search
 * space, the pruning rules and the cost model read their limits from here instead of from
 * hard-coded lists.
 *
 * CPU: cores, f32 lanes and vector registers (from the Halide target), cache sizes (from
 * sysconf, with documented defaults when the OS does not say), and FMA throughput and memory
 * bandwidth: this machine's measured numbers when the tuning database has them
 * (MachineNumbers.h, with_numbers), else nominal defaults for this machine class.
 * CUDA: SMs, thread/register/shared-memory limits and bandwidth of an sm_90 part (H100/H200).
 */
#pragma once

#include "schedules/Schedule.h"

#include <Halide.h>

#include <cstdint>
#include <optional>
#include <string>

namespace tessel::autosched {

struct MachineNumbers;

struct CpuModel {
    int cores = 2;
    int lanes = 16;             ///< f32 lanes per vector register
    int vector_registers = 32;
    int fma_units = 2;          ///< vector FMAs issued per cycle
    int load_ports = 2;         ///< vector loads per cycle
    int fma_latency = 4;        ///< cycles; independent accumulators needed = latency x units
    double ghz = 3.5;
    int64_t l1_bytes = 32 << 10, l2_bytes = 1 << 20, l3_bytes = 32 << 20;
    double dram_gbps = 40;      ///< two-thread streaming bandwidth
    double l3_gbps = 150;
    double l2_gbps = 300;           ///< per core, for partial sums and accumulators
    double scalar_call_ns = 12;     ///< one libm call such as tanhf
    double task_overhead_us = 1.0;  ///< per parallel task (Halide thread pool)
    double call_overhead_us = 5.0;
    /** Where ghz and dram_gbps come from: "nominal", or the measured numbers' text. */
    std::string numbers = "nominal";
    double peak_gflops() const { return 2.0 * lanes * fma_units * ghz * cores; }
};

struct CudaModel {
    int sms = 132;
    int max_threads_per_block = 1024;
    int max_threads_per_sm = 2048;
    int registers_per_sm = 65536;
    int max_registers_per_thread = 255;
    int64_t shared_per_block = 48 << 10;
    int64_t shared_per_sm = 228 << 10;
    double dram_gbps = 4800;
    double fp32_tflops = 67;
    double launch_overhead_us = 4;
};

struct TargetModel {
    sched::Device device = sched::Device::Cpu;
    std::string target;  ///< the Halide target string
    CpuModel cpu;
    CudaModel cuda;
    /** The model for a Halide target: CUDA when the target has CUDA, else this CPU. */
    static TargetModel for_target(const Halide::Target &target);
    /** The model with this machine's measured FMA peak (as the clock that gives it) and cold read
     * bandwidth in place of the nominal ones; unchanged for CUDA or numbers of another ISA. */
    TargetModel with_numbers(const std::optional<MachineNumbers> &numbers) const;
    std::string to_string() const;
};

}  // namespace tessel::autosched
