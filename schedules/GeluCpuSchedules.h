/** \file
 * Fast CPU schedules for the GELU(x @ w + bias) group (algorithms/Gelu.h), for x86-64 with
 * AVX2 or AVX-512: the vector width and the register block are read from the Halide target.
 *
 * Three loop nests, each written for one family of shapes, combined in one ScheduleSpec
 * through guarded variants so that every M, K, N is correct:
 *
 *   gemm    M >= MR, N >= NR   register block of MR rows x 3 vectors of w; a packed panel
 *                              of w (NR columns x all K, contiguous) per column block;
 *                              bias+GELU on the register block right after its k loop;
 *                              column blocks in parallel.
 *   gemv    M == 1             w streamed exactly once, each row of w read as long
 *                              contiguous runs; k outermost inside a column block so the
 *                              accumulators of the block stay in L1; column blocks in parallel.
 *   skinny  2 <= M < MR        like gemv, with the M rows of x applied to each loaded
 *                              vector of w, so w is still read once.
 *   general anything else      (N smaller than a block): every split guards its tail.
 *
 * Why ShiftInwards in the fast variants: a tail tile is shifted back inside the output
 * and recomputes a few outputs, so every tile has constant extents and the matmul tile
 * can live in registers. That needs the extent to be at least the tile, which is exactly
 * what each variant's guard checks; the reduction k is never split, so no sum is
 * counted twice.
 */
#pragma once

#include "schedules/Schedule.h"

#include <Halide.h>

namespace tessel::sched {

/** The register block and column blocks the CPU schedules use on `target`. */
struct CpuBlocking {
    int lanes;        ///< f32 lanes of one vector register (16 on AVX-512, 8 on AVX2)
    int mr;           ///< rows of the gemm register block
    int nr;           ///< columns of the gemm register block (3 vectors)
    int gemv_block;   ///< columns per parallel task in the M == 1 nest
    int skinny_block; ///< columns per parallel task in the small-M nest
    static CpuBlocking for_target(const Halide::Target &target);
};

/** The best CPU schedule: gemm, gemv, skinny and general nests as guarded variants.
 * Example: library_schedule("cpu_blocked", get_host_target()). */
ScheduleSpec gelu_cpu_blocked(const Halide::Target &target);

/** The decode nests alone (gemv for M == 1, skinny for small M) with the general nest as
 * fallback; kept separate so the benchmark and tests can time and check them directly. */
ScheduleSpec gelu_cpu_decode(const Halide::Target &target);

/** The individual nests, without guards: each is only valid where its variant's guard
 * holds (see the file comment). Exposed for tests and for composing new schedules. */
std::vector<Directive> gelu_cpu_gemm_steps(const CpuBlocking &b);
std::vector<Directive> gelu_cpu_gemv_steps(const CpuBlocking &b);
std::vector<Directive> gelu_cpu_skinny_steps(const CpuBlocking &b);
std::vector<Directive> gelu_cpu_general_steps(const CpuBlocking &b);

}  // namespace tessel::sched
