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
         "register-blocked GEMM, packed w panel, fused epilogue; split-K with the register block for 8 <= M <= 16 "
         "(4 on AVX2), split-K gemv streams for M == 1, split-K decode nest for other small M",
         gelu_cpu_blocked},
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
        {"cpu_elementwise", Device::Cpu, "elementwise",
         "2 vectors per step along n, unrolled; parallel over rows (rank 1: blocks of 4096)", {}, cpu_elementwise},
        {"cpu_rows", Device::Cpu, "reduction",
         "reductions per output row, vector partial sums (rfactor) along the row; outputs as cpu_elementwise", {},
         cpu_rows},
        {"cuda_elementwise", Device::Cuda, "elementwise",
         "outputs in 32x8 thread tiles; reductions per thread in registers, or own kernels for several outputs "
         "(ptxas-checked; not yet run on a GPU)",
         {}, cuda_elementwise},
        {"cuda_rows", Device::Cuda, "reduction",
         "one block per row, 256 threads split each row reduction in shared memory; else as cuda_elementwise "
         "(ptxas-checked; not yet run on a GPU)",
         {}, cuda_rows},
    };
    return library;
}

std::string default_library_schedule(const std::string &kind, Device device) {
    // The CUDA default is the design that has been run and verified on a GPU; cuda_tiled is
    // faster on paper but has only been checked with ptxas so far.
    const bool cuda = device == Device::Cuda;
    if (kind == "matmul+epilogue") return cuda ? "cuda_tiled_shared" : "cpu_blocked";
    if (kind == "elementwise") return cuda ? "cuda_elementwise" : "cpu_elementwise";
    if (kind == "reduction") return cuda ? "cuda_rows" : "cpu_rows";
    return "";
}

namespace {

bool is_json_path(const std::string &s) {
    const std::string ext = ".json";
    return s.size() > ext.size() && s.compare(s.size() - ext.size(), ext.size(), ext) == 0;
}

}  // namespace

ScheduleSpec resolve_schedule(const std::string &name_or_file, const Halide::Target &target) {
    if (is_json_path(name_or_file)) return load_schedule(name_or_file);
    return library_schedule(name_or_file, target);
}

const LibraryEntry &library_entry(const std::string &name) {
    std::string names;
    for (const auto &e : schedule_library()) {
        if (e.name == name) return e;
        names += (names.empty() ? "" : ", ") + e.name;
    }
    throw std::invalid_argument("no library schedule named '" + name + "' (available: " + names + ")");
}

ScheduleSpec library_schedule(const std::string &name, const Halide::Target &target) {
    const LibraryEntry &e = library_entry(name);
    if (e.group_generic())
        throw std::invalid_argument("library schedule '" + name + "' is generated for each " + e.group +
                                    " group from its stages; ask for it with a group (library_schedule(name, "
                                    "shape, target) or lower::library_schedule_for)");
    return e.make(target);
}

ScheduleSpec library_schedule(const std::string &name, const GroupShape &shape, const Halide::Target &target) {
    const LibraryEntry &e = library_entry(name);
    return e.group_generic() ? e.make_for_group(shape, target) : e.make(target);
}

GroupScheduleChoice resolve_group_schedule(const std::string &name_or_file, const Halide::Target &target) {
    GroupScheduleChoice c;
    if (is_json_path(name_or_file)) {
        c.fixed = load_schedule(name_or_file, &c.group);
        c.device = c.fixed->device;
        return c;
    }
    const LibraryEntry &e = library_entry(name_or_file);
    c.group = e.group;
    c.device = e.device;
    if (e.group_generic()) c.make_for_group = e.make_for_group;
    else c.fixed = e.make(target);
    return c;
}

}  // namespace tessel::sched
