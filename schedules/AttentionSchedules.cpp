// Map: CpuAttentionParams::to_string -> helpers (batch fusion, a register-tiled contraction at a
// consumer's tile, a row reduction by vector partial results) -> cpu_attention_schedule.
#include "schedules/AttentionSchedules.h"

#include "dsl/passes/AttentionBackward.h"
#include "dsl/passes/AttentionFusion.h"
#include "schedules/TargetFacts.h"

#include <algorithm>

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

/** `func` (a contraction: pure loops `col` and `row`, update loop `rvar`) computed at `at`'s
 * loop `var` as ONE register tile of cols x rows: a constant size on the stack (reads are
 * clamped, so growing a region to the tile is safe), columns vectorized, rows unrolled, `rvar`
 * outermost, so the accumulators stay in registers. */
void register_tile(ScheduleSpec &s, const std::string &func, const std::string &col, const std::string &row,
                   const std::string &rvar, int cols, int rows, const std::string &at, const std::string &var) {
    s.compute_at(func, at, var).bound_extent(func, col, cols).bound_extent(func, row, rows).store_in(func, MemoryLevel::Stack);
    for (const StageRef &st : {StageRef{func}, StageRef{func, 0}}) {
        s.split(st, col, col + "o", col + "i", cols).split(st, row, row + "o", row + "i", rows);
        s.vectorize(st, col + "i").unroll(st, row + "i");
    }
    s.reorder(StageRef{func, 0}, {col + "i", row + "i", rvar, col + "o", row + "o"});
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
    p.query_block = 64;
    return p;
}

CpuAttentionParams CpuAttentionParams::decode(const Halide::Target &target, bool in_place) {
    CpuAttentionParams p;
    p.query_block = kAttentionDecodeRows;
    p.row_tile = 1;
    p.col_vectors = TargetFacts::for_target(target).cpu.vector_registers >= 32 ? 4 : 2;
    p.copy_kv_once = false;
    p.depth_vectors = in_place;
    return p;
}

