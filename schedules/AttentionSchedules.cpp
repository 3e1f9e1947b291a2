// Map: CpuAttentionParams::to_string -> helpers (batch fusion, a register-tiled contraction at a
// consumer's tile, a row reduction by vector partial results) -> cpu_attention_schedule.
#include "schedules/AttentionSchedules.h"

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
    s.compute_at(func, tile_func, "co");
    // Split by the tile's own sizes: loops of constant extent, vectorized and unrolled whole.
    for (const StageRef &st : {pure, upd}) {
        s.split(st, col, col + "o", col + "i", cols).split(st, row, row + "o", row + "i", rows);
        s.vectorize(st, col + "i").unroll(st, row + "i");
    }
    s.reorder(upd, {col + "i", row + "i", rvar, col + "o", row + "o"});
}

/** A row reduction over a block's keys (update loop "r") as `lanes` partial results along the
 * keys (contiguous in the block), then the lanes combined; computed at `at`'s loop `var`. */
void lane_reduction(ScheduleSpec &s, const std::string &func, int lanes, const std::string &at, const std::string &var) {
    const StageRef upd{func, 0};
    const std::string lanes_func = func + "_lanes";
    s.split(upd, "r", "ro", "ri", lanes).rfactor(upd, "ri", "u", lanes_func);
    s.compute_at(func, at, var).compute_at(lanes_func, at, var);
    s.vectorize(StageRef{lanes_func}, "u");
    s.reorder(StageRef{lanes_func, 0}, {"u", "ro", "m"}).vectorize(StageRef{lanes_func, 0}, "u");
}

}  // namespace

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

    // Per key block: K's block transposed, the scores in register tiles, the block's maximum.
    s.compute_at("kblock", "state", "rj").split(StageRef{"kblock"}, "lj", "ljo", "lji", lanes).vectorize(StageRef{"kblock"}, "lji");
    s.compute_at("scores", "state", "rj");
    register_tiles(s, "scores", "lj", "m", "matmul", "lj", "m", "k", cols, p.row_tile);
    lane_reduction(s, "block_max", lanes, "state", "rj");
    // probs (read by block_sum and block_pv), vectorized along the keys.
    s.compute_at("probs", "state", "rj").split(StageRef{"probs"}, "lj", "ljo", "lji", lanes).vectorize(StageRef{"probs"}, "lji");
    lane_reduction(s, "block_sum", lanes, "state", "rj");
    // probs V in register tiles, through a wrapper the state reads (a Func's wrapper keeps its loop names).
    s.stage_input("block_pv", "pv_tile", "state");
    s.compute_at("pv_tile", "state", "rj");
    register_tiles(s, "pv_tile", "n", "m", "block_pv", "n", "m", "r", cols, p.row_tile);
    return s;
}

ScheduleSpec cpu_attention(const GroupShape &g, const Halide::Target &target) {
    return cpu_attention_schedule("cpu_attention", g, target, {});
}

}  // namespace tessel::sched
