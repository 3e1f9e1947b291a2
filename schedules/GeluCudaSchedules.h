/** \file
 * Hand-written CUDA schedules for the GELU(x @ w + bias) group (algorithms/Gelu.h).
 *
 * Three shapes of kernel, all with the bias+GELU epilogue fused into the thread that owns
 * the output (the matmul accumulators never leave registers):
 *  - cuda_simple: one output per thread; the baseline, correct for any shape.
 *  - cuda_tiled: a block computes a BN x BM output tile, each thread a TN x TM sub-tile
 *    accumulated in registers; k runs in tiles of KT, and each k-tile of x and w is staged
 *    cooperatively into GPU shared memory by all threads of the block before the unrolled
 *    inner k loop reads it. Tails are guarded, so any M, K, N is correct.
 *  - cuda_decode: for small M (decode, M <= 16): a block of 512 threads owns 32 output
 *    columns; split-K via rfactor: 16 groups of 32 threads each reduce a sixteenth of K
 *    (k = 16 ko + slice) for every column, with coalesced streaming reads of w, and the block reduces the 4
 *    partial sums in shared memory before the epilogue. cuda_tiled uses it as a guarded
 *    variant for M <= 16.
 *
 * The tile sizes are parameters (CudaTileParams) so tests can build variants that break
 * the limits on purpose; the library uses the defaults.
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

/** CUDA: 32x8 threads per block, one output per thread; the k reduction accumulates in a
 * register inside the thread and the epilogue is fused. */
ScheduleSpec gelu_cuda_simple(const Halide::Target &target);

/** The steps of cuda_tiled with tile sizes `p` (no variants). */
std::vector<Directive> gelu_cuda_tiled_steps(const CudaTileParams &p);

/** When gelu_cuda_tiled_steps(p) applies: N >= BN and M >= BM (full block tiles, shifted
 * inwards at the edges) and K % KT == 0 (full k-tiles). */
std::vector<Guard> gelu_cuda_tiled_guards(const CudaTileParams &p);

/** The steps of cuda_decode with sizes `p` (no variants). */
std::vector<Directive> gelu_cuda_decode_steps(const CudaDecodeParams &p);

/** CUDA tiled GEMM (defaults of CudaTileParams). Variants, first match wins: cuda_decode for
 * M <= 16; the tiled steps where gelu_cuda_tiled_guards hold; else cuda_simple's steps. */
ScheduleSpec gelu_cuda_tiled(const Halide::Target &target);

/** CUDA split-K decode schedule on its own (any M; fast for small M). */
ScheduleSpec gelu_cuda_decode(const Halide::Target &target);

}  // namespace tessel::sched
