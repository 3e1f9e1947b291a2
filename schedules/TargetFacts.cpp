#include "schedules/TargetFacts.h"

#include <unistd.h>
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace tessel::sched {

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

/** This host's cores and data caches, read once. */
const CpuFacts &host_cpu() {
    static const CpuFacts host = [] {
        CpuFacts c;
        c.cores = (int)std::max(1u, std::thread::hardware_concurrency());
        c.l1_bytes = cache_size(1, _SC_LEVEL1_DCACHE_SIZE, c.l1_bytes);
        c.l2_bytes = cache_size(2, _SC_LEVEL2_CACHE_SIZE, c.l2_bytes);
        c.l3_bytes = cache_size(3, _SC_LEVEL3_CACHE_SIZE, c.l3_bytes);
        return c;
    }();
    return host;
}

}  // namespace

int cuda_capability(const Halide::Target &target) {
    if (!target.has_feature(Halide::Target::CUDA)) return 0;
    // Every capability this Halide names, newest first: "cuda_capability_NN" features.
    for (int cc : {120, 100, 90, 89, 87, 86, 80, 75, 70, 61, 50, 35, 32, 30}) {
        const Halide::Target::Feature f = Halide::Target::feature_from_name("cuda_capability_" + std::to_string(cc));
        if (f != Halide::Target::FeatureEnd && target.has_feature(f)) return cc;
    }
    return kNominalCudaCapability;
}

TargetFacts TargetFacts::for_target(const Halide::Target &target) {
    TargetFacts f;
    f.target = target.to_string();
    f.device = target.has_gpu_feature() ? Device::Cuda : Device::Cpu;
    f.cuda.capability = cuda_capability(target);
    f.cpu.natural_f32_lanes = std::max(1, target.natural_vector_size<float>());
    f.cpu.f32_lanes = std::max(4, f.cpu.natural_f32_lanes);
    f.cpu.avx512 = target.has_feature(Halide::Target::AVX512);
    f.cpu.vector_registers = f.cpu.avx512 ? 32 : 16;
    const CpuFacts &host = host_cpu();
    f.cpu.cores = host.cores;
    f.cpu.l1_bytes = host.l1_bytes, f.cpu.l2_bytes = host.l2_bytes, f.cpu.l3_bytes = host.l3_bytes;
    return f;
}

}  // namespace tessel::sched
