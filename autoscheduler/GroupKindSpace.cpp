// Map: the workload (sizes, bytes, op costs) -> the space of CpuGroupParams -> the rules -> the
// cost terms -> the ScheduleSpec, each in the order of the header's comment.
#include "autoscheduler/GroupKindSpace.h"

#include "dsl/ir/TypeInference.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace tessel::autosched {

namespace {

bool has_row_local(const sched::GroupShape &s) {
    return s.outputs.size() == 1 &&
           std::any_of(s.reductions.begin(), s.reductions.end(), [](const sched::GroupReduction &r) { return r.row_local; });
}

bool has_kept_n(const sched::GroupShape &s) {
    return std::any_of(s.reductions.begin(), s.reductions.end(),
                       [](const sched::GroupReduction &r) { return !r.along_n && r.n_is_data && r.rank >= 1; });
}

bool all_along_n(const sched::GroupShape &s) {
    return !s.reductions.empty() &&
           std::all_of(s.reductions.begin(), s.reductions.end(), [](const sched::GroupReduction &r) { return r.along_n; });
}

int first_output_rank(const sched::GroupShape &s) { return s.outputs.empty() ? 2 : s.outputs[0].second; }

/** The value's extents at `symbols`, or nullopt when one is unbound (or unfolded shape code). */
std::optional<std::vector<int64_t>> extents(const dsl::Graph &g, dsl::ValueId v, const std::map<std::string, int64_t> &symbols,
                                            std::set<std::string> &used) {
    std::vector<int64_t> out;
    for (const dsl::Dim &d0 : g.node(v).type.dims) {
        const dsl::Dim d = dsl::resolve_dim(g, d0);
        if (d.is_static()) {
            out.push_back(d.size);
        } else if (d.kind == dsl::Dim::Kind::Symbol && symbols.count(d.symbol)) {
            out.push_back(symbols.at(d.symbol));
            used.insert(d.symbol);
        } else {
            return std::nullopt;
        }
    }
    return out;
}

double product(const std::vector<int64_t> &v) {
    double p = 1;
    for (int64_t e : v) p *= (double)e;
    return p;
}

int64_t tasks_of(const Workload &w, const CandidateParams &p) {
    if (!p.group.parallel) return 1;
    if (first_output_rank(w.group.shape) >= 2) return (w.group.rows + p.group.rows_per_task - 1) / p.group.rows_per_task;
    return (w.group.cols + p.group.block - 1) / p.group.block;
}

}  // namespace

ShapeClass group_shape_class(const sched::GroupShape &s) {
    if (s.reductions.empty()) return ShapeClass::Elementwise;
    const bool rows = std::all_of(s.reductions.begin(), s.reductions.end(),
                                  [](const sched::GroupReduction &r) { return r.row_local && r.along_n; });
    return rows ? ShapeClass::Rows : ShapeClass::Columns;
}

std::optional<Workload> group_kind_workload(const dsl::Graph &g, const dsl::FusionGroup &group, const sched::GroupShape &shape,
                                            const std::map<std::string, int64_t> &symbols) {
    Workload w;
    w.kind = group.kind;
    w.group.shape = shape;
    std::set<std::string> used;
    std::set<dsl::ValueId> members(group.nodes.begin(), group.nodes.end()), read;
    for (dsl::ValueId v : group.nodes)
        for (dsl::ValueId in : g.node(v).inputs)
            if (!members.count(in)) read.insert(in);
    double largest = 0;
    auto bytes_of = [&](dsl::ValueId v) -> std::optional<double> {
        auto e = extents(g, v, symbols, used);
        if (!e) return std::nullopt;
        largest = std::max(largest, product(*e));
        return product(*e) * dsl::byte_size(g.node(v).type.dtype);
    };
    for (dsl::ValueId v : read) {
        auto b = bytes_of(v);
        if (!b) return std::nullopt;
        w.group.bytes += *b;
    }
    for (dsl::ValueId v : group.outputs) {
        auto b = bytes_of(v);
        if (!b) return std::nullopt;
        w.group.bytes += *b;
        w.group.elements += *b / dsl::byte_size(g.node(v).type.dtype);
    }
    for (dsl::ValueId v : group.nodes)
        if (!extents(g, v, symbols, used)) return std::nullopt;
    if (!group.outputs.empty()) {
        const auto e = *extents(g, group.outputs[0], symbols, used);
        w.group.cols = e.empty() ? 1 : e.back();
        w.group.rows = e.empty() ? 1 : (int64_t)(product(e) / (double)w.group.cols);
    }
    w.group.reduced_elements = shape.reductions.empty() ? 0 : largest;
    for (const std::string &s : used)
        w.group.sizes += (w.group.sizes.empty() ? "" : ",") + s + "=" + std::to_string(symbols.at(s));
    if (w.group.sizes.empty()) w.group.sizes = "static";
    // The op cost table of the matmul epilogue, per output element.
    Workload costs;
    add_epilogue_cost(g, group.nodes, costs);
    w.group.flops_per_element = costs.epilogue_flops;
    w.group.scalar_calls_per_element = costs.epilogue_scalar_calls;
    w.ordered_reductions = shape.ordered_reductions;
    return w;
}

