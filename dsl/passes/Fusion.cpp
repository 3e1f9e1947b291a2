// Map: TargetResources presets, ResourceEstimate::to_string -> Planner (the mechanism: visit kernel
// ops in program order, try_merge() with policy + cycle + cut-edge + resource checks) ->
// Planner::finish() (constants, group order, outputs, multi-consumer log, traffic) ->
// plan_fusion(), FusionPlan::to_string().
#include "dsl/passes/Fusion.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <queue>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "dsl/analysis/MemoryTraffic.h"
#include "dsl/analysis/WeightDerived.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "dsl/passes/AttentionBackward.h"
#include "dsl/passes/AttentionFusion.h"
#include "dsl/passes/FusionPolicy.h"

namespace tessel::dsl {

TargetResources TargetResources::host_avx2() { return {"host-avx2", 16, 8, 0, 256 * 1024}; }
TargetResources TargetResources::host_avx512() { return {"host-avx512", 32, 16, 0, 1 << 20}; }
TargetResources TargetResources::cuda_sm90() { return {"cuda-sm90", 255, 1, 48 * 1024, int64_t(50) << 20, true}; }

std::string ResourceEstimate::to_string() const {
    std::string s = "registers " + std::to_string(registers_f32) + " f32";
    if (shared_bytes) s += ", shared " + format_bytes(shared_bytes);
    if (cache_bytes) s += ", cache " + format_bytes(cache_bytes);
    s += fits ? ": fits" : ": does NOT fit";
    if (!detail.empty()) s += " (" + detail + ")";
    return s;
}

int FusionPlan::group_of(ValueId v) const {
    for (const FusionGroup &grp : groups)
        if (std::find(grp.nodes.begin(), grp.nodes.end(), v) != grp.nodes.end()) return grp.id;
    return -1;
}

namespace {

std::string nm(const Graph &g, ValueId v) { return "%" + g.display_name(v); }

std::string sanitize(const std::string &s) {
    std::string out;
    for (char ch : s) out += std::isalnum((unsigned char)ch) ? ch : '_';
    return out;
}

/** The mechanism. Groups live in `members_` keyed by a root id; `root_` maps each planned node
 * (kernel ops except constants) to its group's root. */
class Planner {
public:
    Planner(const Graph &g, const FusionOptions &opts)
        : g_(g), opts_(opts), policy_(opts.policy ? *opts.policy : default_fusion_policy()) {
        size_t ids = 0;
        for (ValueId v : g.order()) ids = std::max<size_t>(ids, v + 1);
        pos_.assign(ids, SIZE_MAX);
        for (size_t i = 0; i < g.order().size(); i++) pos_[g.order()[i]] = i;
        for (ValueId v : g.order())
            for_each_dependency(g.node(v), [&](ValueId d) {
                auto &u = users_[d];
                if (u.empty() || u.back() != v) u.push_back(v);  // v's uses of d are consecutive
            });
        outputs_.insert(g.outputs.begin(), g.outputs.end());
        derived_ = weight_derived(g);
        match_attention_groups();
        match_attention_backward_groups();
    }

