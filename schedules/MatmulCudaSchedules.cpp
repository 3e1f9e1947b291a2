// Map: matmul_cuda_simple (one output per thread) -> matmul_cuda_tiled_steps (first design: block
// sums and x/w k-tiles in shared memory) -> matmul_cuda_regtile_steps (per-thread register tiles,
// float4 loads) -> matmul_cuda_decode_steps (first split-K decode) -> matmul_cuda_gemv_steps (float4
// split-K gemv) -> guards -> the library entries cuda_tiled, cuda_tiled_shared, cuda_decode.
#include "schedules/MatmulCudaSchedules.h"

namespace tessel::sched {

namespace {
const StageRef kY{"y"}, kInit{"matmul"}, kUpdate{"matmul", 0};
constexpr Tail kGuard = Tail::GuardWithIf;
// Widest aligned global load or store on the GPU: float4 (ld.global.v4); wider Halide
// vectors of memory are split into float4 pieces by an unrolled loop.
constexpr int kVec = 4;
// The library's gemv variants, first match wins: M == 16 in one row block, M % 4 == 0 in row
// blocks of 4, any M <= 16 one row per block.
const CudaGemvParams kGemvLibrary[] = {{16, 32, 16, 4, 16}, {16, 64, 4, 8, 16}, {16, 64, 1, 8, 16}};
// The library's register tiles: 64x128 blocks of 8x8 thread tiles (128 threads), then 64x32
// of 4x4 for M < 128.
const CudaRegTileParams kRegTileLibrary[] = {{64, 128, 8, 8, 4}, {64, 32, 4, 4, 4}};
}  // namespace

ScheduleSpec matmul_cuda_simple(const Halide::Target &) {
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

std::vector<Directive> matmul_cuda_tiled_steps(const CudaTileParams &p) {
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
    s.reorder(kInit, {"nr", "mr", "nt", "mt", "nb", "mb"}).reorder(kUpdate, {"nr", "mr", "nt", "mt", "nb", "mb", "ko"});
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

std::vector<Directive> matmul_cuda_regtile_steps(const CudaRegTileParams &p) {
    const StageRef xs{"x_reg"}, ws{"w_reg"};
    ScheduleSpec s;
    // x, w and y are promised aligned to float4 (guarded K % KU, N % 4), so the k-slices of x,
    // the rows of w and the stores of y are single ld/st.global.v4.
    s.assume_aligned("x", kVec).assume_aligned("w", kVec).assume_aligned("y", kVec);
    // Output: block tile BN x BM, thread tile TN x TM. ShiftInwards keeps every tile full, so
    // each thread's accumulators have a constant size (needs N >= BN and M >= BM: guarded).
    s.split(kY, "n", "no", "ni", p.BN, Tail::ShiftInwards)
        .split(kY, "m", "mo", "mi", p.BM, Tail::ShiftInwards)
        .split(kY, "ni", "nt", "nr", p.TN)
        .split(kY, "mi", "mt", "mr", p.TM)
        .split(kY, "nr", "nu", "nv", kVec)
        .reorder(kY, {"nv", "nu", "mr", "nt", "mt", "no", "mo"})
        .gpu_blocks(kY, {"no", "mo"})
        .gpu_threads(kY, {"nt", "mt"})
        .vectorize(kY, "nv")
        .unroll(kY, "nu")
        .unroll(kY, "mr");
    // matmul: computed per thread (at the innermost thread loop), so its TN x TM sums are the
    // thread's own registers for the whole k loop.
    s.compute_at("matmul", "y", "nt").store_in("matmul", MemoryLevel::Register);
    s.split(kInit, "n", "nb", "nr", p.TN, kGuard).split(kInit, "m", "mb", "mr", p.TM, kGuard);
    s.vectorize(kInit, "nr").unroll(kInit, "mr");
    s.split(kUpdate, "n", "nb", "nr", p.TN, kGuard)
        .split(kUpdate, "m", "mb", "mr", p.TM, kGuard)
        .split(kUpdate, "k", "ko", "ki", p.KU, kGuard)
        .reorder(kUpdate, {"nr", "mr", "ki", "nb", "mb", "ko"})
        .vectorize(kUpdate, "nr")
        .unroll(kUpdate, "mr")
        .unroll(kUpdate, "ki");
    // Per k-step of KU: the thread loads its KU x TM slice of x (k contiguous) and its
    // TN x KU slice of w (n contiguous) into registers; neighbouring threads read the same
    // lines, which the L1 cache serves.
    s.stage_input("x", "x_reg", "matmul")
        .compute_at("x_reg", "matmul", "ko")
        .store_in("x_reg", MemoryLevel::Register)
        .bound_extent("x_reg", "_0", p.KU)
        .bound_extent("x_reg", "_1", p.TM)
        .split(xs, "_0", "x0o", "x0", p.KU, kGuard)
        .split(xs, "_1", "x1o", "x1", p.TM, kGuard)
        .reorder(xs, {"x0", "x1", "x0o", "x1o"})
        .vectorize(xs, "x0")
        .unroll(xs, "x1");
    s.stage_input("w", "w_reg", "matmul")
        .compute_at("w_reg", "matmul", "ko")
        .store_in("w_reg", MemoryLevel::Register)
        .bound_extent("w_reg", "_0", p.TN)
        .bound_extent("w_reg", "_1", p.KU)
        .split(ws, "_0", "w0o", "w0", p.TN, kGuard)
        .split(ws, "_1", "w1o", "w1", p.KU, kGuard)
        .split(ws, "w0", "w0u", "w0v", kVec, kGuard)
        .reorder(ws, {"w0v", "w0u", "w1", "w0o", "w1o"})
        .vectorize(ws, "w0v")
        .unroll(ws, "w0u")
        .unroll(ws, "w1");
    return s.steps;
}

std::vector<Directive> matmul_cuda_decode_steps(const CudaDecodeParams &p) {
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

std::vector<Directive> matmul_cuda_gemv_steps(const CudaGemvParams &p) {
    ScheduleSpec s;
    const StageRef partial{"matmul_partial"}, partial_update{"matmul_partial", 0}, shared{"partial_shared"};
    // Columns are read 4 at a time (float4): w, y and x are promised aligned (guarded N % 4, K % 4).
    s.assume_aligned("w", kVec).assume_aligned("y", kVec);
    // Output: a block owns NB columns (ShiftInwards: guarded N >= NB) and MB rows (RoundUp:
    // guarded M % MB == 0, so every register tile has a constant size); a thread owns 4
    // columns of one row for the epilogue. The row blocks of one column block are adjacent
    // block ids, so when M > MB they run together and share w through L2.
    s.split(kY, "n", "no", "ni", p.NB, Tail::ShiftInwards)
        .split(kY, "m", "mo", "mi", p.MB, Tail::RoundUp)
        .split(kY, "ni", "nt", "nv", kVec)
        .reorder(kY, {"nv", "nt", "mi", "mo", "no"})
        .gpu_blocks(kY, {"mo", "no"})
        .gpu_threads(kY, {"nt", "mi"})
        .vectorize(kY, "nv");
    // Split-K inside the block: k = ko * KS + ks, so the KS slices of a warp read adjacent
    // rows of w; rfactor ks into a pure dimension u of matmul_partial.
    s.split(kUpdate, "k", "ko", "ks", p.KS, kGuard).rfactor(kUpdate, "ks", "u", "matmul_partial");
    // matmul: per thread, its 4 columns summed over the KS slices read from shared memory.
    s.compute_at("matmul", "y", "nt")
        .store_in("matmul", MemoryLevel::Register)
        .split(kInit, "n", "nb", "nv", kVec, kGuard)
        .vectorize(kInit, "nv")
        .split(kUpdate, "n", "nb", "nv", kVec, kGuard)
        .reorder(kUpdate, {"nv", "ks", "nb", "m"})
        .vectorize(kUpdate, "nv")
        .unroll(kUpdate, "ks");
    // The block's KS x NB x MB partial sums live in shared memory; thread (column quad, slice)
    // writes its own.
    s.stage_input("matmul_partial", "partial_shared", "matmul")
        .compute_at("partial_shared", "y", "mo")
        .store_in("partial_shared", MemoryLevel::GpuShared)
        .bound("partial_shared", "u", 0, p.KS)
        .bound_extent("partial_shared", "n", p.NB)
        .bound_extent("partial_shared", "m", p.MB)
        .split(shared, "n", "snb", "sni", p.NB, kGuard)
        .split(shared, "sni", "snt", "snv", kVec, kGuard)
        .split(shared, "m", "smb", "smi", p.MB, kGuard)
        .reorder(shared, {"snv", "smi", "snt", "u", "snb", "smb"})
        .gpu_threads(shared, {"snt", "u"})
        .vectorize(shared, "snv")
        .unroll(shared, "smi");
    // matmul_partial: per thread, 4 columns x MB rows over its k-slice in registers; each
    // step loads one float4 of w and MB values of x, KU steps unrolled so that KU loads of w
    // are in flight.
    s.compute_at("matmul_partial", "partial_shared", "snt").store_in("matmul_partial", MemoryLevel::Register);
    for (const StageRef &st : {partial, partial_update}) {
        s.split(st, "n", "nb", "nv", kVec, kGuard).split(st, "m", "mb", "mi", p.MB, kGuard).vectorize(st, "nv").unroll(st, "mi");
    }
    s.split(partial_update, "ko", "koo", "koi", p.KU, kGuard)
        .reorder(partial_update, {"nv", "mi", "koi", "nb", "mb", "u", "koo"})
        .unroll(partial_update, "koi");
    return s.steps;
}

std::vector<Guard> matmul_cuda_gemv_guards(const CudaGemvParams &p) {
    std::vector<Guard> g{Guard{"M", GuardOp::Le, p.MAXM}, Guard{"N", GuardOp::Ge, p.NB}, Guard{"N", GuardOp::Divisible, kVec}};
    if (p.MB > 1) g.insert(g.begin() + 1, Guard{"M", GuardOp::Divisible, p.MB});
    return g;
}

std::vector<Guard> matmul_cuda_regtile_guards(const CudaRegTileParams &p) {
    return {Guard{"N", GuardOp::Ge, p.BN}, Guard{"M", GuardOp::Ge, p.BM}, Guard{"N", GuardOp::Divisible, kVec},
            Guard{"K", GuardOp::Divisible, p.KU}};
}

std::vector<Guard> matmul_cuda_tiled_guards(const CudaTileParams &p) {
    return {Guard{"N", GuardOp::Ge, p.BN}, Guard{"M", GuardOp::Ge, p.BM}, Guard{"K", GuardOp::Divisible, p.KT}};
}

std::vector<ScheduleSpec::Variant> matmul_cuda_gemv_variants() {
    std::vector<ScheduleSpec::Variant> v;
    for (const CudaGemvParams &p : kGemvLibrary) v.push_back({matmul_cuda_gemv_guards(p), matmul_cuda_gemv_steps(p)});
    return v;
}

ScheduleSpec matmul_cuda_tiled(const Halide::Target &target) {
    ScheduleSpec s("cuda_tiled", Device::Cuda);
    s.description =
        "register-tiled GEMM: 64x128 blocks of 8x8 thread tiles (64x32 of 4x4 when M < 128) "
        "accumulated in registers, float4 loads of x and w through L1, fused epilogue; "
        "split-K gemv variants for M <= 16; cuda_simple where no variant fits";
    s.variants = matmul_cuda_gemv_variants();
    for (const CudaRegTileParams &p : kRegTileLibrary)
        s.variants.push_back({matmul_cuda_regtile_guards(p), matmul_cuda_regtile_steps(p)});
    s.steps = matmul_cuda_simple(target).steps;
    return s;
}

ScheduleSpec matmul_cuda_tiled_shared(const Halide::Target &target) {
    const CudaTileParams p;
    const CudaDecodeParams d;
    ScheduleSpec s("cuda_tiled_shared", Device::Cuda);
    s.description =
        "the first design: block sums in shared memory (128x64 block, 4x8 thread tiles, x and w "
        "k-tiles of 16 in shared memory); split-K decode for M <= 16; cuda_simple elsewhere";
    s.variants.push_back({{Guard{"M", GuardOp::Le, d.MB}}, matmul_cuda_decode_steps(d)});
    s.variants.push_back({matmul_cuda_tiled_guards(p), matmul_cuda_tiled_steps(p)});
    s.steps = matmul_cuda_simple(target).steps;
    return s;
}

ScheduleSpec matmul_cuda_decode(const Halide::Target &) {
    ScheduleSpec s("cuda_decode", Device::Cuda);
    s.description =
        "small-M split-K gemv: a block owns 16 columns (float4 per thread) x 1, 4 or 16 rows, "
        "64/64/32 k-slices reduced through shared memory, w streamed once; the 32-column "
        "split-K kernel for shapes the gemv guards exclude";
    s.variants = matmul_cuda_gemv_variants();
    s.steps = matmul_cuda_decode_steps(CudaDecodeParams{});
    return s;
}

}  // namespace tessel::sched
