#include "schedules/Library.h"

#include "schedules/ScheduleJson.h"

#include "schedules/GeluCpuSchedules.h"
#include "schedules/GeluCudaSchedules.h"
#include "schedules/GeluSchedules.h"

#include <stdexcept>

namespace tessel::sched {

const std::vector<LibraryEntry> &schedule_library() {
    static const std::vector<LibraryEntry> library = {
        {"cpu_blocked", Device::Cpu, "matmul+epilogue",
         "register-blocked GEMM, packed w panel, fused epilogue; split-K decode nest for M <= 16", gelu_cpu_blocked},
        {"cpu_decode", Device::Cpu, "matmul+epilogue", "the split-K decode nest on its own (w streamed once), for any shape", gelu_cpu_decode},
        {"cpu_tiled", Device::Cpu, "matmul+epilogue", "register-tiled GEMM, epilogue fused per tile", gelu_cpu_tiled},
        {"cuda_simple", Device::Cuda, "matmul+epilogue", "one output per thread, k in a register", gelu_cuda_simple},
        {"cuda_tiled", Device::Cuda, "matmul+epilogue",
         "register-tiled GEMM (64x128 / 8x8, 64x32 / 4x4), float4 loads; split-K gemv variants for M<=16 "
         "(ptxas-checked; not yet run on a GPU)",
         gelu_cuda_tiled},
        {"cuda_decode", Device::Cuda, "matmul+epilogue", "split-K gemv for small M (float4 columns, w streamed once; not yet run on a GPU)",
         gelu_cuda_decode},
        {"cuda_tiled_shared", Device::Cuda, "matmul+epilogue",
         "block tiles with shared-memory x/w staging and block sums, split-K decode for M<=16 "
         "(verified on an H200, docs/results/gpu_bench_h200.txt)",
         gelu_cuda_tiled_shared},
    };
    return library;
}

std::string default_library_schedule(const std::string &kind, Device device) {
    // The CUDA default is the design that has been run and verified on a GPU; cuda_tiled is
    // faster on paper but has only been checked with ptxas so far.
    if (kind == "matmul+epilogue") return device == Device::Cuda ? "cuda_tiled_shared" : "cpu_blocked";
    return "";
}

ScheduleSpec resolve_schedule(const std::string &name_or_file, const Halide::Target &target) {
    const std::string ext = ".json";
    if (name_or_file.size() > ext.size() &&
        name_or_file.compare(name_or_file.size() - ext.size(), ext.size(), ext) == 0)
        return load_schedule(name_or_file);
    return library_schedule(name_or_file, target);
}

ScheduleSpec library_schedule(const std::string &name, const Halide::Target &target) {
    std::string names;
    for (const auto &e : schedule_library()) {
        if (e.name == name) return e.make(target);
        names += (names.empty() ? "" : ", ") + e.name;
    }
    throw std::invalid_argument("no library schedule named '" + name + "' (available: " + names + ")");
}

}  // namespace tessel::sched
