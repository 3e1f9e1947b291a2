// Map: CpuAttentionParams::to_string -> helpers (batch fusion, a register-tiled contraction at a
// consumer's tile, a row reduction by vector partial results) -> cpu_attention_schedule.
#include "schedules/AttentionSchedules.h"

#include "dsl/passes/AttentionFusion.h"
#include "schedules/TargetFacts.h"

namespace tessel::sched {

namespace {

constexpr Tail kGuard = Tail::GuardWithIf;

/** Fuses the parallel loop `outer` with the batch axes b0, b1... of a rank-`rank` stage. */
std::string fuse_with_batch(ScheduleSpec &s, const StageRef &st, const std::string &outer, int rank) {
    std::string cur = outer;
    for (int b = 0; b < rank - 2; b++) {
        const std::string fused = cur + "_b" + std::to_string(b);
        s.fuse(st, cur, "b" + std::to_string(b), fused);
        cur = fused;
    }
    return cur;
}

/** `func` (a contraction with update loop `rvar`, pure loops `col` and `row`) accumulated in
 * register tiles: its consumer `tile_func` is split into row_tile x cols tiles over (tcol,
 * trow), and `func` is computed per tile, columns vectorized, rows unrolled, `rvar` outermost. */
void register_tiles(ScheduleSpec &s, const std::string &tile_func, const std::string &tcol, const std::string &trow,
                    const std::string &func, const std::string &col, const std::string &row, const std::string &rvar,
                    int cols, int rows) {
    const StageRef t{tile_func}, pure{func}, upd{func, 0};
    s.split(t, tcol, "co", "ci", cols).split(t, trow, "ro", "ri", rows).reorder(t, {"ci", "ri", "co", "ro"});
    s.vectorize(t, "ci").unroll(t, "ri");
    // A tile of constant size (reads are clamped, so growing a region is safe): on the stack.
    s.compute_at(func, tile_func, "co").bound_extent(func, col, cols).bound_extent(func, row, rows).store_in(func, MemoryLevel::Stack);
    // Split by the tile's own sizes: loops of constant extent, vectorized and unrolled whole.
    for (const StageRef &st : {pure, upd}) {
        s.split(st, col, col + "o", col + "i", cols).split(st, row, row + "o", row + "i", rows);
        s.vectorize(st, col + "i").unroll(st, row + "i");
    }
    s.reorder(upd, {col + "i", row + "i", rvar, col + "o", row + "o"});
}

/** A block's row reduction: its kAttentionLanes partial results `lanes_func` (pure loop u,
 * update loop ro) vectorized along u, then combined; both computed at `at`'s loop `var`. */
void lane_reduction(ScheduleSpec &s, const std::string &func, const std::string &lanes_func, const std::string &at,
                    const std::string &var) {
    s.compute_at(lanes_func, at, var).compute_at(func, at, var);
    for (const StageRef &st : {StageRef{lanes_func}, StageRef{lanes_func, 0}})
        s.split(st, "u", "uo", "ui", dsl::kAttentionLanes).vectorize(st, "ui");
    s.reorder(StageRef{lanes_func, 0}, {"ui", "ro"});
}

}  // namespace

CpuAttentionParams CpuAttentionParams::library(const Halide::Target &target) {
    CpuAttentionParams p;
    // 8 x 2 vector accumulators fill half of AVX-512's 32 registers; AVX2 has 16, so 4 x 2.
    p.row_tile = TargetFacts::for_target(target).cpu.vector_registers >= 32 ? 8 : 4;
    return p;
}

std::string CpuAttentionParams::to_string() const {
    return "query block " + std::to_string(query_block) + ", tiles " + std::to_string(row_tile) + " x " +
           std::to_string(col_vectors) + " vectors";
}

ScheduleSpec cpu_attention_schedule(const std::string &name, const GroupShape &g, const Halide::Target &target,
                                    const CpuAttentionParams &p) {
    const int lanes = TargetFacts::for_target(target).cpu.f32_lanes;
    const int rank = g.outputs.empty() ? 2 : g.outputs[0].second;
    const int cols = p.col_vectors * lanes;
    ScheduleSpec s(name, Device::Cpu);
    s.group = dsl::GroupKind::Attention;
    s.description = "online softmax per block of keys; " + p.to_string() + ", parallel over query blocks and batch";

    // Tasks: one block of query rows of one batch entry each.
    const StageRef y{"y"};
    s.split(y, "m", "mo", "mi", p.query_block, kGuard).split(y, "n", "no", "ni", lanes, kGuard);
    s.reorder(y, {"ni", "no", "mi", "mo"}).vectorize(y, "ni");
    const std::string task = fuse_with_batch(s, y, "mo", rank);
    s.parallel(y, task);

    // The running state of the task's rows, updated once per key block (rj outermost).
    const StageRef state{"state"}, state_upd{"state", 0};
    s.compute_at("state", "y", task);
    s.split(state, "n", "no", "ni", lanes, kGuard).vectorize(state, "ni");
    s.split(state_upd, "n", "no", "ni", lanes, kGuard).reorder(state_upd, {"ni", "no", "m", "rj"}).vectorize(state_upd, "ni");

    // K transposed once per call (keys innermost), in parallel over blocks: every query block
    // of a batch entry reads the same K blocks.
    const StageRef kb{"kblock"};
    s.compute_root("kblock").split(kb, "lj", "ljo", "lji", lanes).vectorize(kb, "lji");
    s.parallel(kb, fuse_with_batch(s, kb, "jb", rank));
    // Per key block, inside a task (storage once per task): the scores in register tiles, the
    // block's maximum, probs (read by the sum and by probs V), the sum, probs V in register tiles.
    s.stage_input("block_pv", "pv_tile", "state");
    for (const char *f : {"scores", "lane_max", "block_max", "probs", "lane_sum", "block_sum", "pv_tile"})
        s.store_at(f, "y", task);
    // A block is kAttentionKvBlock keys (the lowering's blocks): said, so tiles divide it exactly.
    const int bk = (int)dsl::kAttentionKvBlock;
    s.compute_at("scores", "state", "rj").bound("scores", "lj", 0, bk).bound("probs", "lj", 0, bk);
    register_tiles(s, "scores", "lj", "m", "matmul", "lj", "m", "k", cols, p.row_tile);
    lane_reduction(s, "block_max", "lane_max", "state", "rj");
    s.compute_at("probs", "state", "rj").split(StageRef{"probs"}, "lj", "ljo", "lji", lanes).vectorize(StageRef{"probs"}, "lji");
    lane_reduction(s, "block_sum", "lane_sum", "state", "rj");
    // probs V through its wrapper pv_tile (a Func's wrapper keeps its loop names).
    s.compute_at("pv_tile", "state", "rj");
    register_tiles(s, "pv_tile", "n", "m", "block_pv", "n", "m", "r", cols, p.row_tile);
    return s;
}

ScheduleSpec cpu_attention(const GroupShape &g, const Halide::Target &target) {
    return cpu_attention_schedule("cpu_attention", g, target, CpuAttentionParams::library(target));
}

}  // namespace tessel::sched