    FusionPlan run() {
        for (ValueId c : g_.order()) {
            const FusionClass cls = fusion_class(g_, c);
            if (cls == FusionClass::Outside) {
                if (g_.node(c).op != Op::Input) plan_.outside_kernels.push_back(c);
                continue;
            }
            if (cls == FusionClass::Constant) continue;
            if (auto a = attention_root_.find(c); a != attention_root_.end()) {
                // A member of a matched attention pattern: the group is formed whole, sealed.
                root_[c] = a->second;
                members_[a->second].insert(c);
                sorted_.erase(a->second);
                planned_.push_back(c);
                if (auto d = attention_decision_.find(c); d != attention_decision_.end()) plan_.decisions.push_back(d->second);
                continue;
            }
            if (auto d = attention_decision_.find(c); d != attention_decision_.end()) plan_.decisions.push_back(d->second);
            root_[c] = c;
            members_[c] = {c};
            sorted_.erase(c);
            // (1) producer -> consumer, one decision per distinct planned operand.
            std::vector<ValueId> seen;
            for (ValueId p : g_.node(c).inputs) {
                if (!root_.count(p) || std::count(seen.begin(), seen.end(), p)) continue;
                seen.push_back(p);
                FusionDecision d;
                if (root_[p] == root_[c]) {
                    // The policy judged all of c's reads from this group when c joined it.
                    d = FusionDecision::yes(
                        "epilogue", nm(g_, p) + " is already in the group of " + nm(g_, c) + " (joined through another operand)");
                } else if (sealed_.count(root_[p])) {
                    d = FusionDecision::no("attention", nm(g_, p) +
                                                            " is written by the online-softmax nest of an attention group; " +
                                                            nm(g_, c) + " reads it from memory");
                } else if (derived(p) != derived(c)) {
                    d = FusionDecision::no("weight-prepare", nm(g_, p) + " is computed from weights alone and prepared once; " +
                                                                 nm(g_, c) + " runs on every call and reads the prepared value");
                } else if (g_.node(p).op == Op::Copy || g_.node(c).op == Op::Copy) {
                    d = FusionDecision::no("layout-conversion", "the copy " + nm(g_, g_.node(p).op == Op::Copy ? p : c) +
                                                                    " converts a layout: a kernel of its own, so every reader "
                                                                    "reads the converted value from memory");
                } else {
                    d = policy_.producer_consumer(g_, p, c, sorted_members(root_[p]));
                    if (d) d = try_merge(root_[c], root_[p], d);
                }
                d.producer = p;
                d.consumer = c;
                if (!d.fused) add_cut(p, c, d.rule + ": " + d.reason);
                plan_.decisions.push_back(d);
            }
            // (2) siblings: earlier contractions / reductions in other groups.
            const std::optional<std::vector<ValueId>> keys = policy_.sibling_keys(g_, c);
            if (opts_.sibling_fusion && (cls == FusionClass::Contraction || cls == FusionClass::Reduction)) {
                for (ValueId s : sibling_candidates(c, keys)) {
                    if (!root_.count(s) || root_[s] == root_[c] || derived(s) != derived(c) || sealed_.count(root_[s])) continue;
                    auto d = policy_.sibling(g_, s, c);
                    if (!d) continue;
                    if (d->fused) *d = try_merge(root_[c], root_[s], *d);
                    d->producer = s;
                    d->consumer = c;
                    plan_.decisions.push_back(*d);
                }
            }
            if (keys)
                for (ValueId k : *keys) sibling_index_[k].push_back(c);
            planned_.push_back(c);
        }
        finish();
        return std::move(plan_);
    }

private:
    const Graph &g_;
    const FusionOptions &opts_;
    const FusionPolicy &policy_;
    std::vector<size_t> pos_;  ///< by ValueId: the position in program order
    std::map<ValueId, std::vector<ValueId>> users_;
    std::vector<char> derived_;  ///< weight_derived(g_)
    bool derived(ValueId v) const { return v < derived_.size() && derived_[v]; }
    std::map<ValueId, ValueId> root_;
    std::map<ValueId, std::set<ValueId>> members_;
    std::unordered_map<ValueId, std::vector<ValueId>> sorted_;  ///< sorted_members() of a root
    struct Cut {
        ValueId p, c;
        std::string why;
    };
    std::vector<Cut> cut_;
    /** Attention patterns (AttentionFusion.h): member -> the group's root (its pv matmul), the
     * roots, the pattern of each root, and the decision logged when the pv matmul is visited. */
    std::map<ValueId, ValueId> attention_root_;
    std::set<ValueId> sealed_;
    std::map<ValueId, AttentionPattern> attention_of_;
    std::map<ValueId, AttentionBackwardPattern> backward_of_;  ///< roots of attention-backward groups
    std::map<ValueId, FusionDecision> attention_decision_;