std::vector<CandidateParams> enumerate_group_space(const Workload &w, const TargetModel &model) {
    std::vector<CandidateParams> out;
    const CandidateParams library = group_library_point(w);
    if (model.device == sched::Device::Cuda) return {library};
    const sched::GroupShape &s = w.group.shape;
    const bool rank1 = first_output_rank(s) < 2;
    // Only knobs that change the nest for this group: the rest keep the library's value.
    const std::vector<bool> per_row = has_row_local(s) ? std::vector<bool>{true, false} : std::vector<bool>{true};
    const std::vector<bool> lanes =
        s.reductions.empty() ? std::vector<bool>{library.group.vectorize_reductions} : std::vector<bool>{true, false};
    std::vector<sched::CpuGroupParams> tasks;
    sched::CpuGroupParams serial;
    serial.parallel = false;
    tasks.push_back(serial);
    if (rank1) {
        for (int block : {1024, 4096, 16384, 65536}) {
            sched::CpuGroupParams t;
            t.block = block;
            tasks.push_back(t);
        }
    } else {
        for (int rows : {1, 2, 4, 8, 16, 32, 64}) {
            sched::CpuGroupParams t;
            t.rows_per_task = rows;
            tasks.push_back(t);
        }
    }
    const bool kept_n = has_kept_n(s);
    const std::vector<int> reduce_vectors =
        kept_n ? std::vector<int>{1, 2, 4, 8} : std::vector<int>{library.group.reduction_vectors};
    for (const auto &t : tasks)
        for (int v : {1, 2, 4})
            for (bool pr : per_row)
                for (bool ln : lanes)
                    for (int rv : reduce_vectors) {
                        if (kept_n && rv > 1 && !ln) continue;  // only the vectorized kept-n reduction has them
                        CandidateParams p;
                        p.nest = NestFamily::Group;
                        p.group = t;
                        p.group.vectors = v;
                        p.group.reductions_per_row = pr;
                        p.group.vectorize_reductions = ln;
                        p.group.reduction_vectors = rv;
                        out.push_back(p);
                    }
    return out;
}

CandidateParams group_library_point(const Workload &w) {
    CandidateParams p;
    p.nest = NestFamily::Group;
    p.group = sched::CpuGroupParams::library(/*vectorize_reductions=*/w.kind != dsl::GroupKind::Elementwise);
    return p;
}

sched::ScheduleSpec make_group_schedule(const CandidateParams &p, const Workload &w, const Halide::Target &target) {
    if (target.has_gpu_feature()) return sched::fallback_group_schedule(w.group.shape, target);
    sched::ScheduleSpec s = sched::cpu_group_schedule("tuned_group", w.group.shape, target, p.group);
    s.group = w.kind;
    s.description = "autoscheduled: " + s.description;
    return s;
}

const std::vector<PruningRule> &group_pruning_rules() {
    static const std::vector<PruningRule> rules = {
        {"ordered-sum", "exact mode: no lane partial sums on a reduction along n",
         [](const CandidateParams &p, const Workload &w, const TargetModel &) -> std::string {
             if (w.ordered_reductions && p.group.vectorize_reductions && all_along_n(w.group.shape))
                 return "lane partial sums would reorder the row sums";
             return "";
         }},
        {"vector-width", "v x lanes <= columns (one vector always allowed)",
         [](const CandidateParams &p, const Workload &w, const TargetModel &m) -> std::string {
             if (p.group.vectors > 1 && (int64_t)p.group.vectors * m.cpu.lanes > w.group.cols)
                 return std::to_string(p.group.vectors) + " vectors but rows of " + std::to_string(w.group.cols);
             return "";
         }},
        {"parallel-work", "as many tasks as cores where the rows (rank 1: elements) allow it",
         [](const CandidateParams &p, const Workload &w, const TargetModel &m) -> std::string {
             if (!p.group.parallel) return "";
             if (first_output_rank(w.group.shape) < 2) {  // the smallest block is always allowed
                 if (p.group.block > 1024 && tasks_of(w, p) < m.cpu.cores) return "fewer tasks than cores";
                 return "";
             }
             const int64_t most = (w.group.rows + m.cpu.cores - 1) / m.cpu.cores;
             if (p.group.rows_per_task > 1 && p.group.rows_per_task > most) return "fewer tasks than cores";
             return "";
         }},
    };
    return rules;
}

