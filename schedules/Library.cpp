#include "schedules/Library.h"

#include "schedules/ScheduleJson.h"

#include "schedules/AttentionSchedules.h"
#include "schedules/MatmulCpuSchedules.h"
#include "schedules/MatmulCudaSchedules.h"

#include <stdexcept>

namespace tessel::sched {

const std::vector<LibraryEntry> &schedule_library() {
    static const std::vector<LibraryEntry> library = {
        {"cpu_blocked",
         Device::Cpu,
         dsl::GroupKind::MatmulEpilogue,
         "register-blocked GEMM, packed w panel, fused epilogue; split-K with the register block for 8 <= M <= 16 "
         "(4 on AVX2), split-K gemv streams for M == 1, split-K decode nest for other small M",
         [](const Halide::Target &t) { return matmul_cpu_blocked(t); },
         {},
         matmul_cpu_blocked},
        {"cpu_decode", Device::Cpu, dsl::GroupKind::MatmulEpilogue,
         "the split-K decode nest on its own (w streamed once), for any shape", matmul_cpu_decode},
        {"cpu_tiled", Device::Cpu, dsl::GroupKind::MatmulEpilogue, "register-tiled GEMM, epilogue fused per tile",
         matmul_cpu_tiled},
        {"cuda_simple", Device::Cuda, dsl::GroupKind::MatmulEpilogue, "one output per thread, k in a register",
         matmul_cuda_simple},
        {"cuda_tiled", Device::Cuda, dsl::GroupKind::MatmulEpilogue,
         "register-tiled GEMM (64x128 / 8x8, 64x32 / 4x4), float4 loads; split-K gemv variants for M<=16 "
         "(ptxas-checked; not yet run on a GPU)",
         matmul_cuda_tiled},
        {"cuda_decode", Device::Cuda, dsl::GroupKind::MatmulEpilogue,
         "split-K gemv for small M (float4 columns, w streamed once; not yet run on a GPU)", matmul_cuda_decode},
        {"cuda_tiled_shared", Device::Cuda, dsl::GroupKind::MatmulEpilogue,
         "block tiles with shared-memory x/w staging and block sums, split-K decode for M<=16 "
         "(verified on an H200, docs/results/gpu_bench_h200.txt)",
         matmul_cuda_tiled_shared},
        {"cpu_elementwise",
         Device::Cpu,
         dsl::GroupKind::Elementwise,
         "2 vectors per step along n, unrolled; parallel over rows (rank 1: blocks of 4096)",
         {},
         cpu_elementwise},
        {"cpu_rows",
         Device::Cpu,
         dsl::GroupKind::Reduction,
         "reductions per output row, vector partial sums (rfactor) along the row; outputs as cpu_elementwise",
         {},
         cpu_rows},
        {"cpu_attention",
         Device::Cpu,
         dsl::GroupKind::Attention,
         "online softmax over blocks of keys: per task a block of query rows, scores and probs V in register tiles, "
         "no S x L buffer",
         {},
         cpu_attention},
        {"cpu_attention_backward",
         Device::Cpu,
         dsl::GroupKind::AttentionBackward,
         "dK and dV per block of keys, dQ per block of rows, P and dS recomputed per block in register tiles: no S x L buffer",
         {},
         cpu_attention_backward},
        {"cuda_elementwise",
         Device::Cuda,
         dsl::GroupKind::Elementwise,
         "outputs in 32x8 thread tiles; reductions per thread in registers, or own kernels for several outputs "
         "(ptxas-checked; not yet run on a GPU)",
         {},
         cuda_elementwise},
        {"cuda_rows",
         Device::Cuda,
         dsl::GroupKind::Reduction,
         "one block per row, 256 threads split each row reduction in shared memory; else as cuda_elementwise "
         "(ptxas-checked; not yet run on a GPU)",
         {},
         cuda_rows},
    };
    return library;
}

std::string default_library_schedule(dsl::GroupKind kind, Device device) {
    // The CUDA default is the design that has been run and verified on a GPU; cuda_tiled is
    // faster on paper but has only been checked with ptxas so far.
    const bool cuda = device == Device::Cuda;
    switch (kind) {
    case dsl::GroupKind::MatmulEpilogue: return cuda ? "cuda_tiled_shared" : "cpu_blocked";
    case dsl::GroupKind::Elementwise: return cuda ? "cuda_elementwise" : "cpu_elementwise";
    case dsl::GroupKind::Reduction: return cuda ? "cuda_rows" : "cpu_rows";
    case dsl::GroupKind::Attention: return cuda ? "" : "cpu_attention";
    case dsl::GroupKind::AttentionBackward: return cuda ? "" : "cpu_attention_backward";
    }
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
        throw std::invalid_argument("library schedule '" + name + "' is generated for each " +
                                    std::string(dsl::to_string(e.group)) +
                                    " group from its stages; ask for it with a group (library_schedule(name, "
                                    "shape, target) or lower::library_schedule_for)");
    return e.build(target);
}

ScheduleSpec library_schedule(const std::string &name, const GroupShape &shape, const Halide::Target &target) {
    const LibraryEntry &e = library_entry(name);
    if (e.group_generic()) return e.build_for_group(shape, target);
    if (shape.rhs_panel_width > 0 && e.make_for_panels) {
        ScheduleSpec s = e.make_for_panels(target, shape.rhs_panel_width);
        s.group = e.group;
        return s;
    }
    return e.build(target);
}

ScheduleSpec LibraryEntry::build(const Halide::Target &target) const {
    ScheduleSpec s = make(target);
    s.group = group;
    return s;
}

ScheduleSpec LibraryEntry::build_for_group(const GroupShape &shape, const Halide::Target &target) const {
    ScheduleSpec s = make_for_group(shape, target);
    s.group = group;
    return s;
}

GroupScheduleChoice resolve_group_schedule(const std::string &name_or_file, const Halide::Target &target) {
    GroupScheduleChoice c;
    if (is_json_path(name_or_file)) {
        c.fixed = load_schedule(name_or_file);
        c.group = c.fixed->group;
        c.device = c.fixed->device;
        return c;
    }
    const LibraryEntry &e = library_entry(name_or_file);
    c.group = e.group;
    c.device = e.device;
    if (e.group_generic() || e.make_for_panels)
        c.make_for_group = [&e](const GroupShape &s, const Halide::Target &t) { return library_schedule(e.name, s, t); };
    else
        c.fixed = e.build(target);
    return c;
}

}  // namespace tessel::sched