    /** Seals `nodes` as one group rooted at its last member; false if one is taken already. */
    bool seal(const std::vector<ValueId> &nodes) {
        if (std::any_of(nodes.begin(), nodes.end(), [&](ValueId n) { return attention_root_.count(n) || derived(n); }))
            return false;
        for (ValueId n : nodes) attention_root_[n] = nodes.back();
        sealed_.insert(nodes.back());
        return true;
    }

    void match_attention_backward_groups() {
        for (ValueId p : g_.order()) {
            const Op op = g_.node(p).op;
            if (op != Op::Softmax && op != Op::Div && op != Op::Exp) continue;  // p's forms (AttentionBackward.h)
            std::string why_not;
            const std::optional<AttentionBackwardPattern> b = match_attention_backward(g_, p, &why_not);
            FusionDecision d;
            if (b && opts_.target.gpu)
                why_not = "the GPU target " + opts_.target.name + " has no attention-backward schedule yet";
            if (b && why_not.empty() && seal(b->nodes)) {
                backward_of_[b->nodes.back()] = *b;
                d = FusionDecision::yes(
                    "attention-backward",
                    "dQ " + nm(g_, b->dq.result) + ", dK " + nm(g_, b->dk.result) + " and dV " + nm(g_, b->dv.result) +
                        " in one nest over pairs of query and key blocks that recomputes " + nm(g_, p) + " from " +
                        nm(g_, b->probs.q) + " and " + nm(g_, b->probs.kt) +
                        (b->probs.saved_lse != kNoValue ? " and the saved logsumexp " + nm(g_, b->probs.saved_lse)
                                                        : std::string(" and the rows' logsumexp it computes first")) +
                        ": no [S, L] matrix in memory");
            } else if (!why_not.empty()) {
                d = FusionDecision::no("attention-backward", why_not + "; planned unfused");
            } else {
                continue;
            }
            d.producer = p;
            d.consumer = b ? b->dq.result : kNoValue;
            attention_decision_[b ? b->nodes.back() : p] = d;
        }
    }

    void match_attention_groups() {
        for (ValueId v : g_.order()) {
            if (g_.node(v).op != Op::MatMul || fusion_class(g_, v) != FusionClass::Contraction) continue;
            std::string why_not;
            const std::optional<AttentionPattern> a = match_attention(g_, v, &why_not);
            FusionDecision d;
            if (a) {
                const ResourceEstimate e = attention_estimate(g_, *a, opts_);
                if (!e.fits) why_not = "the blocks would not fit: " + e.to_string();
                if (opts_.target.gpu) why_not = "the GPU target " + opts_.target.name + " has no attention schedule yet";
            }
            if (a && why_not.empty() && a->nodes.back() == v && seal(a->nodes)) {
                attention_of_[v] = *a;
                d = FusionDecision::yes("attention",
                                        "softmax(" + std::string(a->scale != 1.0 ? "scale * " : "") + nm(g_, a->q) + " @ " +
                                            nm(g_, a->kt) + (a->mask != kNoValue ? " + " + nm(g_, a->mask) : "") + ") @ " +
                                            nm(g_, a->v) + " is one online-softmax nest over blocks of " +
                                            std::to_string(kAttentionKvBlock) + " keys" +
                                            (a->lse != kNoValue ? ", also writing the rows' logsumexp " + nm(g_, a->lse) : "") +
                                            ": no [S, L] matrix in memory");
            } else if (!why_not.empty()) {
                d = FusionDecision::no("attention", why_not + "; planned unfused");
            } else {
                continue;
            }
            d.producer = g_.node(v).inputs[0];
            d.consumer = v;
            attention_decision_[v] = d;
        }
    }

    /** node -> indices into cut_ of the cut edges it is an end of. */
    std::map<ValueId, std::vector<size_t>> cuts_of_;
    std::set<ValueId> outputs_;
    /** Planned nodes in program order, and by sibling key (FusionPolicy::sibling_keys). */
    std::vector<ValueId> planned_;
    std::map<ValueId, std::vector<ValueId>> sibling_index_;
    FusionPlan plan_;

