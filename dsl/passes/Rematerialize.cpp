#include "dsl/passes/Rematerialize.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "dsl/analysis/MemoryTraffic.h"
#include "dsl/ir/Verifier.h"
#include "dsl/passes/DCE.h"
#include "dsl/passes/FusionPolicy.h"

namespace tessel::dsl {

int64_t byte_steps(const BufferAssignment &a) {
    int64_t total = 0;
    for (const auto &al : a.allocations) total += al.bytes * (al.last_step - al.first_step + 1);
    return total;
}

double op_flops(const Graph &g, ValueId v, const std::map<std::string, int64_t> &symbols) {
    const Node &n = g.node(v);
    const double out = (double)value_numel(g, v, symbols);
    switch (n.op) {
    case Op::MatMul: {
        const Node &a = g.node(n.inputs[0]);
        return 2 * out * (double)dim_size(g, a.type.dims.back(), symbols);
    }
    case Op::Softmax: return 4 * (double)value_numel(g, n.inputs[0], symbols);
    case Op::Transpose:
    case Op::Reshape:
    case Op::Slice:
    case Op::Concat:
    case Op::UpdateTail:
    case Op::Constant:
    case Op::Input: return 0;
    default:
        if (is_transcendental(n.op)) return 10 * out;  // a polynomial each
        if (is_reduction(n.op)) return (double)value_numel(g, n.inputs[0], symbols);
        return out;
    }
}

std::string RematDecision::to_string() const {
    std::ostringstream os;
    os << (applied ? "[recompute] " : "[keep] ") << "%" << value_name << " (" << format_bytes(bytes) << ") for readers from step "
       << late_step << ": " << cone_ops << " ops, +" << extra_flops << " FLOP, traffic " << (traffic_delta >= 0 ? "+" : "")
       << format_bytes(traffic_delta >= 0 ? traffic_delta : -traffic_delta) << (traffic_delta >= 0 ? "" : " saved") << ", net "
       << net_seconds * 1e6 << " us; peak " << format_bytes(peak_before) << " -> " << format_bytes(peak_after)
       << ", bytes x steps " << byte_steps_before << " -> " << byte_steps_after << ": " << reason;
    return os.str();
}

std::string RematResult::to_string() const {
    std::ostringstream os;
    if (!skipped.empty()) return "rematerialization skipped: " + skipped + "\n";
    os << "rematerialization: peak " << format_bytes(peak_before) << " -> " << format_bytes(peak_after);
    if (budget)
        os << ", budget " << format_bytes(*budget)
           << (fits ? " (fits)" : " (does not fit: over by " + format_bytes(peak_after - *budget) + ")");
    os << "\n";
    for (const auto &d : decisions) os << "  " << d.to_string() << "\n";
    return os.str();
}

namespace {

struct Planned {
    FusionPlan plan;
    BufferAssignment buffers;
};

Planned plan_and_assign(const Graph &g, const RematOptions &o) {
    FusionOptions f = o.fusion;
    f.symbol_sizes = o.symbols;
    Planned p;
    p.plan = plan_fusion(g, f);
    BufferAssignmentOptions b = o.buffers;
    if (o.in_place_check) b.schedule_reads_before_writes = o.in_place_check(g, p.plan);
    p.buffers = assign_buffers(g, p.plan, o.symbols, b);
    return p;
}

struct Candidate {
    ValueId value;
    int late_step;
    std::vector<ValueId> cone;          ///< program order
    std::vector<ValueId> late_readers;  ///< nodes reading value at steps >= late_step
};

/** Steps of the groups whose members read v (from outside v's group), with the reading nodes. */
std::map<int, std::vector<ValueId>> readers_by_step(const Graph &g, const FusionPlan &plan, ValueId v) {
    std::map<int, std::vector<ValueId>> out;
    const int home = plan.group_of(v);
    for (ValueId u : g.users(v)) {
        const int s = plan.group_of(u);
        if (s < 0 || s == home) continue;
        out[s].push_back(u);
    }
    return out;
}

/** Whether u's storage is live at step t anyway (so a clone may read it). */
bool live_at(const Graph &g, const BufferAssignment &a, ValueId u, int t) {
    const Node &n = g.node(u);
    if (n.op == Op::Input || n.op == Op::Constant || g.is_output(u)) return true;
    const LogicalBuffer *b = a.buffer(u);
    if (!b) return false;
    if (b->allocation < 0) return true;  // the caller's storage
    return a.allocations[b->allocation].last_step >= t;
}

std::optional<std::vector<ValueId>> cone_of(const Graph &g, const Planned &p, ValueId v, int t, size_t max_ops) {
    std::vector<ValueId> cone, work = {v};
    std::unordered_set<ValueId> seen = {v};
    while (!work.empty()) {
        const ValueId u = work.back();
        work.pop_back();
        const Node &n = g.node(u);
        if (!n.is_pure() || !is_kernel_op(g, u)) return std::nullopt;
        cone.push_back(u);
        if (cone.size() > max_ops) return std::nullopt;
        for (ValueId in : n.inputs)
            if (!live_at(g, p.buffers, in, t) && seen.insert(in).second) work.push_back(in);
    }
    std::sort(cone.begin(), cone.end(), [&](ValueId a, ValueId b) { return g.position(a) < g.position(b); });
    return cone;
}

std::string fresh_name(const Graph &g, const std::string &base) {
    for (int i = 0;; i++) {
        const std::string name = base + ".remat" + (i ? "." + std::to_string(i) : "");
        if (g.find(name) == kNoValue) return name;
    }
}

/** g with c applied: the cone cloned before the first late reader, late readers redirected. */
Graph apply(const Graph &g, const Candidate &c) {
    Graph h = g;
    ValueId first = c.late_readers.front();
    for (ValueId r : c.late_readers)
        if (h.position(r) < h.position(first)) first = r;
    std::unordered_map<ValueId, ValueId> clone;
    for (ValueId u : c.cone) {
        Node n = h.node(u);
        n.id = kNoValue;
        for (ValueId &in : n.inputs)
            if (clone.count(in)) in = clone.at(in);
        n.name = n.name.empty() ? std::string() : fresh_name(h, n.name);
        clone[u] = h.insert_before(first, std::move(n));
    }
    for (ValueId r : c.late_readers)
        for (ValueId &in : h.node(r).inputs)
            if (in == c.value) in = clone.at(c.value);
    eliminate_dead_code(h);
    return h;
}

std::vector<Candidate> candidates(const Graph &g, const Planned &p, const RematOptions &o) {
    std::vector<std::pair<int64_t, Candidate>> scored;  // bytes x gap, candidate
    for (const auto &b : p.buffers.buffers) {
        if (b.kind != LogicalBuffer::Kind::Arena) continue;
        const auto readers = readers_by_step(g, p.plan, b.value);
        for (const auto &[t, nodes] : readers) {
            if (t <= b.def_step + 1) continue;  // no gap to save
            auto cone = cone_of(g, p, b.value, t, o.max_cone_ops);
            if (!cone) continue;
            Candidate c{b.value, t, *cone, {}};
            for (const auto &[s, ns] : readers)
                if (s >= t) c.late_readers.insert(c.late_readers.end(), ns.begin(), ns.end());
            scored.push_back({b.bytes * (t - b.def_step), std::move(c)});
        }
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto &x, const auto &y) { return x.first > y.first; });
    std::vector<Candidate> out;
    for (size_t i = 0; i < scored.size() && i < kMaxRematCandidates; i++) out.push_back(std::move(scored[i].second));
    // Forced values are weighed even when they rank lower.
    for (size_t i = kMaxRematCandidates; i < scored.size(); i++)
        if (o.force.count(g.display_name(scored[i].second.value))) out.push_back(std::move(scored[i].second));
    return out;
}

}  // namespace

