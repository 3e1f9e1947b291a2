/** \file
 * Hand-written CUDA schedules for every matmul+epilogue group (stages "matmul" and the output "y").
 *
 * Every kernel fuses the bias+GELU epilogue into the thread that owns the output:
 *  - cuda_simple: one output per thread; the baseline, correct for any shape.
 *  - register tiles (matmul_cuda_regtile_steps, cuda_tiled's GEMM variants): a block computes a
 *    BN x BM output tile, each thread a TN x TM sub-tile whose sums are its own registers
 *    (matmul computed at the innermost GPU thread loop); every KU k-steps the thread loads
 *    its KU x TM slice of x and TN x KU slice of w as float4s (x, w, y promised float4
 *    aligned by assume_aligned, guarded K % KU, N % 4), neighbours' lines served by L1.
 *  - gemv (matmul_cuda_gemv_steps, the M <= 16 variants): a block owns NB columns (float4 per
 *    thread) x MB rows; KS k-slices (k = KS ko + slice, so a warp reads adjacent rows of w)
 *    each keep 4 x MB sums in registers with KU float4 loads of w in flight; the block adds
 *    the slices through shared memory before the epilogue. w is streamed once.
 *  - the first design (matmul_cuda_tiled_steps, matmul_cuda_decode_steps; library entry
 *    cuda_tiled_shared): block sums in shared memory, x and w k-tiles staged in shared memory;
 *    a 32-column split-K decode kernel, still cuda_decode's fallback for any shape.
 *
 * Tile sizes are parameters so tests can build variants that break the limits on purpose.
 */
#pragma once

#include "schedules/Schedule.h"

#include <Halide.h>

namespace tessel::sched {

/** Tile sizes of cuda_tiled. Threads per block = (BN / TN) * (BM / TM). Shared memory per
 * block = 4 bytes * (BN * BM + KT * (BM + BN)): the block's sums, the x and w tiles. */
struct CudaTileParams {
    int BN = 128;  ///< output columns (n, contiguous) per block
    int BM = 64;   ///< output rows (m) per block
    int TN = 4;    ///< columns per thread (contiguous: one float4 store)
    int TM = 8;    ///< rows per thread
    int KT = 16;   ///< k-tile staged in shared memory per step
};

/** Tile sizes of cuda_decode. Threads per block = NB * KS; shared memory holds the
 * KS x NB x M partial sums. */
struct CudaDecodeParams {
    int NB = 32;  ///< output columns per block, one per thread of a k-slice
    int KS = 16;  ///< k-slices (split-K factor inside the block)
    int MB = 16;  ///< rows per block (the variant's guard is M <= MB)
};

/** Tile sizes of the register-tiled GEMM (cuda_tiled's main variant). Threads per block =
 * (BN / TN) * (BM / TM); each thread keeps TN x TM sums in registers. */
struct CudaRegTileParams {
    int BN = 64;   ///< output columns (n, contiguous) per block
    int BM = 128;  ///< output rows (m) per block
    int TN = 8;    ///< columns per thread (float4 pieces)
    int TM = 8;    ///< rows per thread
    int KU = 4;    ///< k values per register load of x and w (x loads are KU-wide vectors)
};

/** The steps of the register-tiled GEMM with sizes `p` (no variants). */
std::vector<Directive> matmul_cuda_regtile_steps(const CudaRegTileParams &p);

/** When matmul_cuda_regtile_steps(p) applies: N >= BN, M >= BM (full tiles, shifted inwards at
 * the edges), N % 4 == 0 and K % KU == 0 (float4-aligned rows). */
std::vector<Guard> matmul_cuda_regtile_guards(const CudaRegTileParams &p);

/** Sizes of the small-M (decode) kernel. Threads per block = (NB / 4) * KS; shared memory
 * holds the KS x NB x MB partial sums (4 bytes each). */
struct CudaGemvParams {
    int NB = 16;    ///< output columns per block, 4 (one float4) per thread of a k-slice
    int KS = 64;    ///< k-slices (split-K inside the block)
    int MB = 1;     ///< rows per block (the variant's guard includes M % MB == 0)
    int KU = 8;     ///< k steps unrolled per slice (float4 loads of w in flight per thread)
    int MAXM = 16;  ///< the variant's guard M <= MAXM: row blocks beyond re-read w
};

/** The steps of the small-M kernel with sizes `p` (no variants). */
std::vector<Directive> matmul_cuda_gemv_steps(const CudaGemvParams &p);

/** When matmul_cuda_gemv_steps(p) applies: M <= MAXM, M % MB == 0, N >= NB, N % 4 == 0. */
std::vector<Guard> matmul_cuda_gemv_guards(const CudaGemvParams &p);

/** CUDA: 32x8 threads per block, one output per thread; the k reduction accumulates in a
 * register inside the thread and the epilogue is fused. */
ScheduleSpec matmul_cuda_simple(const Halide::Target &target);

/** The steps of cuda_tiled with tile sizes `p` (no variants). */
std::vector<Directive> matmul_cuda_tiled_steps(const CudaTileParams &p);

/** When matmul_cuda_tiled_steps(p) applies: N >= BN and M >= BM (full block tiles, shifted
 * inwards at the edges) and K % KT == 0 (full k-tiles). */
std::vector<Guard> matmul_cuda_tiled_guards(const CudaTileParams &p);

/** The steps of cuda_decode with sizes `p` (no variants). */
std::vector<Directive> matmul_cuda_decode_steps(const CudaDecodeParams &p);

/** The library's gemv variants (guards and steps), M == 16, M % 4 == 0, any M <= 16. */
std::vector<ScheduleSpec::Variant> matmul_cuda_gemv_variants();

/** CUDA GEMM. Variants, first match wins: the gemv variants for M <= 16; the register tiles
 * 64x128/8x8 and 64x32/4x4 where their guards hold; else cuda_simple's steps. */
ScheduleSpec matmul_cuda_tiled(const Halide::Target &target);

/** The first CUDA design, kept as a comparison: block sums in shared memory
 * (matmul_cuda_tiled_steps), the 32-column split-K decode for M <= 16, cuda_simple elsewhere. */
ScheduleSpec matmul_cuda_tiled_shared(const Halide::Target &target);

/** CUDA small-M schedule on its own: the gemv variants, with the 32-column split-K kernel
 * (matmul_cuda_decode_steps) as the fallback for any shape. */
ScheduleSpec matmul_cuda_decode(const Halide::Target &target);

}  // namespace tessel::sched
