#include "autoscheduler/TargetModel.h"

#include "autoscheduler/MachineNumbers.h"

#include <sstream>

namespace tessel::autosched {

TargetModel TargetModel::for_target(const Halide::Target &target) { return for_facts(sched::TargetFacts::for_target(target)); }

TargetModel TargetModel::for_facts(const sched::TargetFacts &facts) {
    TargetModel m;
    m.target = facts.target;
    m.cuda = facts.cuda;
    if (facts.cuda.capability > 0) {  // the CPU model keeps its defaults for a CUDA target
        m.device = sched::Device::Cuda;
        return m;
    }
    m.cpu.cores = facts.cpu.cores;
    m.cpu.lanes = facts.cpu.f32_lanes;
    m.cpu.vector_registers = facts.cpu.vector_registers;
    m.cpu.l1_bytes = facts.cpu.l1_bytes;
    m.cpu.l2_bytes = facts.cpu.l2_bytes;
    m.cpu.l3_bytes = facts.cpu.l3_bytes;
    return m;
}

TargetModel TargetModel::with_numbers(const std::optional<MachineNumbers> &numbers) const {
    TargetModel m = *this;
    if (!numbers || device != sched::Device::Cpu || numbers->fma_gflops <= 0 || numbers->read_gbps <= 0) return m;
    if ((cpu.lanes >= 16) != (numbers->isa == "avx512")) return m;  // measured at another vector width
    // The probe ran on numbers->threads cores; the model's peak is per core times cores.
    m.cpu.ghz = numbers->fma_gflops / (2.0 * m.cpu.lanes * m.cpu.fma_units * std::max(1, numbers->threads));
    m.cpu.dram_gbps = numbers->read_gbps * m.cpu.cores / std::max(1, numbers->threads);
    m.cpu.numbers = "measured: " + numbers->to_string();
    return m;
}

std::string TargetModel::to_string() const {
    std::ostringstream os;
    if (device == sched::Device::Cuda) {
        os << "CUDA " << cuda.ptx_arch() << " model: " << cuda.sms << " SMs, " << cuda.max_threads_per_block << " threads/block, "
           << cuda.shared_per_block / 1024 << " KiB shared/block, " << cuda.dram_gbps << " GB/s";
    } else {
        os << "CPU model: " << cpu.cores << " cores, " << cpu.lanes << " f32 lanes x " << cpu.vector_registers
           << " registers, L1 " << cpu.l1_bytes / 1024 << " KiB, L2 " << cpu.l2_bytes / 1024 << " KiB, L3 "
           << cpu.l3_bytes / (1 << 20) << " MiB, peak " << cpu.peak_gflops() << " GFLOP/s, DRAM " << cpu.dram_gbps << " GB/s ("
           << cpu.numbers << ")";
    }
    return os.str();
}

}  // namespace tessel::autosched