    bool is_output(ValueId v) const { return outputs_.count(v) != 0; }

    void add_cut(ValueId p, ValueId c, std::string why) {
        cuts_of_[p].push_back(cut_.size());
        cuts_of_[c].push_back(cut_.size());
        cut_.push_back({p, c, std::move(why)});
    }

    /** Earlier planned nodes the policy may call siblings of c, in program order: those sharing
     * a key with c, or all of them when the policy gives no keys. */
    std::vector<ValueId> sibling_candidates(ValueId c, const std::optional<std::vector<ValueId>> &keys) const {
        if (!keys) return planned_;
        std::vector<ValueId> out;
        for (ValueId k : *keys)
            if (auto it = sibling_index_.find(k); it != sibling_index_.end())
                out.insert(out.end(), it->second.begin(), it->second.end());
        std::sort(out.begin(), out.end(), [&](ValueId a, ValueId b) { return pos_.at(a) < pos_.at(b); });
        out.erase(std::unique(out.begin(), out.end()), out.end());
        (void)c;
        return out;
    }

    std::vector<ValueId> sorted(const std::set<ValueId> &s) const {
        std::vector<ValueId> v(s.begin(), s.end());
        std::sort(v.begin(), v.end(), [&](ValueId a, ValueId b) { return pos_.at(a) < pos_.at(b); });
        return v;
    }

    /** The members of group `root` in program order, kept until the group changes (the policy
     * asks for them at every merge it weighs). */
    const std::vector<ValueId> &sorted_members(ValueId root) {
        auto it = sorted_.find(root);
        if (it == sorted_.end()) it = sorted_.emplace(root, sorted(members_.at(root))).first;
        return it->second;
    }

    bool contains(const std::set<ValueId> &s, FusionClass c) const {
        for (ValueId v : s)
            if (fusion_class(g_, v) == c) return true;
        return false;
    }

    /** A node outside `s` on a path from s back into s, or kNoValue. Paths run between groups,
     * not only between nodes: every other group runs as one kernel, so reaching one member of it
     * reaches all of them (A = {matmul %4, %9 = f(%4, %6)} and B = {%6, %10 = g(%6, %4)} have no
     * node path from B back into B, yet B -> A -> B is a cycle of kernels).
     * Merges happen while the planner visits a node c, and s holds c, the latest node planned:
     * a node after s's last member is in no group yet and all its users come after it, so no
     * path through it ends in s, and the search stays within the program before c. */
    ValueId cycle_through(const std::set<ValueId> &s) const {
        size_t last = 0;
        for (ValueId v : s) last = std::max(last, pos_.at(v));
        std::set<ValueId> seen;
        std::vector<ValueId> work;
        auto reach = [&](ValueId u) {
            if (s.count(u) || pos_.at(u) > last || !seen.insert(u).second) return;
            work.push_back(u);
            if (auto r = root_.find(u); r != root_.end())
                for (ValueId m : members_.at(r->second))
                    if (seen.insert(m).second) work.push_back(m);
        };
        auto users_of = [&](ValueId v) -> const std::vector<ValueId> & {
            static const std::vector<ValueId> none;
            auto it = users_.find(v);
            return it == users_.end() ? none : it->second;
        };
        for (ValueId v : s)
            for (ValueId u : users_of(v)) reach(u);
        while (!work.empty()) {
            const ValueId v = work.back();
            work.pop_back();
            for (ValueId u : users_of(v)) {
                if (s.count(u)) return v;
                reach(u);
            }
        }
        return kNoValue;
    }

    static FusionDecision size_refusal(const std::string &over) {
        return FusionDecision::no(
            "size", "the fused group would be " + over + " (one group's compile time grows faster than linearly in its size)");
    }