std::string CpuAttentionParams::to_string() const {
    return "query block " + std::to_string(query_block) + ", tiles " + std::to_string(row_tile) + " x " +
           std::to_string(col_vectors) + " vectors, K and V copied " + (copy_kv_once ? "once" : "per block");
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
    // Decode with two or more batch axes: the outermost runs inside a task. In grouped-query
    // attention that is the query heads sharing a kv head (K and V broadcast along it), so each
    // block of K and V is read from memory once for all of them; the nest does not check the
    // broadcast, and for other 4-D attention it only serializes that axis within a task.
    const bool heads_in_task = p.depth_vectors && rank >= 4;
    const std::string shared = "b" + std::to_string(rank - 3);
    // Where the group also writes the rows' logsumexp, that output runs in y's task loop
    // (compute_with), so both read one state. Its tasks are then nested parallel loops (query
    // blocks inside batch entries), not one fused loop: Halide bounds a stage fused into a loop
    // of fused indices over every block (the index is a remainder), and would compute the state
    // of every row up to the task's in each task.
    const bool writes_lse = std::any_of(g.outputs.begin(), g.outputs.end(), [](const auto &o) { return o.first == "lse"; });
    const StageRef lse{"lse"};
    if (writes_lse) s.split(lse, "m", "mo", "mi", p.query_block, kGuard);
    std::string task = "mo";
    const int task_batches = heads_in_task ? rank - 3 : rank - 2;  // batch axes outside the task
    if (heads_in_task) {
        s.reorder(y, {"ni", "no", "mi", shared, "mo"});
        if (writes_lse) s.reorder(lse, {"n", "mi", shared, "mo"});
    }
    if (writes_lse) {
        for (const StageRef &st : {y, lse}) {
            s.parallel(st, "mo");
            for (int b = 0; b < task_batches; b++) s.parallel(st, "b" + std::to_string(b));
        }
        s.compute_with(lse, y, "mo");
    } else {
        for (int b = 0; b < task_batches; b++) {
            const std::string fused = task + "_b" + std::to_string(b);
            s.fuse(y, task, "b" + std::to_string(b), fused);
            task = fused;
        }
        s.parallel(y, task);
    }

    // The running state of the task's rows, updated once per key block (rj outermost), in tiles
    // of row_tile rows x cols columns: probs V is accumulated per tile in registers (block_pv at
    // the tile) and added into the state right there.
    const StageRef state{"state"}, state_upd{"state", 0};
    s.compute_at("state", "y", task);
    s.split(state, "n", "no", "ni", lanes, kGuard).vectorize(state, "ni");
    s.split(state_upd, "n", "sno", "sni", cols).split(state_upd, "m", "smo", "smi", p.row_tile);
    if (heads_in_task)
        s.reorder(state_upd, {"sni", "smi", "smo", "sno", shared, "rj"});
    else
        s.reorder(state_upd, {"sni", "smi", "smo", "sno", "rj"});
    s.vectorize(state_upd, "sni").unroll(state_upd, "smi");

    // K transposed once per call (keys innermost), in parallel over blocks: every query block
    // of a batch entry reads the same K blocks.
    const StageRef kb{"kblock"}, vb{"vblock"};
    if (!p.depth_vectors)
        s.split(kb, "lj", "ljo", "lji", lanes).vectorize(kb, "lji").split(vb, "n", "no", "ni", lanes).vectorize(vb, "ni");
    if (p.depth_vectors) {
        s.compute_inline("kblock").compute_inline("vblock");
    } else if (p.copy_kv_once) {
        // V in blocks likewise (not transposed): its clamps at the edges stay out of probs V's tiles.
        s.compute_root("kblock").parallel(kb, fuse_with_batch(s, kb, "jb", rank));
        s.compute_root("vblock").parallel(vb, fuse_with_batch(s, vb, "jb", rank));
    } else {
        // One query block per batch entry (decode): a copy per call would read K and V three
        // times; each block is copied where it is used instead.
        s.compute_at("kblock", "state", "rj").compute_at("vblock", "state", "rj");
    }
    // Per key block, inside a task (storage once per task): the scores in register tiles, the
    // block's maximum, probs (read by the sum and by probs V), the sum, probs V in register tiles.
    for (const char *f : {"scores", "lane_max", "block_max", "probs", "lane_sum", "block_sum"}) s.store_at(f, "y", task);
    // A block is kAttentionKvBlock keys (the lowering's blocks): said, so tiles divide it exactly.
    const int bk = (int)dsl::kAttentionKvBlock;
    s.compute_at("scores", "state", "rj").bound("scores", "lj", 0, bk).bound("probs", "lj", 0, bk);
    const StageRef sc{"scores"};
    s.split(sc, "lj", "tco", "tci", cols).split(sc, "m", "tro", "tri", p.row_tile).reorder(sc, {"tci", "tri", "tro", "tco"});
    s.vectorize(sc, "tci").unroll(sc, "tri");
    if (p.depth_vectors) {
        const StageRef mm{"matmul"}, mm_upd{"matmul", 0}, lanes_upd{"matmul_lanes", 0};
        s.compute_at("qrow", "y", task).split(StageRef{"qrow"}, "d", "do", "di", lanes, kGuard).vectorize(StageRef{"qrow"}, "di");
        s.compute_at("matmul", "state", "rj");
        s.split(mm_upd, "k", "ko", "ki", lanes, kGuard).rfactor(mm_upd, "ki", "u", "matmul_lanes");
        std::vector<std::string> storage = {"u", "lj", "m", "jb"};  // the lane innermost: dense vectors
        for (int b = 0; b < rank - 2; b++) storage.push_back("b" + std::to_string(b));
        s.reorder_storage("matmul_lanes", storage);
        s.compute_at("matmul_lanes", "state", "rj");
        s.vectorize(StageRef{"matmul_lanes"}, "u").vectorize(lanes_upd, "u").reorder(lanes_upd, {"u", "ko", "lj", "m"});
        s.split(mm, "lj", "ljo", "lji", lanes)
            .vectorize(mm, "lji")
            .split(mm_upd, "lj", "ljo", "lji", lanes)
            .vectorize(mm_upd, "lji");
    } else {
        register_tile(s, "matmul", "lj", "m", "k", cols, p.row_tile, "scores", "tro");
    }
    lane_reduction(s, "block_max", "lane_max", "state", "rj");
    s.compute_at("probs", "state", "rj").split(StageRef{"probs"}, "lj", "ljo", "lji", lanes).vectorize(StageRef{"probs"}, "lji");
    lane_reduction(s, "block_sum", "lane_sum", "state", "rj");
    // probs V per state tile, in registers.
    register_tile(s, "block_pv", "n", "m", "r", cols, p.row_tile, "state", "smo");
    return s;
}

ScheduleSpec cpu_attention(const GroupShape &g, const Halide::Target &target) {
    ScheduleSpec s = cpu_attention_schedule("cpu_attention", g, target, CpuAttentionParams::library(target));
    for (const bool in_place : {true, false}) {
        const CpuAttentionParams p = CpuAttentionParams::decode(target, in_place);
        const int rows = in_place ? kAttentionInPlaceRows : kAttentionDecodeRows;
        s.variants.push_back({{Guard{"M", GuardOp::Le, rows}}, cpu_attention_schedule("cpu_attention", g, target, p).steps});
        s.description += "; M <= " + std::to_string(rows) + ": " + p.to_string();
    }
    return s;
}

