// Map: gelu_cuda_simple (one output per thread) -> gelu_cuda_tiled_steps (block/thread tiles,
// x and w k-tiles staged in shared memory) -> gelu_cuda_decode_steps (split-K by rfactor for
// small M) -> the library entries gelu_cuda_tiled (with the decode variant) and gelu_cuda_decode.
#include "schedules/GeluCudaSchedules.h"

namespace tessel::sched {

namespace {
const StageRef kY{"y"}, kInit{"matmul"}, kUpdate{"matmul", 0};
constexpr Tail kGuard = Tail::GuardWithIf;
}  // namespace

ScheduleSpec gelu_cuda_simple(const Halide::Target &) {
    ScheduleSpec s("cuda_simple", Device::Cuda);
    s.description = "one output per thread, 32x8 thread blocks, k accumulated in a register";
    s.split(kY, "n", "no", "ni", 32, kGuard)
        .split(kY, "m", "mo", "mi", 8, kGuard)
        .reorder(kY, {"ni", "mi", "no", "mo"})
        .gpu_blocks(kY, {"no", "mo"})
        .gpu_threads(kY, {"ni", "mi"})
        .compute_at("matmul", "y", "ni")
        .store_in("matmul", MemoryLevel::Register);
    return s;
}

std::vector<Directive> gelu_cuda_tiled_steps(const CudaTileParams &p) {
    const int threads_n = p.BN / p.TN, threads_m = p.BM / p.TM;
    const StageRef tile{"matmul_tile"}, tile_update{"matmul_tile", 0}, xs{"x_shared"}, ws{"w_shared"};
    ScheduleSpec s;
    // Output: block tile BN x BM, thread tile TN x TM (TN contiguous columns: one float4 store).
    // ShiftInwards keeps every block tile full, so the shared tile has a constant size; it
    // needs N >= BN and M >= BM, which the library guards.
    s.split(kY, "n", "no", "ni", p.BN, Tail::ShiftInwards)
        .split(kY, "m", "mo", "mi", p.BM, Tail::ShiftInwards)
        .split(kY, "ni", "nt", "nr", p.TN)
        .split(kY, "mi", "mt", "mr", p.TM)
        .reorder(kY, {"nr", "mr", "nt", "mt", "no", "mo"})
        .gpu_blocks(kY, {"no", "mo"})
        .gpu_threads(kY, {"nt", "mt"})
        .vectorize(kY, "nr")
        .unroll(kY, "mr");
    // Split-K inside the block: k = ko * KT + ki; rfactor ko into matmul_tile(n, m, v), the
    // sum over one k-tile, so matmul only adds one partial per k-tile.
    s.split(kUpdate, "k", "ko", "ki", p.KT, kGuard).rfactor(kUpdate, "ko", "v", "matmul_tile");
    // matmul: the block's BN x BM sums in shared memory, each thread owning TN x TM of them.
    s.compute_at("matmul", "y", "no")
        .store_in("matmul", MemoryLevel::GpuShared)
        .bound_extent("matmul", "n", p.BN)
        .bound_extent("matmul", "m", p.BM);
    for (const StageRef &st : {kInit, kUpdate}) {
        s.split(st, "n", "nb", "ni", p.BN, kGuard)
            .split(st, "m", "mb", "mi", p.BM, kGuard)
            .split(st, "ni", "nt", "nr", p.TN, kGuard)
            .split(st, "mi", "mt", "mr", p.TM, kGuard)
            .gpu_threads(st, {"nt", "mt"})
            .vectorize(st, "nr")
            .unroll(st, "mr");
    }
    s.reorder(kInit, {"nr", "mr", "nt", "mt", "nb", "mb"})
        .reorder(kUpdate, {"nr", "mr", "nt", "mt", "nb", "mb", "ko"});
    // matmul_tile: per thread, its TN x TM partial sums over one k-tile in registers, the k
    // loop unrolled; read from the shared copies of x and w.
    s.compute_at("matmul_tile", "matmul", "nt");
    for (const StageRef &st : {tile, tile_update}) {
        s.split(st, "n", "nb", "nr", p.TN, kGuard).split(st, "m", "mb", "mr", p.TM, kGuard).vectorize(st, "nr").unroll(st, "mr");
    }
    s.reorder(tile_update, {"nr", "mr", "ki", "nb", "mb", "v"}).unroll(tile_update, "ki");
    // Stage the k-tile of x (KT x BM, k contiguous) in shared memory, copied by all threads
    // of the block in the same 2-D thread shape: the tile is flattened (k fastest) and dealt
    // out in rounds of one element per thread, so a warp reads 32 consecutive k-tile elements.
    const int threads = threads_n * threads_m;
    s.stage_input("x", "x_shared", "matmul_tile")
        .compute_at("x_shared", "matmul", "ko")
        .store_in("x_shared", MemoryLevel::GpuShared)
        .bound_extent("x_shared", "_0", p.KT)
        .bound_extent("x_shared", "_1", p.BM)
        .split(xs, "_0", "xko", "xk", p.KT, kGuard)
        .split(xs, "_1", "xmo", "xm", p.BM, kGuard)
        .reorder(xs, {"xk", "xm", "xko", "xmo"})
        .fuse(xs, "xk", "xm", "xf")
        .split(xs, "xf", "xr", "xi", threads, kGuard)
        .split(xs, "xi", "xty", "xtx", threads_n, kGuard)
        .gpu_threads(xs, {"xtx", "xty"})
        .unroll(xs, "xr");
    // Stage the k-tile of w (BN x KT, n contiguous): threads along n (coalesced), then k.
    s.stage_input("w", "w_shared", "matmul_tile")
        .compute_at("w_shared", "matmul", "ko")
        .store_in("w_shared", MemoryLevel::GpuShared)
        .bound_extent("w_shared", "_0", p.BN)
        .bound_extent("w_shared", "_1", p.KT)
        .split(ws, "_0", "wno", "wn", p.BN, kGuard)
        .split(ws, "_1", "wko", "wk", p.KT, kGuard)
        .split(ws, "wn", "wnr", "wnt", threads_n, kGuard)
        .split(ws, "wk", "wkr", "wkt", threads_m, kGuard)
        .reorder(ws, {"wnr", "wkr", "wnt", "wkt", "wno", "wko"})
        .gpu_threads(ws, {"wnt", "wkt"})
        .unroll(ws, "wnr")
        .unroll(ws, "wkr");
    return s.steps;
}

std::vector<Directive> gelu_cuda_decode_steps(const CudaDecodeParams &p) {
    ScheduleSpec s;
    const StageRef partial{"matmul_partial"}, partial_update{"matmul_partial", 0}, shared{"partial_shared"};
    // Output: a block owns NB columns and up to MB rows; a thread owns one column, all rows.
    s.split(kY, "n", "no", "ni", p.NB, kGuard)
        .split(kY, "m", "mo", "mi", p.MB, kGuard)
        .reorder(kY, {"mi", "ni", "no", "mo"})
        .gpu_blocks(kY, {"no", "mo"})
        .gpu_threads(kY, {"ni"})
        .unroll(kY, "mi");
    // Split-K: k = ko * KS + ks; rfactor ks into a pure dimension u of matmul_partial.
    s.split(kUpdate, "k", "ko", "ks", p.KS, kGuard).rfactor(kUpdate, "ks", "u", "matmul_partial");
    // matmul: per thread, its column's MB rows summed over the KS slices from shared memory.
    s.compute_at("matmul", "y", "ni")
        .split(kInit, "m", "mo", "mi", p.MB, kGuard)
        .unroll(kInit, "mi")
        .split(kUpdate, "m", "mo", "mi", p.MB, kGuard)
        .reorder(kUpdate, {"mi", "ks", "mo"})
        .unroll(kUpdate, "mi")
        .unroll(kUpdate, "ks");
    // The partial sums of a block live in shared memory; thread (n, u) writes column n, slice u.
    s.stage_input("matmul_partial", "partial_shared", "matmul")
        .compute_at("partial_shared", "y", "no")
        .store_in("partial_shared", MemoryLevel::GpuShared)
        .bound("partial_shared", "u", 0, p.KS)
        .split(shared, "n", "snb", "sni", p.NB, kGuard)
        .split(shared, "m", "smb", "smi", p.MB, kGuard)
        .reorder(shared, {"smi", "sni", "u", "snb", "smb"})
        .gpu_threads(shared, {"sni", "u"})
        .unroll(shared, "smi");
    // matmul_partial: per thread, the MB row sums of its column over its k-slice, in registers;
    // consecutive threads read consecutive columns of w (coalesced), each w value used MB times.
    s.compute_at("matmul_partial", "partial_shared", "sni");
    for (const StageRef &st : {partial, partial_update}) s.split(st, "m", "mb", "mi", p.MB, kGuard).unroll(st, "mi");
    s.reorder(partial_update, {"mi", "n", "u", "mb", "ko"});
    return s.steps;
}

std::vector<Guard> gelu_cuda_tiled_guards(const CudaTileParams &p) {
    return {Guard{"N", ">=", p.BN}, Guard{"M", ">=", p.BM}, Guard{"K", "%", p.KT}};
}

ScheduleSpec gelu_cuda_tiled(const Halide::Target &target) {
    const CudaTileParams p;
    const CudaDecodeParams d;
    ScheduleSpec s("cuda_tiled", Device::Cuda);
    s.description = "block tile 128x64, thread tile 4x8 in registers, x and w k-tiles of 16 staged in "
                    "shared memory, unrolled k, fused epilogue; split-K decode variant for M <= 16; "
                    "cuda_simple where the tile does not fit";
    s.variants.push_back({{Guard{"M", "<=", d.MB}}, gelu_cuda_decode_steps(d)});
    s.variants.push_back({gelu_cuda_tiled_guards(p), gelu_cuda_tiled_steps(p)});
    s.steps = gelu_cuda_simple(target).steps;
    return s;
}

ScheduleSpec gelu_cuda_decode(const Halide::Target &) {
    ScheduleSpec s("cuda_decode", Device::Cuda);
    s.description = "split-K decode: a block owns 32 columns x 16 rows, 16 k-slices per column "
                    "reduced through shared memory, w streamed once, fused epilogue";
    s.steps = gelu_cuda_decode_steps(CudaDecodeParams{});
    return s;
}

}  // namespace tessel::sched
