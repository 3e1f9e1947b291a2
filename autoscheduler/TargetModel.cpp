#include "autoscheduler/TargetModel.h"

#include "autoscheduler/MachineNumbers.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace tessel::autosched {

namespace {

/** Size of the data or unified cache of `level` from sysfs ("32768K"), else sysconf, else
 * `fallback`. sysfs first: some virtual machines report implausible sizes through sysconf. */
int64_t cache_size(int level, int sysconf_name, int64_t fallback) {
    for (int index = 0; index < 8; index++) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
        std::ifstream lv(dir + "level"), ty(dir + "type"), sz(dir + "size");
        int l = 0;
        std::string type, size;
        if (!(lv >> l) || !(ty >> type) || !(sz >> size)) continue;
        if (l != level || type == "Instruction" || size.empty()) continue;
        int64_t bytes = std::atoll(size.c_str());
        if (size.back() == 'K') bytes <<= 10;
        if (size.back() == 'M') bytes <<= 20;
        if (bytes > 0) return bytes;
    }
    const long v = sysconf(sysconf_name);
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
    m.cpu.l1_bytes = cache_size(1, _SC_LEVEL1_DCACHE_SIZE, m.cpu.l1_bytes);
    m.cpu.l2_bytes = cache_size(2, _SC_LEVEL2_CACHE_SIZE, m.cpu.l2_bytes);
    m.cpu.l3_bytes = cache_size(3, _SC_LEVEL3_CACHE_SIZE, m.cpu.l3_bytes);
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
        os << "CUDA sm_90 model: " << cuda.sms << " SMs, " << cuda.max_threads_per_block << " threads/block, "
           << cuda.shared_per_block / 1024 << " KiB shared/block, " << cuda.dram_gbps << " GB/s";
    } else {
        os << "CPU model: " << cpu.cores << " cores, " << cpu.lanes << " f32 lanes x " << cpu.vector_registers
           << " registers, L1 " << cpu.l1_bytes / 1024 << " KiB, L2 " << cpu.l2_bytes / 1024 << " KiB, L3 "
           << cpu.l3_bytes / (1 << 20) << " MiB, peak " << cpu.peak_gflops() << " GFLOP/s, DRAM " << cpu.dram_gbps
           << " GB/s (" << cpu.numbers << ")";
    }
    return os.str();
}

}  // namespace tessel::autosched