ScheduleSpec cpu_attention_backward(const GroupShape &g, const Halide::Target &target) {
    const int lanes = TargetFacts::for_target(target).cpu.f32_lanes;
    const int rank = g.outputs.empty() ? 2 : g.outputs[0].second;
    // Register tiles: rows x 2 vectors (scores, dP, dQ's sums): 12 of AVX2's 16 registers, 16 of
    // AVX-512's 32; dK's and dV's sums take 2 keys x 2 vectors each, 8 accumulators together.
    const int rows = TargetFacts::for_target(target).cpu.vector_registers >= 32 ? 8 : 6, cols = 2 * lanes;
    const int key_block = (int)dsl::kAttentionBackwardKeyBlock, query_block = (int)dsl::kAttentionBackwardQueryBlock;
    ScheduleSpec s("cpu_attention_backward", Device::Cpu);
    s.group = dsl::GroupKind::AttentionBackward;
    // The group reads the logsumexp its forward saved where it has no statistics of its own.
    const bool saved_lse =
        std::none_of(g.reductions.begin(), g.reductions.end(), [](const GroupReduction &r) { return r.name == "row_max"; });
    s.description = std::string(saved_lse ? "the saved logsumexp" : "row statistics") +
                    ", then one nest per batch entry over blocks of " + std::to_string(query_block) + " rows x " +
                    std::to_string(key_block) +
                    " keys: P and dS recomputed per block, dQ's, dK's and dV's block sums in register tiles";

    // K and V with the keys innermost, once per call.
    for (const char *f : {"kcols", "vcols"}) {
        const StageRef st{f};
        s.compute_root(f).split(st, "j", "jo", "ji", lanes, kGuard).vectorize(st, "ji");
        s.parallel(st, fuse_with_batch(s, st, "jo", rank));
    }
    // The rows' statistics, unless saved: per task a few rows against every key (a slab of rows x L scores, in register tiles), then the maximum
    // and the sum as vector partial results.
    if (!saved_lse) {
        const StageRef lse{"lse"}, scores{"scores_stats"};
        s.compute_root("lse").split(lse, "i", "io", "ii", 2 * rows, kGuard);
        const std::string stat_task = fuse_with_batch(s, lse, "io", rank);
        s.parallel(lse, stat_task);
        s.compute_at("scores_stats", "lse", stat_task);
        s.split(scores, "j", "tco", "tci", cols)
            .split(scores, "i", "tro", "tri", rows)
            .reorder(scores, {"tci", "tri", "tro", "tco"});
        s.vectorize(scores, "tci").unroll(scores, "tri");
        register_tile(s, "qk_stats", "j", "i", "k", cols, rows, "scores_stats", "tro");
        std::vector<std::string> lane_storage = {"u", "i"};
        for (int b = 0; b < rank - 2; b++) lane_storage.push_back("b" + std::to_string(b));
        for (const std::string f : {"row_max", "row_sum"}) {
            const StageRef upd{f, 0}, lanes_pure{f + "_lanes"}, lanes_upd{f + "_lanes", 0};
            s.compute_at(f, "lse", stat_task);
            s.split(upd, "rj", "rjo", "rji", lanes, kGuard).rfactor(upd, "rji", "u", f + "_lanes");
            s.compute_at(f + "_lanes", "lse", stat_task).reorder_storage(f + "_lanes", lane_storage).vectorize(lanes_pure, "u");
            s.reorder(lanes_upd, {"u", "rjo", "i"}).vectorize(lanes_upd, "u");
        }
    }
    // The gradients' nest. A task per part of the key blocks of a batch entry; per block pair,
    // P's and dS's blocks (with the scores and dP in register tiles), then per tile of rows x
    // cols of the block the three block sums in registers, added into dQ's rows and into dK's
    // and dV's keys.
    const StageRef grads{"grads"}, upd{"grads", 0};
    s.compute_root("grads").split(grads, "c", "co", "ci", lanes, kGuard).vectorize(grads, "ci");
    s.parallel(grads, fuse_with_batch(s, grads, "part", rank));
    s.split(upd, "c", "uco", "uci", cols, kGuard).split(upd, "rx", "uro", "uri", rows, kGuard);
    s.reorder(upd, {"uci", "uri", "rw", "uco", "uro", "rib", "rjb", "part"});
    s.vectorize(upd, "uci").unroll(upd, "uri").unroll(upd, "rw");
    s.parallel(upd, fuse_with_batch(s, upd, "part", rank));
    for (const std::string f : {"probs", "ds"}) {
        const StageRef st{f};
        s.compute_at(f, "grads", "rib");
        s.split(st, "j", "tco", "tci", cols).split(st, "i", "tro", "tri", rows).reorder(st, {"tci", "tri", "tro", "tco"});
        s.vectorize(st, "tci").unroll(st, "tri");
    }
    register_tile(s, "qk", "j", "i", "k", cols, rows, "probs", "tro");
    register_tile(s, "dp", "j", "i", "n", cols, rows, "ds", "tro");
    register_tile(s, "dq_block", "c", "x", "rk", cols, rows, "grads", "uco");
    register_tile(s, "dk_block", "c", "x", "rr", cols, rows, "grads", "uco");
    register_tile(s, "dv_block", "c", "x", "rr", cols, rows, "grads", "uco");
    // The outputs: the parts' sums, scaled.
    for (const std::string out : {"y0", "y1"}) {
        const StageRef y{out};
        const std::string row = out == "y0" ? "j" : "i";
        s.split(y, row, row + "o", row + "i", query_block, kGuard).split(y, "c", "co", "ci", lanes, kGuard);
        s.reorder(y, {"ci", "co", row + "i", row + "o"}).vectorize(y, "ci");
        s.parallel(y, fuse_with_batch(s, y, row + "o", rank));
    }
    return s;
}

}  // namespace tessel::sched
