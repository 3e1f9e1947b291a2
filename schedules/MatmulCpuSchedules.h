/** \file
 * Fast CPU schedules for every matmul+epilogue group (stages "matmul" and the output "y"), for x86-64 with
 * AVX2 or AVX-512: the vector width and the register block are read from the Halide target.
 *
 * Five loop nests, each written for one family of shapes, combined in one ScheduleSpec
 * through guarded variants (tried in this order) so that every M, K, N is correct:
 *
 *   split-K gemm  MR <= M <= 16, N >= NR
 *                              split-K as below, but each task computes its partial sums
 *                              with the gemm register block (MR x 3 vectors), so w is loaded
 *                              once per MR rows of x, not once per row. Two forms (the
 *                              library takes the second on every target; the autoscheduler
 *                              offers both): K-blocked: the task walks its chunk in blocks of
 *                              k_block whole rows of w, copied (a sequential read) before
 *                              the register tiles sweep them from L2; in place: the chunk's
 *                              sums stay in memory, and per block of sums_block rows and
 *                              column tile the register tiles add the block's rows (read in
 *                              place, sums_block row streams) and the sums add the tiles.
 *   gemv    M == 1             split-K as below, but each task reads its chunk as 8 row
 *                              streams spaced chunk / 8 rows apart (not 8 adjacent rows):
 *                              the same bytes, faster from DRAM.
 *   decode  M <= 16            split-K: each parallel task reads a chunk of rows of w front
 *                              to back (one sequential stream per thread, w read exactly
 *                              once) into partial sums of all outputs; the partial sums are
 *                              added in the epilogue's tile. Every tail guarded.
 *   gemm    M >= MR, N >= NR   register block of MR rows x 3 vectors of w; a packed panel
 *                              of w (NR columns x all K, contiguous) per column block;
 *                              bias+GELU on the register block right after its k loop;
 *                              column blocks in parallel.
 *   general anything else      (N smaller than a register block): every split guards its tail.
 *
 * A right operand stored in panels of exactly nr columns (GroupShape::rhs_panel_width, a weight
 * the layout pass packed once) gets the panel nests instead: the gemm register block reading
 * the panels in place, no packing, for every M (rows mr, mr/2, ..., 1 by guards on M). Panels
 * of another width are read through index arithmetic by the nests above (correct, slow).
 *
 * Why ShiftInwards in the fast variants: a tail tile is shifted back inside the output
 * and recomputes a few outputs, so every tile has constant extents and the matmul tile
 * can live in registers. That needs the extent to be at least the tile, which is exactly
 * what the gemm variant's guard checks. The reduction k is never shifted (a sum would
 * be counted twice): gemm does not split it, decode splits it with guarded tails.
 */
#pragma once

#include "schedules/Schedule.h"

#include <Halide.h>

namespace tessel::sched {

/** The register block and column blocks the CPU schedules use on `target`. */
struct CpuBlocking {
    int lanes;          ///< f32 lanes of one vector register (16 on AVX-512, 8 on AVX2)
    int mr;             ///< rows of the gemm register block
    int nr;             ///< columns of the gemm register block (3 vectors)
    int panel_blocks;   ///< register blocks of columns per packed panel of w in the gemm nest
    int k_unroll;       ///< rows of w read together by the decode nests
    int gemm_k_unroll;  ///< reduction steps the gemm register block runs per loop iteration (tail guarded)
    int decode_max_m;   ///< largest M the decode nest is used for
    int k_chunk;        ///< rows of w per parallel task in the split-K nests
    int gemv_k_chunk;   ///< rows of w per parallel task in the gemv nest (M == 1)
    int gemv_streams;   ///< row streams per task in the gemv nest (M == 1)
    int k_block;        ///< split-K gemm: rows of w copied whole per K block (0: in place, sums_block)
    int k_block_max_m;  ///< largest M the K-blocked split-K gemm is used for (above it, in place)
    int sums_block;     ///< split-K gemm in place: rows of w the register tiles add before the chunk's
                        ///< sums in memory add the tiles
    /** sums_block on every target (the cost model charges the passes it implies). */
    static constexpr int kSumsBlock = 16;
    static CpuBlocking for_target(const Halide::Target &target);
};

/** CPU: output tiles of 2 vectors x 8 rows; the matmul tile is accumulated in a small
 * stack buffer inside the output tile (its k loop outermost, so the 16 accumulators
 * stay in registers), bias and GELU run on the tile right after, row tiles in parallel.
 * Every split guards its tail, so any M, K, N is correct. */
ScheduleSpec matmul_cpu_tiled(const Halide::Target &target);

/** The best CPU schedule: split-K gemm, gemv, decode, gemm and general nests as guarded variants;
 * the panel nests when the right operand is stored in panels of the register block's width
 * (`rhs_panel_width`, 0 for row-major). Example: library_schedule("cpu_blocked", get_host_target()). */
ScheduleSpec matmul_cpu_blocked(const Halide::Target &target, int64_t rhs_panel_width = 0);

/** The decode nest alone, for every shape (it guards all its tails); kept separate so the
 * benchmark and tests can time and check it on any shape. */
ScheduleSpec matmul_cpu_decode(const Halide::Target &target);

/** The individual nests, without guards: each is only valid where its variant's guard
 * holds (see the file comment). Exposed for tests and for composing new schedules. */
std::vector<Directive> matmul_cpu_gemm_steps(const CpuBlocking &b, int panel_blocks);
std::vector<Directive> matmul_cpu_decode_steps(const CpuBlocking &b);
std::vector<Directive> matmul_cpu_splitk_gemm_steps(const CpuBlocking &b);
std::vector<Directive> matmul_cpu_gemv_steps(const CpuBlocking &b);
std::vector<Directive> matmul_cpu_general_steps(const CpuBlocking &b);
/** The gemm register block of `rows` rows reading w stored in panels of b.nr columns in place
 * (no packing); valid for M >= rows, any K and N, when w has that layout. */
std::vector<Directive> matmul_cpu_panel_steps(const CpuBlocking &b, int rows);
/** The panel nests of 2 or more rows under their guards (M >= rows); the one-row nest
 * (matmul_cpu_panel_steps(b, 1)) is the fallback, valid for every M. */
std::vector<ScheduleSpec::Variant> matmul_cpu_panel_variants(const CpuBlocking &b);

}  // namespace tessel::sched