CostBreakdown estimate_group_cpu(const Workload &w, const CandidateParams &p, const CpuModel &c) {
    const GroupWork &gw = w.group;
    const sched::GroupShape &s = gw.shape;
    CostBreakdown b;
    const double L = c.lanes, hz = c.ghz * 1e9;
    const double chunk = p.group.vectors * L;
    // Each row's last partial chunk runs at the scalar rate.
    const double rows_out = std::max(1.0, gw.elements / std::max<double>(1, gw.cols));
    const double tail = std::fmod((double)gw.cols, chunk);
    const double scalar_elems = rows_out * tail, vector_elems = gw.elements - scalar_elems;
    const double vector_rate = 2.0 * L * c.fma_units * hz, scalar_rate = 2.0 * c.fma_units * hz;
    double seconds = vector_elems * gw.flops_per_element / vector_rate + scalar_elems * gw.flops_per_element / scalar_rate;
    seconds += (vector_elems / chunk + scalar_elems) / hz;  // one cycle of loop per iteration
    // Reductions: lane partial sums keep one vector add per lane group in flight; a kept-n
    // reduction vectorizes along n; otherwise each element waits for the previous add.
    double cache = 0, dram = gw.bytes;
    const bool fits_l3 = gw.reduced_elements * 4 <= c.l3_bytes;
    for (const auto &r : s.reductions) {
        const bool lanes = p.group.vectorize_reductions && !w.ordered_reductions && r.along_n;
        const bool kept_n = p.group.vectorize_reductions && !r.along_n && r.n_is_data;
        // Kept n: one add per vector per row, `reduction_vectors` independent chains hide the
        // add's latency.
        const double per_elem_cycles = lanes    ? c.fma_latency / L
                                       : kept_n ? std::max(1.0, (double)c.fma_latency / p.group.reduction_vectors) / L
                                                : (double)c.fma_latency;
        seconds += gw.reduced_elements * per_elem_cycles / hz;
        const bool per_row = p.group.reductions_per_row && s.outputs.size() == 1 && r.row_local;
        // Its input is read once more by the outputs: from L1/L2 inside a row, else from
        // wherever the whole input fits.
        const double again = gw.reduced_elements * 4;
        if (per_row || fits_l3)
            cache += again;
        else
            dram += again;
    }
    b.tasks = tasks_of(w, p);
    b.parallel_efficiency = p.group.parallel ? (double)b.tasks / (std::ceil((double)b.tasks / c.cores) * c.cores) : 1.0;
    const double workers = p.group.parallel ? c.cores * b.parallel_efficiency : 1.0;
    b.flops = gw.elements * gw.flops_per_element;
    b.vector_utilization = gw.elements > 0 ? vector_elems / gw.elements : 1;
    b.compute_s = seconds / workers;
    // Warm data (the tuner and a pipeline both find small groups in cache): the rate of the
    // level the bytes fit in. One thread streams at about 60% of both cores' bandwidth.
    const double dram_rate = gw.bytes <= c.l2_bytes * c.cores ? c.l2_gbps * c.cores
                             : gw.bytes <= c.l3_bytes         ? c.l3_gbps
                                                              : c.dram_gbps;
    const double share = p.group.parallel ? std::min(1.0, 0.6 + 0.4 * (workers - 1)) : 0.6;
    b.dram_bytes = dram;
    b.cache_bytes = cache;
    b.memory_s = dram / (dram_rate * 1e9 * share) + cache / (c.l2_gbps * 1e9 * workers);
    b.epilogue_s = gw.elements * gw.scalar_calls_per_element * c.scalar_call_ns * 1e-9 / workers;
    b.overhead_s = ((p.group.parallel ? b.tasks * c.task_overhead_us : 0) + c.call_overhead_us) * 1e-6;
    return b;
}

}  // namespace tessel::autosched