    /** Merge group `b` into group `a` if the policy, the structure and the resources allow;
     * returns `ok` (the rule's decision) when merged, else the refusal. */
    FusionDecision try_merge(ValueId a, ValueId b, const FusionDecision &ok) {
        const std::set<ValueId> &A = members_[a], &B = members_[b];
        if (sealed_.count(a) || sealed_.count(b))
            return FusionDecision::no("attention", "an attention group is sealed: its nest computes nothing else");
        const std::vector<ValueId> &sa = sorted_members(a), &sb = sorted_members(b);
        FusionDecision m = policy_.merge(g_, sa, sb);
        if (!m) return m;
        if (!opts_.sibling_fusion && contains(A, FusionClass::Contraction) && contains(B, FusionClass::Contraction))
            return FusionDecision::no("merge", "sibling fusion is off: each contraction keeps its own group");
        // Members are ops (constants join in finish()): over on ops alone, no estimate needed.
        if (const std::string over = opts_.budget.over({int64_t(A.size() + B.size()), 0}); !over.empty())
            return size_refusal(over);
        std::vector<ValueId> su;
        su.reserve(sa.size() + sb.size());
        std::merge(sa.begin(), sa.end(), sb.begin(), sb.end(), std::back_inserter(su),
                   [&](ValueId x, ValueId y) { return pos_[x] < pos_[y]; });
        if (const std::string over = opts_.budget.over(group_size(g_, su)); !over.empty()) return size_refusal(over);
        std::set<ValueId> u = A;
        u.insert(B.begin(), B.end());
        // A cut edge inside A or inside B was refused when they formed, so only edges between
        // them matter; the earliest such cut is named.
        size_t first_cut = SIZE_MAX;
        for (ValueId v : B)
            if (auto it = cuts_of_.find(v); it != cuts_of_.end())
                for (size_t i : it->second)
                    if (u.count(cut_[i].p) && u.count(cut_[i].c)) first_cut = std::min(first_cut, i);
        if (first_cut != SIZE_MAX) {
            const Cut &cut = cut_[first_cut];
            return FusionDecision::no(
                "merge", "would put back together " + nm(g_, cut.p) + " -> " + nm(g_, cut.c) + ", cut earlier (" + cut.why + ")");
        }
        if (ValueId via = cycle_through(u); via != kNoValue)
            return FusionDecision::no("merge", "would create a cycle between groups through " + nm(g_, via));
        ResourceEstimate e = policy_.estimate(g_, su, opts_);
        if (!e.fits) return FusionDecision::no("resources", "the fused group would not fit: " + e.detail);
        for (ValueId v : B) root_[v] = a;
        members_[a] = std::move(u);
        members_.erase(b);
        sorted_[a] = std::move(su);
        sorted_.erase(b);
        return ok;
    }

