// Map: the workload (the pattern's sizes) -> the space of CpuAttentionParams -> the rules -> the
// cost terms -> the ScheduleSpec, each in the order of the header's comment.
#include "autoscheduler/AttentionSpace.h"

#include "dsl/ir/TypeInference.h"
#include "dsl/passes/AttentionFusion.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace tessel::autosched {

namespace {

double ceil_to(double x, double unit) { return std::ceil(x / unit) * unit; }

int64_t tasks_of(const Workload &w, const CandidateParams &p) {
    return w.attention.batch * (int64_t)std::ceil((double)w.attention.queries / p.attention.query_block);
}

}  // namespace

std::optional<Workload> attention_workload(const dsl::Graph &g, const dsl::FusionGroup &group, const sched::GroupShape &shape,
                                           const std::map<std::string, int64_t> &symbols) {
    std::string why_not;
    const std::optional<dsl::AttentionPattern> a = dsl::match_attention(g, group.outputs.back(), &why_not);
    if (!a) return std::nullopt;
    std::set<std::string> used;
    auto size = [&](dsl::ValueId v, int from_end) -> std::optional<int64_t> {
        const auto &dims = g.node(v).type.dims;
        const dsl::Dim d = dsl::resolve_dim(g, dims[dims.size() - 1 - from_end]);
        if (d.is_static()) return d.size;
        if (d.kind == dsl::Dim::Kind::Symbol && symbols.count(d.symbol)) {
            used.insert(d.symbol);
            return symbols.at(d.symbol);
        }
        return std::nullopt;
    };
    Workload w;
    w.kind = dsl::GroupKind::Attention;
    w.group.shape = shape;
    AttentionWork &at = w.attention;
    const auto s = size(a->output, 1), dv = size(a->output, 0), l = size(a->v, 1), d = size(a->q, 0);
    if (!s || !dv || !l || !d) return std::nullopt;
    at.queries = *s, at.dv = *dv, at.keys = *l, at.depth = *d, at.masked = a->mask != dsl::kNoValue;
    const int rank = g.node(a->output).type.rank();
    for (int axis = 2; axis < rank; axis++) {
        const auto b = size(a->output, axis);
        if (!b) return std::nullopt;
        at.batch *= *b;
    }
    for (const std::string &sym : used)
        w.group.sizes += (w.group.sizes.empty() ? "" : ",") + sym + "=" + std::to_string(symbols.at(sym));
    if (w.group.sizes.empty()) w.group.sizes = "static";
    w.group.rows = at.batch * at.queries;
    w.group.cols = at.dv;
    w.group.elements = (double)w.group.rows * (double)at.dv;
    w.group.bytes = 4.0 * at.batch * (at.queries * (at.depth + at.dv) + at.keys * (at.depth + at.dv));
    w.ordered_reductions = shape.ordered_reductions;
    return w;
}

ShapeClass attention_shape_class(const AttentionWork &a) {
    return a.queries <= sched::kAttentionDecodeRows ? ShapeClass::AttentionDecode : ShapeClass::AttentionPrefill;
}

std::vector<CandidateParams> enumerate_attention_space(const Workload &w, const TargetModel &model) {
    if (model.device == sched::Device::Cuda) return {};
    std::vector<CandidateParams> out;
    for (int qb : {8, 16, 32, 64, 128})
        for (int rows : {1, 2, 4, 6, 8})
            for (int vectors : {1, 2, 4})
                for (int copies : {0, 1, 2}) {  // K and V copied once, per block, or read in place
                    // Read in place (q K^T along the depth): the decode nest, for few query rows.
                    if (copies == 2 && w.attention.queries > sched::kAttentionInPlaceRows) continue;
                    CandidateParams p;
                    p.nest = NestFamily::Attention;
                    p.attention.query_block = qb;
                    p.attention.row_tile = rows;
                    p.attention.col_vectors = vectors;
                    p.attention.copy_kv_once = copies == 0;
                    p.attention.depth_vectors = copies == 2;
                    out.push_back(p);
                }
    return out;
}

CandidateParams attention_library_point(const Workload &w, const Halide::Target &target) {
    CandidateParams p;
    p.nest = NestFamily::Attention;
    p.attention = w.attention.queries <= sched::kAttentionDecodeRows
                      ? sched::CpuAttentionParams::decode(target, w.attention.queries <= sched::kAttentionInPlaceRows)
                      : sched::CpuAttentionParams::library(target);
    return p;
}

sched::ScheduleSpec make_attention_schedule(const CandidateParams &p, const Workload &w, const Halide::Target &target) {
    sched::ScheduleSpec s = sched::cpu_attention_schedule("tuned_attention", w.group.shape, target, p.attention);
    s.description = "autoscheduled: " + s.description;
    return s;
}

