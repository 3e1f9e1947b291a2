/** \file
 * Library schedules for attention groups (dsl/passes/AttentionFusion.h), whose stages the
 * lowering names (lowering/Attention.cpp): kblock, matmul, scores, block_max, probs, block_sum,
 * block_pv, state and the output y, with loops n (output column), m (query row), jb (key block),
 * lj (key within a block), d, the batch axes b0, b1..., and the reductions k (over D), r (over a
 * block's keys) and rj (over the blocks).
 *
 *   cpu_attention   FlashAttention-2's forward on the CPU: one task per block of `query_block`
 *                   query rows of one batch entry (tasks over query blocks and batch axes in
 *                   parallel). Inside a task, for each key block: K's block copied transposed
 *                   (keys innermost), scores = q Kᵀ in register tiles of `row_tile` rows x
 *                   `col_vectors` vectors, the block's row maximum and sum as vector partial
 *                   results (rfactor by the vector width), probs vectorized along the keys, and
 *                   probs V in register tiles; the running state rescaled once per block. Every
 *                   block lives in L1/L2 (a few tens of KiB); nothing of size S x L is stored.
 *                   Legal for any attention group: reads are clamped, so tiles that round up
 *                   past the last row, column or key compute values that are never stored.
 *                   Guarded variants serve M <= kAttentionDecodeRows (decode): one row per
 *                   tile, K and V blocks copied where a task uses them; for M <=
 *                   kAttentionInPlaceRows K and V read where they lie (no copies), q Kᵀ reduced along the depth
 *                   in vectors (rfactor into `matmul_lanes`, stored lane-innermost) so each
 *                   key's row loads densely, q's rows staged per task (`qrow`), and with two or
 *                   more batch axes the outermost (grouped-query heads sharing a kv head) inside
 *                   a task, so each block of K and V is read from memory once for all of them.
 *                   K and V blocks are indexed at 0 along batch axes the operands broadcast, so
 *                   a copy is made per kv head, never per query head.
 */
#pragma once

#include "schedules/GroupSchedules.h"

#include <Halide.h>

#include <string>

namespace tessel::sched {

/** Query rows (M) up to which cpu_attention runs its decode variant. */
constexpr int kAttentionDecodeRows = 8;
/** Query rows up to which the decode variant reads K and V in place (depth_vectors): one or two
 * tokens; with more rows the per-row dot products cost more than copying the blocks once. */
constexpr int kAttentionInPlaceRows = 2;

/** The knobs of the CPU attention nest. */
struct CpuAttentionParams {
    int query_block = 32;  ///< query rows per parallel task (a multiple of row_tile)
    int row_tile = 4;      ///< rows of the register tiles of scores and block_pv
    int col_vectors = 2;   ///< vectors of columns in those tiles (keys for scores, n for block_pv)
    /** K (transposed) and V copied into blocks once per call and shared by every query block; else
     * each block is copied where a task uses it (decode: one query block per batch entry). */
    bool copy_kv_once = true;
    /** Decode: K and V read in place (no block copies), q K^T reduced along the depth in vectors
     * (a factored-out partial sum per lane), so K's rows load densely instead of gathered. */
    bool depth_vectors = false;
    /** The library's point for `target`: row tiles of 8 with 32 vector registers, else 4. */
    static CpuAttentionParams library(const Halide::Target &target);
    /** The decode variant's point: one row per tile, wider column tiles, blocks copied per task,
     * or (in_place) K and V read where they lie. */
    static CpuAttentionParams decode(const Halide::Target &target, bool in_place = true);
    std::string to_string() const;
    bool operator==(const CpuAttentionParams &) const = default;
};

/** The CPU attention nest of `p` for the attention group `g`, named `name`. */
ScheduleSpec cpu_attention_schedule(const std::string &name, const GroupShape &g, const Halide::Target &target,
                                    const CpuAttentionParams &p);

/** The attention-backward group's nests (dsl/passes/AttentionBackward.h; stages named in
 * lowering/AttentionBackward.cpp): K and V copied with the keys innermost; the rows' softmax
 * statistics with rows in vectors; then a task per batch entry (and part of its key blocks)
 * visiting every pair of a query block and a key block once: P and dS recomputed in register
 * tiles, dQ's, dK's and dV's block sums in register tiles of the block's rows x columns, added
 * into the accumulator. No two tasks write one value (dQ has a partial sum per part). Legal for any attention-backward group: reads are clamped,
 * except columns when D is a multiple of 32, which tiles of at most 32 columns never pass. */
ScheduleSpec cpu_attention_backward(const GroupShape &g, const Halide::Target &target);

/** The library point: cpu_attention_schedule("cpu_attention", g, target, CpuAttentionParams::library(target)). */
ScheduleSpec cpu_attention(const GroupShape &g, const Halide::Target &target);

}  // namespace tessel::sched