    void finish() {
        // Constants: cloned into every group that reads them; a constant graph output gets a group.
        std::map<ValueId, std::set<ValueId>> extra;  // root -> constants
        for (ValueId k : g_.order()) {
            if (fusion_class(g_, k) != FusionClass::Constant) continue;
            bool any = false;
            for (ValueId u : users_[k])
                if (root_.count(u)) {
                    extra[root_[u]].insert(k);
                    any = true;
                }
            (void)any;
            if (is_output(k)) {
                root_[k] = k;
                members_[k] = {k};
            }
        }
        // Order groups topologically (Kahn over groups and the nodes outside them, earliest first).
        auto unit = [&](ValueId v) { return root_.count(v) ? root_[v] : v; };
        std::map<ValueId, std::set<ValueId>> succ;
        std::map<ValueId, int> indeg;
        std::map<ValueId, size_t> first;
        for (ValueId v : g_.order()) {
            if (fusion_class(g_, v) == FusionClass::Constant && !root_.count(v)) continue;
            const ValueId uv = unit(v);
            if (!first.count(uv)) first[uv] = pos_[v];
            indeg.emplace(uv, 0);
            for_each_dependency(g_.node(v), [&](ValueId d) {
                if (fusion_class(g_, d) == FusionClass::Constant && !root_.count(d)) return;
                const ValueId ud = unit(d);
                if (ud != uv && succ[ud].insert(uv).second) indeg[uv]++;
            });
        }
        using Item = std::pair<size_t, ValueId>;
        std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
        for (auto &[u, d] : indeg)
            if (d == 0) ready.push({first[u], u});
        std::vector<ValueId> order;
        while (!ready.empty()) {
            ValueId u = ready.top().second;
            ready.pop();
            if (members_.count(u)) order.push_back(u);
            for (ValueId s : succ[u])
                if (--indeg[s] == 0) ready.push({first[s], s});
        }
        // Every merge was checked for cycles between groups, so all groups are ordered; if one
        // were not, dropping it would lose its outputs, so stop instead.
        if (order.size() != members_.size())
            throw std::logic_error("fusion: " + std::to_string(members_.size() - order.size()) + " of " +
                                   std::to_string(members_.size()) + " groups of graph " + g_.name +
                                   " form a cycle and cannot be ordered (a bug in the fusion planner)");
        std::map<ValueId, int> id_of;
        for (ValueId r : order) {
            FusionGroup grp;
            grp.id = (int)plan_.groups.size();
            id_of[r] = grp.id;
            std::set<ValueId> nodes = members_[r];
            nodes.insert(extra[r].begin(), extra[r].end());
            grp.nodes = sorted(nodes);
            for (ValueId v : grp.nodes) {
                if (fusion_class(g_, v) == FusionClass::Constant && !(members_[r].count(v))) continue;
                bool out = is_output(v);
                for (ValueId u : users_[v]) out |= !nodes.count(u);
                if (out) grp.outputs.push_back(v);
            }
            grp.kind = backward_of_.count(r) ? GroupKind::AttentionBackward
                       : sealed_.count(r)    ? GroupKind::Attention
                                             : group_kind(g_, grp.nodes);
            grp.prepared = std::all_of(members_[r].begin(), members_[r].end(), [&](ValueId v) { return derived(v); });
            // Named after its first output; an attention group after its result, not the
            // logsumexp it may also write.
            const ValueId named = grp.outputs.empty() || grp.kind == GroupKind::Attention ? grp.nodes.back() : grp.outputs[0];
            grp.name = "g" + std::to_string(grp.id) + "_" + sanitize(g_.display_name(named));
            grp.estimate = grp.kind == GroupKind::Attention           ? attention_estimate(g_, attention_of_.at(r), opts_)
                           : grp.kind == GroupKind::AttentionBackward ? attention_estimate(g_, backward_of_.at(r).probs, opts_)
                                                                      : policy_.estimate(g_, grp.nodes, opts_);
            plan_.groups.push_back(std::move(grp));
        }
        // Values with several readers: recomputed / computed once inside one group, or materialized.
        for (ValueId v : g_.order()) {
            if (!root_.count(v) || fusion_class(g_, v) == FusionClass::Constant) continue;
            const auto &us = users_[v];
            if (us.size() < 2) continue;
            const int gv = id_of[root_[v]];
            std::vector<std::string> elsewhere;
            for (ValueId u : us)
                if (!root_.count(u) || root_[u] != root_[v])
                    elsewhere.push_back(
                        nm(g_, u) + (root_.count(u) ? " (group " + std::to_string(id_of[root_[u]]) + ")" : " (outside kernels)"));
            FusionDecision d;
            const std::string n = std::to_string(us.size());
            if (elsewhere.empty() && !is_output(v)) {
                const bool cheap =
                    fusion_class(g_, v) == FusionClass::Elementwise || fusion_class(g_, v) == FusionClass::Permutation;
                d = FusionDecision::yes(
                    "multi-consumer",
                    cheap ? "recomputed inline in each of its " + n + " readers, all in group " + std::to_string(gv)
                          : "computed once in group " + std::to_string(gv) + " and read by its " + n + " readers there");
            } else {
                std::string list;
                for (const auto &s : elsewhere) list += (list.empty() ? "" : ", ") + s;
                d = FusionDecision::no("multi-consumer", "materialized as an output of group " + std::to_string(gv) +
                                                             (list.empty() ? " (a graph output)" : ": also read by " + list));
            }
            d.producer = v;
            plan_.decisions.push_back(d);
        }
        std::vector<ValueId> ops;
        for (ValueId v : g_.order())
            if (root_.count(v)) ops.push_back(v);
        plan_.before = estimate_traffic_unfused(g_, ops, opts_.symbol_sizes);
        plan_.after = estimate_traffic_grouped(g_, plan_.groups, opts_.symbol_sizes);
    }
};

}  // namespace

FusionPlan plan_fusion(const Graph &g, const FusionOptions &opts) {
    FusionPlan p = Planner(g, opts).run();
    for (ValueId v : g.order())
        for (const Dim &d0 : g.node(v).type.dims) {
            const Dim d = resolve_dim(g, d0);
            if (d.kind != Dim::Kind::Symbol) continue;
            auto it = opts.symbol_sizes.find(d.symbol);
            p.symbol_sizes[d.symbol] = it != opts.symbol_sizes.end() ? it->second : -kDefaultSymbolSize;
        }
    return p;
}

std::string FusionPlan::to_string(const Graph &g) const {
    std::ostringstream os;
    os << "fusion plan for graph " << g.name << ": " << groups.size() << (groups.size() == 1 ? " group\n" : " groups\n");
    for (const FusionGroup &grp : groups) {
        std::set<ValueId> members(grp.nodes.begin(), grp.nodes.end());
        std::vector<ValueId> ins;
        for (ValueId v : grp.nodes)
            for (ValueId in : g.node(v).inputs)
                if (!members.count(in) && std::find(ins.begin(), ins.end(), in) == ins.end()) ins.push_back(in);
        os << "group " << grp.id << " \"" << grp.name << "\" (" << dsl::to_string(grp.kind) << ", " << grp.nodes.size() << " ops"
           << (grp.prepared ? ", prepared once from weights" : "") << ")\n";
        for (ValueId v : grp.nodes) os << "    " << print_node(g, v) << "\n";
        os << "  inputs: ";
        for (size_t i = 0; i < ins.size(); i++) os << (i ? ", " : "") << nm(g, ins[i]);
        os << "\n  outputs: ";
        for (size_t i = 0; i < grp.outputs.size(); i++) os << (i ? ", " : "") << nm(g, grp.outputs[i]);
        os << "\n  estimate: " << grp.estimate.to_string() << "\n";
    }
    if (!outside_kernels.empty()) {
        os << "runs outside kernels (effects and shape code, never fused):\n";
        for (ValueId v : outside_kernels) os << "    " << print_node(g, v) << "\n";
    }
    os << "decisions:\n";
    for (const FusionDecision &d : decisions) {
        os << "  [" << (d.fused ? "fused" : "cut") << "] " << d.rule << " " << nm(g, d.producer);
        if (d.consumer != kNoValue) os << " -> " << nm(g, d.consumer);
        os << ": " << d.reason << "\n";
    }
    if (decisions.empty()) os << "  (no candidate edges)\n";
    os << "memory traffic: before fusion " << format_bytes(before.bytes_read) << " read + " << format_bytes(before.bytes_written)
       << " written = " << format_bytes(before.total()) << "; after " << format_bytes(after.bytes_read) << " read + "
       << format_bytes(after.bytes_written) << " written = " << format_bytes(after.total());
    if (!symbol_sizes.empty()) {
        os << " with";
        for (const auto &[sym, n] : symbol_sizes) os << " " << sym << "=" << (n < 0 ? -n : n) << (n < 0 ? " (default)" : "");
    }
    if (before.total() > 0) {
        const int64_t saved = before.total() - after.total();
        char pct[32];
        std::snprintf(pct, sizeof pct, "%.1f%%", 100.0 * (double)saved / (double)before.total());
        os << "; saves " << format_bytes(saved) << " (" << pct << ")";
    }
    os << "\n";
    return os.str();
}

}  // namespace tessel::dsl
