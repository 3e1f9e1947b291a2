#include "autoscheduler/TargetModel.h"

#include <sstream>
#include <thread>
#include <unistd.h>

namespace tessel::autosched {

namespace {

int64_t cache_size(int name, int64_t fallback) {
    const long v = sysconf(name);
    return v > 0 ? v : fallback;
}

}  // namespace

TargetModel TargetModel::for_target(const Halide::Target &target) {
    TargetModel m;
    m.target = target.to_string();
    if (target.has_feature(Halide::Target::CUDA)) {
        m.device = sched::Device::Cuda;
        return m;
    }
    m.cpu.cores = std::max(1u, std::thread::hardware_concurrency());
    m.cpu.lanes = std::max(4, target.natural_vector_size<float>());
    m.cpu.vector_registers = target.has_feature(Halide::Target::AVX512) ? 32 : 16;
    m.cpu.l1_bytes = cache_size(_SC_LEVEL1_DCACHE_SIZE, m.cpu.l1_bytes);
    m.cpu.l2_bytes = cache_size(_SC_LEVEL2_CACHE_SIZE, m.cpu.l2_bytes);
    m.cpu.l3_bytes = cache_size(_SC_LEVEL3_CACHE_SIZE, m.cpu.l3_bytes);
    return m;
}

std::string TargetModel::to_string() const {
    std::ostringstream os;
    if (device == sched::Device::Cuda) {
        os << "CUDA sm_90 model: " << cuda.sms << " SMs, " << cuda.max_threads_per_block << " threads/block, "
           << cuda.shared_per_block / 1024 << " KiB shared/block, " << cuda.dram_gbps << " GB/s";
    } else {
        os << "CPU model: " << cpu.cores << " cores, " << cpu.lanes << " f32 lanes x " << cpu.vector_registers
           << " registers, L1 " << cpu.l1_bytes / 1024 << " KiB, L2 " << cpu.l2_bytes / 1024 << " KiB, L3 "
           << cpu.l3_bytes / (1 << 20) << " MiB, peak " << cpu.peak_gflops() << " GFLOP/s (nominal), DRAM "
           << cpu.dram_gbps << " GB/s (nominal)";
    }
    return os.str();
}

}  // namespace tessel::autosched
