#include "schedules/GroupSchedules.h"

#include "schedules/AttentionSchedules.h"

#include "schedules/TargetFacts.h"

#include <algorithm>

namespace tessel::sched {

namespace {

constexpr Tail kGuard = Tail::GuardWithIf;

/** The loop name of tensor axis `axis` of a rank-`rank` Func (as the lowering names them). */
std::string axis(int axis, int rank) {
    const int from_end = rank - 1 - axis;
    if (from_end == 0) return "n";
    if (from_end == 1) return "m";
    return "b" + std::to_string(from_end - 2);
}

int cpu_lanes(const Halide::Target &t) { return TargetFacts::for_target(t).cpu.f32_lanes; }

/** `p.vectors` vectors of n per iteration, unrolled; parallel over tasks of `p.rows_per_task`
 * outermost indices (rank 1: blocks of `p.block` elements), or serial. Returns the loop per-row
 * work is computed in (the row loop inside a task). */
std::string cpu_output(ScheduleSpec &s, const std::string &name, int rank, int lanes, const CpuGroupParams &p) {
    const StageRef st{name};
    std::string row, task;
    if (rank >= 2) {
        s.split(st, "n", "no", "ni", p.vectors * lanes, kGuard);
        row = task = axis(0, rank);
        if (p.rows_per_task > 1) {
            task = row + "t";
            s.split(st, row, task, row + "r", p.rows_per_task, kGuard);
            row += "r";
        }
    } else {
        s.split(st, "n", "nb", "nr", p.block, kGuard).split(st, "nr", "no", "ni", p.vectors * lanes, kGuard);
        row = task = "nb";
    }
    s.split(st, "ni", "nv", "nl", lanes, kGuard).vectorize(st, "nl").unroll(st, "nv");
    if (p.parallel) s.parallel(st, task);
    return row;
}

/** Places every reduction (row-local ones per row of a single output when `p.reductions_per_row`,
 * else at root, in parallel when `p.parallel`); with `p.vectorize_reductions`, also vectorizes
 * each one (see GroupSchedules.h). */
void cpu_reductions(ScheduleSpec &s, const GroupShape &g, const std::string &row, int lanes, const CpuGroupParams &p) {
    for (const auto &r : g.reductions) {
        const StageRef pure{r.name}, update{r.name, 0};
        const bool per_row = p.reductions_per_row && g.outputs.size() == 1 && r.row_local;
        if (per_row)
            s.compute_at(r.name, g.outputs[0].first, row);
        else
            s.compute_root(r.name);
        // At root: parallel over the outermost axis, or along n when the outermost is reduced.
        std::string par = r.rank == 0 ? "" : r.row_local ? axis(0, r.rank) : r.n_is_data ? "n" : "";
        if (p.vectorize_reductions && r.along_n && !r.rvars.empty() && !g.ordered_reductions) {
            // A vector of partial results over the row (lane u sums elements u, u + lanes, ...);
            // the merged update then adds the lanes. The guarded tail leaves lanes at identity.
            const std::string lanes_func = r.name + "_lanes";
            s.split(update, r.rvars[0], "ro", "ri", lanes, kGuard).rfactor(update, "ri", "u", lanes_func);
            if (r.rank >= 1)
                s.compute_at(lanes_func, r.name, axis(0, r.rank));
            else
                s.compute_root(lanes_func);
            s.vectorize(StageRef{lanes_func}, "u").vectorize(StageRef{lanes_func, 0}, "u");
        } else if (p.vectorize_reductions && r.n_is_data && r.rank >= 1) {
            // Vector lanes along the kept axis n, innermost inside the reduction loops; with
            // several vectors per task, each row's adds go to that many independent accumulators
            // (unrolled), over a contiguous run of the row.
            s.split(pure, "n", "no", "nl", lanes, kGuard).vectorize(pure, "nl");
            std::vector<std::string> order{"nl"};
            if (p.reduction_vectors > 1) {
                s.split(update, "n", "no", "ni", p.reduction_vectors * lanes, kGuard)
                    .split(update, "ni", "nv", "nl", lanes, kGuard);
                order.push_back("nv");
            } else {
                s.split(update, "n", "no", "nl", lanes, kGuard);
            }
            order.insert(order.end(), r.rvars.begin(), r.rvars.end());
            order.push_back("no");
            s.reorder(update, order).vectorize(update, "nl");
            if (p.reduction_vectors > 1) s.unroll(update, "nv");
            if (par == "n") par = "no";
        }
        if (!per_row && !par.empty() && p.parallel) s.parallel(pure, par).parallel(update, par);
    }
}

}  // namespace

CpuGroupParams CpuGroupParams::library(bool vectorize_reductions) {
    CpuGroupParams p;
    p.vectorize_reductions = vectorize_reductions;
    // Column sums: 4 accumulators per task hide the add's latency
    // (docs/results/measurement_notes.md, column-sums).
    if (vectorize_reductions) p.reduction_vectors = 4;
    return p;
}

std::string CpuGroupParams::to_string() const {
    std::string s = "v=" + std::to_string(vectors) + (parallel ? " rows/task=" + std::to_string(rows_per_task) : " serial");
    if (block != kCpuBlock) s += " block=" + std::to_string(block);
    if (reduction_vectors > 1) s += " reduce-vectors=" + std::to_string(reduction_vectors);
    s += std::string(" reduce=") + (reductions_per_row ? "row" : "root") + (vectorize_reductions ? "+lanes" : "");
    return s;
}

ScheduleSpec cpu_group_schedule(const std::string &name, const GroupShape &g, const Halide::Target &target,
                                const CpuGroupParams &p) {
    const int lanes = cpu_lanes(target);
    ScheduleSpec s(name, Device::Cpu);
    s.description = "outputs: " + std::to_string(p.vectors) + " x " + std::to_string(lanes) + " lanes along n, " +
                    (p.parallel ? p.rows_per_task > 1 ? "parallel over tasks of " + std::to_string(p.rows_per_task) + " rows"
                                                      : std::string("parallel over rows")
                                : std::string("serial"));
    if (!g.reductions.empty())
        s.description +=
            std::string("; reductions ") + (p.vectorize_reductions ? "vectorized, " : "") +
            (g.outputs.size() == 1 && p.reductions_per_row ? "per output row where row-local, else at root"
                                                           : std::string("at root") + (p.parallel ? ", parallel" : ""));
    std::string first_row;
    for (const auto &[out, rank] : g.outputs) {
        const std::string row = cpu_output(s, out, rank, lanes, p);
        if (first_row.empty()) first_row = row;
    }
    cpu_reductions(s, g, first_row, lanes, p);
    return s;
}

namespace {

/** Fuses batch axes b0, b1... of a rank >= 3 stage into one loop; returns it ("" below rank 3). */
std::string fuse_batch(ScheduleSpec &s, const StageRef &st, int rank) {
    if (rank < 3) return "";
    std::string cur = "b0";
    for (int i = 1; i <= rank - 3; i++) {
        const std::string fused = "b0_" + std::to_string(i);
        s.fuse(st, cur, "b" + std::to_string(i), fused);
        cur = fused;
    }
    return cur;
}

/** GPU blocks x threads over a stage: 32x8 tiles of (n, m), or 256 threads along m where n is a
 * unit axis, or 256 along n for rank 1; batch axes are the third block dimension. */
void gpu_tile(ScheduleSpec &s, const StageRef &st, int rank, bool n_is_data) {
    if (rank == 0) return;
    if (rank == 1) {
        s.split(st, "n", "no", "ni", 256, kGuard).gpu_blocks(st, {"no"}).gpu_threads(st, {"ni"});
        return;
    }
    std::vector<std::string> blocks, threads;
    if (n_is_data) {
        s.split(st, "n", "no", "ni", 32, kGuard).split(st, "m", "mo", "mi", 8, kGuard).reorder(st, {"ni", "mi", "no", "mo"});
        blocks = {"no", "mo"};
        threads = {"ni", "mi"};
    } else {
        s.split(st, "m", "mo", "mi", 256, kGuard);
        blocks = {"mo"};
        threads = {"mi"};
    }
    const std::string batch = fuse_batch(s, st, rank);
    if (!batch.empty()) blocks.push_back(batch);
    s.gpu_blocks(st, blocks).gpu_threads(st, threads);
}

ScheduleSpec cuda_tiles(const std::string &name, const GroupShape &g) {
    ScheduleSpec s(name, Device::Cuda);
    s.description =
        "outputs tiled over GPU blocks and threads; reductions per thread in registers (one output, "
        "row-local) or at root in their own kernels";
    for (const auto &[out, rank] : g.outputs) gpu_tile(s, StageRef{out}, rank, true);
    for (const auto &r : g.reductions) {
        if (g.outputs.size() == 1 && r.row_local) {
            s.compute_at(r.name, g.outputs[0].first, "ni").store_in(r.name, MemoryLevel::Register);
        } else {
            // A root Func on the GPU needs its own kernel launch (a rank-0 one runs on the host).
            s.compute_root(r.name);
            gpu_tile(s, StageRef{r.name}, r.rank, r.n_is_data);
            gpu_tile(s, StageRef{r.name, 0}, r.rank, r.n_is_data);
        }
    }
    return s;
}

}  // namespace

ScheduleSpec cpu_elementwise(const GroupShape &g, const Halide::Target &target) {
    return cpu_group_schedule("cpu_elementwise", g, target, CpuGroupParams::library(/*vectorize_reductions=*/false));
}

ScheduleSpec cpu_rows(const GroupShape &g, const Halide::Target &target) {
    return cpu_group_schedule("cpu_rows", g, target, CpuGroupParams::library(/*vectorize_reductions=*/true));
}

ScheduleSpec cuda_elementwise(const GroupShape &g, const Halide::Target &) { return cuda_tiles("cuda_elementwise", g); }

bool cuda_rows_applies(const GroupShape &g) {
    if (g.outputs.size() != 1 || g.reductions.empty()) return false;
    const int rank = g.outputs[0].second;
    if (rank < 2 || rank > 3) return false;
    return std::all_of(g.reductions.begin(), g.reductions.end(),
                       [&](const GroupReduction &r) { return r.along_n && r.row_local && r.rank == rank && !r.rvars.empty(); });
}

ScheduleSpec cuda_rows(const GroupShape &g, const Halide::Target &target) {
    if (!cuda_rows_applies(g)) {
        ScheduleSpec s = cuda_elementwise(g, target);
        s.name = "cuda_rows";
        s.description = "no row structure here: " + s.description;
        return s;
    }
    constexpr int T = kCudaRowThreads;
    const auto &[y, rank] = g.outputs[0];
    const StageRef out{y};
    ScheduleSpec s("cuda_rows", Device::Cuda);
    s.description = "one block per row: " + std::to_string(T) +
                    " threads split each row reduction in shared memory, "
                    "then the row's outputs";
    // Thread i computes columns i, i + T, ... (adjacent threads, adjacent columns).
    std::vector<std::string> blocks{"m"};
    if (rank == 3) blocks.push_back("b0");
    s.split(out, "n", "no", "ni", T, kGuard).reorder(out, {"no", "ni"}).gpu_blocks(out, blocks).gpu_threads(out, {"ni"});
    for (const auto &r : g.reductions) {
        const std::string partial = r.name + "_threads";
        const StageRef update{r.name, 0}, pinit{partial}, pupdate{partial, 0};
        // The row's result and its T partial sums live in shared memory; each thread strides
        // over the row (coalesced), then one thread adds the T partials.
        s.compute_at(r.name, y, "m").store_in(r.name, MemoryLevel::GpuShared);
        if (g.ordered_reductions) continue;  // exact mode: the block's one thread sums in order
        s.split(update, r.rvars[0], "ro", "ri", T, kGuard).rfactor(update, "ri", "u", partial);
        s.compute_at(partial, y, "m")
            .store_in(partial, MemoryLevel::GpuShared)
            .gpu_threads(pinit, {"u"})
            .reorder(pupdate, {"ro", "u"})
            .gpu_threads(pupdate, {"u"});
    }
    return s;
}

ScheduleSpec fallback_group_schedule(const GroupShape &g, const Halide::Target &target) {
    if (g.kind == dsl::GroupKind::Attention && !target.has_gpu_feature()) return cpu_attention(g, target);
    if (g.kind == dsl::GroupKind::AttentionBackward && !target.has_gpu_feature()) return cpu_attention_backward(g, target);
    const bool elementwise = g.kind == dsl::GroupKind::Elementwise;
    ScheduleSpec s = target.has_gpu_feature() ? (elementwise ? cuda_elementwise(g, target) : cuda_rows(g, target))
                                              : (elementwise ? cpu_elementwise(g, target) : cpu_rows(g, target));
    s.group = g.kind;
    return s;
}

GroupShape example_group_shape(dsl::GroupKind kind) {
    GroupShape g;
    g.kind = kind;
    g.outputs = {{"y", 2}};
    if (kind == dsl::GroupKind::AttentionBackward) g.outputs = {{"y0", 2}, {"y1", 2}};
    if (kind == dsl::GroupKind::Reduction) {
        g.reductions = {{"softmax_max", 2, {"r"}, true, false, true}, {"softmax_sum", 2, {"r"}, true, false, true}};
    } else if (kind == dsl::GroupKind::MatmulEpilogue) {
        g.reductions = {{"matmul", 2, {"k"}, false, true, true}};
    }
    return g;
}

}  // namespace tessel::sched