const std::vector<PruningRule> &attention_pruning_rules() {
    static const std::vector<PruningRule> rules = {
        {"registers", "rows x vectors + vectors + 1 <= vector registers",
         [](const CandidateParams &p, const Workload &, const TargetModel &m) -> std::string {
             const int need = p.attention.row_tile * p.attention.col_vectors + p.attention.col_vectors + 1;
             if (need > m.cpu.vector_registers)
                 return std::to_string(need) + " registers of " + std::to_string(m.cpu.vector_registers);
             return "";
         }},
        {"tile-in-block", "query rows per task are a multiple of the tile's rows",
         [](const CandidateParams &p, const Workload &, const TargetModel &) -> std::string {
             return p.attention.query_block % p.attention.row_tile ? "rows do not divide the block" : "";
         }},
        {"query-rows", "no more query rows per task than S rounded up to the tile",
         [](const CandidateParams &p, const Workload &w, const TargetModel &) -> std::string {
             const double most = std::max<double>(16, ceil_to((double)w.attention.queries, p.attention.row_tile));
             return p.attention.query_block > most ? "rows past S" : "";
         }},
    };
    return rules;
}

CostBreakdown estimate_attention_cpu(const Workload &w, const CandidateParams &p, const CpuModel &c) {
    const AttentionWork &a = w.attention;
    const sched::CpuAttentionParams &t = p.attention;
    CostBreakdown b;
    const double hz = c.ghz * 1e9, L = c.lanes;
    const double cols = t.col_vectors * L, bk = (double)dsl::kAttentionKvBlock;
    // Executed work: rows to whole tiles within a task, keys to whole blocks, Dv to whole tiles.
    const double blocks_per_row = std::ceil((double)a.queries / t.query_block);
    const double rows = std::min<double>(t.query_block, ceil_to((double)a.queries, t.row_tile));
    const double s_exec = blocks_per_row * ceil_to(rows, t.row_tile), l_exec = ceil_to((double)a.keys, bk);
    const double dv_exec = ceil_to((double)a.dv, cols), d = (double)a.depth;
    b.flops = 2.0 * a.batch * s_exec * l_exec * (d + dv_exec);
    // The tile's step: rows x vectors FMAs against vectors loads + rows broadcasts.
    const double fmas = t.row_tile * t.col_vectors, loads = t.col_vectors + t.row_tile;
    // ... and enough independent accumulators to cover the FMA latency on every unit, with half
    // as many again for the operand loads' own latency (the tile's loads are not prefetched).
    b.pipe_efficiency =
        fmas / std::max(fmas, loads * c.fma_units / c.load_ports) * std::min(1.0, fmas / (1.5 * c.fma_latency * c.fma_units));
    const double fma_rate = 2.0 * L * c.fma_units * hz;
    double seconds = b.flops / (fma_rate * b.pipe_efficiency);
    // Exps: one per score, one per state element per key block (about 20 vector ops each).
    const double exps = a.batch * s_exec * (l_exec + dv_exec * l_exec / bk);
    seconds += exps * 20.0 / (L * hz * 2.0);
    b.tasks = tasks_of(w, p);
    b.parallel_efficiency = (double)b.tasks / (std::ceil((double)b.tasks / c.cores) * c.cores);
    const double workers = c.cores * b.parallel_efficiency;
    b.compute_s = seconds / workers;
    b.vector_utilization = (double)a.dv / dv_exec;
    // K and V into blocks: K transposed (a gather, about one cycle per element), V a vector copy.
    // Copied once, it is a pass of its own before the nest (its cycles, and its bytes read and
    // written); copied per block, every task of a batch entry copies them again, inside the nest.
    const double kv = 4.0 * a.batch * a.keys * (a.depth + a.dv);
    const double qo = 4.0 * a.batch * a.queries * (a.depth + a.dv);
    const double copy_cycles = (double)a.batch * l_exec * (a.depth + dv_exec / L);
    if (t.depth_vectors) {
        // Read in place: no copy; q K^T's lanes summed per key (a short pass over the block).
        b.compute_s += blocks_per_row * (double)a.batch * l_exec * dsl::kAttentionLanes / L / hz / workers;
    } else if (t.copy_kv_once) {
        const double rate = (2.0 * kv <= c.l3_bytes ? c.l3_gbps : c.dram_gbps) * 1e9;
        b.epilogue_s = copy_cycles / hz / workers + 2.0 * kv / rate;  // gathers, then the bytes written
        b.cache_bytes = kv * blocks_per_row;                          // every query block reads the copies from L2/L3
    } else {
        b.compute_s += blocks_per_row * copy_cycles / hz / workers;
    }
    b.dram_bytes = qo + kv;
    const double dram_rate = (b.dram_bytes <= c.l3_bytes ? c.l3_gbps : c.dram_gbps) * 1e9;
    b.memory_s = b.dram_bytes / dram_rate + b.cache_bytes / (c.l2_gbps * 1e9 * workers);
    b.overhead_s = (b.tasks * c.task_overhead_us + c.call_overhead_us) * 1e-6;
    return b;
}

}  // namespace tessel::autosched