RematResult rematerialize(Graph &g, const RematOptions &o) {
    RematResult result;
    result.budget = o.memory_budget;
    size_t kernel_ops = 0;
    for (ValueId v : g.order()) kernel_ops += is_kernel_op(g, v);
    if (kernel_ops > kMaxRematKernelOps) {
        result.skipped = std::to_string(kernel_ops) + " kernel ops > " + std::to_string(kMaxRematKernelOps) +
                         ": each candidate would re-plan the whole graph";
        return result;  // peaks unknown (0): nothing was planned
    }
    Planned current = plan_and_assign(g, o);
    result.peak_before = current.buffers.planned_peak;
    std::set<std::string> forced = o.force;
    std::vector<RematDecision> last_round;
    for (int round = 0; round < o.max_rounds; round++) {
        const int64_t peak = current.buffers.planned_peak, steps_bytes = byte_steps(current.buffers);
        const bool over = o.memory_budget && peak > *o.memory_budget;
        std::vector<std::pair<RematDecision, Graph>> weighed;
        for (const Candidate &c : candidates(g, current, o)) {
            Graph h = apply(g, c);
            const Planned after = plan_and_assign(h, o);
            RematDecision d;
            d.value = c.value;
            d.value_name = g.display_name(c.value);
            d.late_step = c.late_step;
            d.cone_ops = c.cone.size();
            d.bytes = current.buffers.buffer(c.value)->bytes;
            d.peak_before = peak;
            d.peak_after = after.buffers.planned_peak;
            d.byte_steps_before = steps_bytes;
            d.byte_steps_after = byte_steps(after.buffers);
            for (ValueId u : c.cone) d.extra_flops += op_flops(g, u, o.symbols);
            d.traffic_delta = after.plan.after.total() - current.plan.after.total();
            d.net_seconds = d.extra_flops / o.flops_per_second + (double)d.traffic_delta / o.bytes_per_second;
            weighed.push_back({std::move(d), std::move(h)});
        }
        // Pick one: a forced value, else the cheapest per peak byte saved while over budget,
        // else the free candidate that saves the most bytes x steps.
        // Priority: forced values (earliest late step first), then while over budget the least
        // net time per peak byte saved, then free candidates saving the most bytes x steps.
        int best = -1;
        std::pair<int, double> best_key;
        for (size_t i = 0; i < weighed.size(); i++) {
            RematDecision &d = weighed[i].first;
            std::pair<int, double> key;
            if (forced.count(d.value_name)) {
                d.reason = "forced (RematOptions::force)";
                key = {0, (double)d.late_step};
            } else if (over && d.peak_after < d.peak_before) {
                const double per_byte = d.net_seconds / (double)(d.peak_before - d.peak_after);
                d.reason = "over budget: " + std::to_string(per_byte * 1e9) + " ns per peak byte saved";
                key = {1, per_byte};
            } else if (over) {
                d.reason = "over budget, but the peak does not drop";
                continue;
            } else if (d.net_seconds <= 0 && d.byte_steps_after < d.byte_steps_before && d.peak_after <= d.peak_before) {
                d.reason = "free: the store and reload it saves pay for the recompute";
                key = {2, -(double)(d.byte_steps_before - d.byte_steps_after)};
            } else {
                d.reason = d.net_seconds > 0 ? "recomputing costs more time than keeping it" : "saves no memory";
                continue;
            }
            if (best < 0 || key < best_key) best = (int)i, best_key = key;
        }
        if (best < 0) {
            for (auto &w : weighed) last_round.push_back(std::move(w.first));
            break;
        }
        RematDecision chosen = weighed[best].first;
        chosen.applied = true;
        forced.erase(chosen.value_name);
        g = std::move(weighed[best].second);
        result.decisions.push_back(std::move(chosen));
        result.changed = true;
        current = plan_and_assign(g, o);
    }
    for (auto &d : last_round) result.decisions.push_back(std::move(d));
    result.peak_after = current.buffers.planned_peak;
    result.fits = !o.memory_budget || result.peak_after <= *o.memory_budget;
    return result;
}

}  // namespace tessel::dsl
