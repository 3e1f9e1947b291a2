// Map: helpers (the single reader of a value, a gradient's optional scale) -> match_attention_backward():
// p's two readers, then dS's two, then legality -> recompute_attention_probabilities(): clone p's
// chain for the backward's readers, keep the rewrite only when both patterns then match.
#include "dsl/passes/AttentionBackward.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

namespace {

std::string nm(const Graph &g, ValueId v) { return "%" + g.display_name(v); }

/** The one reader of v, or kNoValue when it has none or several. */
ValueId only_reader(const Graph &g, ValueId v) {
    const std::vector<ValueId> us = g.users(v);
    return us.size() == 1 ? us[0] : kNoValue;
}

/** matmul(lhs, x) as a gradient: its scale epilogue when the matmul's only reader multiplies or
 * divides it by a one-value constant (and it is no graph output), else the matmul itself. */
std::optional<AttentionGradient> gradient(const Graph &g, ValueId mm, ValueId lhs) {
    const Node &n = g.node(mm);
    if (n.op != Op::MatMul || n.inputs[0] != lhs) return std::nullopt;
    AttentionGradient a{mm, n.inputs[1], mm, 1.0, false};
    const ValueId r = only_reader(g, mm);
    if (r == kNoValue || g.is_output(mm)) return a;
    const Node &e = g.node(r);
    for (int side = 0; side < 2; side++) {
        const bool legal = e.op == Op::Mul || (e.op == Op::Div && side == 0);
        if (!legal || e.inputs.size() != 2 || e.inputs[side] != mm) continue;
        const Node &c = g.node(e.inputs[1 - side]);
        if (c.op != Op::Constant || c.attrs.value.size() != 1 || e.inputs[0] == e.inputs[1]) continue;
        a.result = r;
        a.divides = e.op == Op::Div;
        a.scale = a.divides ? 1.0 / c.attrs.value[0] : c.attrs.value[0];
        return a;
    }
    return a;
}

}  // namespace

std::optional<AttentionBackwardPattern> match_attention_backward(const Graph &g, ValueId p, std::string *why_not) {
    why_not->clear();
    AttentionBackwardPattern b;
    std::vector<ValueId> chain;
    if (!match_attention_probabilities(g, p, &b.probs, &chain, /*saved_lse=*/true)) return std::nullopt;
    // p's readers: transpose(p) -> dV, and p * (dP - r) -> dS.
    ValueId t1 = kNoValue, mul = kNoValue;
    for (ValueId u : g.users(p)) {
        const Node &n = g.node(u);
        if (swaps_last_two(n) && t1 == kNoValue)
            t1 = u;
        else if (n.op == Op::Mul && mul == kNoValue && n.inputs[0] != n.inputs[1])
            mul = u;
        else
            return std::nullopt;
    }
    if (t1 == kNoValue || mul == kNoValue) return std::nullopt;
    const ValueId dv_mm = only_reader(g, t1);
    if (dv_mm == kNoValue) return std::nullopt;
    const std::optional<AttentionGradient> dv = gradient(g, dv_mm, t1);
    if (!dv) return std::nullopt;
    b.dv = *dv;
    const ValueId centered = g.node(mul).inputs[g.node(mul).inputs[0] == p ? 1 : 0];
    const Node &c = g.node(centered);
    if (c.op != Op::Sub || g.node(c.inputs[0]).op != Op::MatMul) return std::nullopt;
    const ValueId dp = c.inputs[0];
    b.row_dot = c.inputs[1];
    b.d_out = g.node(dp).inputs[0];
    b.probs.v = b.d_out;  // [..., S, Dv]: the rows a block holds, for the resource estimate
    b.vt = g.node(dp).inputs[1];
    if (const Node &vt = g.node(b.vt); swaps_last_two(vt) && only_reader(g, b.vt) == dp) b.v = vt.inputs[0];
    b.ds = mul;
    // dS's readers: matmul(dS, K) -> dQ, and transpose(dS) -> matmul(dSᵀ, Q) -> dK.
    ValueId t2 = kNoValue, dq_mm = kNoValue;
    for (ValueId u : g.users(mul)) {
        if (swaps_last_two(g.node(u)) && t2 == kNoValue)
            t2 = u;
        else if (g.node(u).op == Op::MatMul && g.node(u).inputs[0] == mul && dq_mm == kNoValue)
            dq_mm = u;
        else
            return std::nullopt;
    }
    if (t2 == kNoValue || dq_mm == kNoValue || only_reader(g, t2) == kNoValue) return std::nullopt;
    const std::optional<AttentionGradient> dq = gradient(g, dq_mm, mul), dk = gradient(g, only_reader(g, t2), t2);
    if (!dq || !dk) return std::nullopt;
    b.dq = *dq;
    b.dk = *dk;

    // The form is the backward; now whether fusing it is legal.
    if (g.mode != NumericMode::Fast) {
        *why_not =
            "the recomputed softmax sums each row block by block, rescaling as the row maximum grows: a "
            "reassociation, which " +
            std::string(to_string(g.mode)) + " mode forbids (declare `graph " + g.name + " mode=fast` to allow it)";
        return std::nullopt;
    }
    std::vector<ValueId> inner = chain;  // values that never exist in memory
    if (b.probs.k != kNoValue) inner.push_back(b.probs.kt);
    for (ValueId v : {t1, dp, centered, mul, t2}) inner.push_back(v);
    if (b.v != kNoValue) inner.push_back(b.vt);
    for (const AttentionGradient *x : {&b.dq, &b.dk, &b.dv})
        if (x->result != x->matmul) inner.push_back(x->matmul);
    std::set<ValueId> inside(inner.begin(), inner.end());
    for (const AttentionGradient *x : {&b.dq, &b.dk, &b.dv}) inside.insert(x->result);
    if (!stays_inside(g, inner, inside, "the attention backward", why_not)) return std::nullopt;
    for (ValueId v : inside)
        if (g.node(v).op != Op::Constant && (g.node(v).type.dtype != DType::F32 || g.node(v).type.rank() < 2)) {
            *why_not = nm(g, v) + " is " + to_string(g.node(v).type.dtype) + " of rank " + std::to_string(g.node(v).type.rank()) +
                       "; the fused backward reads and writes f32 values of rank >= 2";
            return std::nullopt;
        }
    if (!row_vector(g, b.row_dot, dp)) {
        *why_not = "the row term " + nm(g, b.row_dot) + " of " + nm(g, centered) + " is not one value per row ([..., S, 1])";
        return std::nullopt;
    }
    if (!same_type(g, g.node(b.dk.result).type, g.node(b.dv.result).type)) {
        *why_not = "dK " + nm(g, b.dk.result) + " and dV " + nm(g, b.dv.result) +
                   " differ in shape (D != Dv); the nest accumulates them together, per key";
        return std::nullopt;
    }
    for (ValueId x : {b.probs.mask, b.probs.saved_lse, b.row_dot, b.d_out, b.vt, b.dq.operand, b.dk.operand, b.dv.operand,
                      b.probs.q, b.probs.kt})
        if (x != kNoValue && g.node(x).type.dtype != DType::F32) {
            *why_not = nm(g, x) + " is not f32";
            return std::nullopt;
        }
    b.nodes.assign(inside.begin(), inside.end());
    std::sort(b.nodes.begin(), b.nodes.end(), [&](ValueId x, ValueId y) { return g.position(x) < g.position(y); });
    return b;
}

namespace {

/** Copies `values` (in program order) before `first`, each copy reading the copies of its
 * operands; returns value -> copy. */
std::unordered_map<ValueId, ValueId> copy_before(Graph &h, const std::vector<ValueId> &values, ValueId first) {
    std::unordered_map<ValueId, ValueId> copy;
    for (ValueId u : values) {
        Node n = h.node(u);
        n.id = kNoValue;
        for (ValueId &in : n.inputs)
            if (copy.count(in)) in = copy.at(in);
        n.name.clear();
        copy[u] = h.insert_before(first, std::move(n));
    }
    return copy;
}

/** The rows' logsumexp of the attention `a` in h, added before `before` unless h has it there
 * already: m + log(sum) with the written-out softmax's own m and sum, else all six ops. */
ValueId rows_logsumexp(Graph &h, const AttentionPattern &a, ValueId before) {
    const ValueId t = a.logits;
    if (const auto l = logsumexp_of(h, t); l && h.position(l->lse) < h.position(before)) return l->lse;
    Attrs last;
    last.axes = {h.node(t).type.rank() - 1};
    last.keepdims = true;
    ValueId m = kNoValue, sum = kNoValue;
    if (const Node &p = h.node(a.softmax); p.op == Op::Div) {  // e / sum with e = exp(t - m)
        sum = p.inputs[1];
        m = h.node(h.node(p.inputs[0]).inputs[0]).inputs[1];
    } else {
        m = h.insert_before(before, make_node(h, Op::ReduceMax, {t}, last));
        const ValueId d = h.insert_before(before, make_node(h, Op::Sub, {t, m}));
        const ValueId e = h.insert_before(before, make_node(h, Op::Exp, {d}));
        sum = h.insert_before(before, make_node(h, Op::ReduceSum, {e}, last));
    }
    const ValueId log = h.insert_before(before, make_node(h, Op::Log, {sum}));
    const ValueId lse = h.insert_before(before, make_node(h, Op::Add, {m, log}));
    // Named after the probabilities ("p_lse"), as the group that writes it will be.
    std::string name = h.display_name(a.softmax) + "_lse";
    while (h.find(name) != kNoValue) name += "_";
    h.set_name(lse, name);
    return lse;
}

}  // namespace

bool recompute_attention_probabilities(Graph &g, RewriteLog *log) {
    if (g.mode != NumericMode::Fast) return false;
    bool changed = false;
    const std::vector<ValueId> order = g.order();
    for (ValueId pv : order) {
        if (!g.contains(pv) || g.node(pv).op != Op::MatMul) continue;
        const ValueId p = g.node(pv).inputs[0];
        AttentionPattern a;
        std::vector<ValueId> chain;
        if (!match_attention_probabilities(g, p, &a, &chain) || g.is_output(p)) continue;
        if (a.k != kNoValue) chain.push_back(a.kt);
        auto by_position = [&](ValueId x, ValueId y) { return g.position(x) < g.position(y); };
        std::sort(chain.begin(), chain.end(), by_position);
        std::vector<ValueId> scores_chain;  // t and what it is computed from
        for (ValueId v : chain)
            if (g.position(v) <= g.position(a.logits)) scores_chain.push_back(v);
        std::string why_not;
        auto both_match = [&](const Graph &h, ValueId p_copy, ValueId lse) {
            if (!match_attention_backward(h, p_copy, &why_not)) return false;
            const std::optional<AttentionPattern> fwd = match_attention(h, pv, &why_not);
            return fwd && fwd->lse == lse;
        };
        // Already rewritten, then t's copy merged back by CSE: a backward reads exp(t - lse) of
        // the forward's own t and logsumexp. It gets its copy of t's chain again.
        if (const auto l = logsumexp_of(g, a.logits); l && g.users(p).size() == 1) {
            std::vector<ValueId> centered;  // t - lse, read by the backward's exp
            for (ValueId u : g.users(a.logits))
                if (g.node(u).op == Op::Sub && g.node(u).inputs[0] == a.logits && g.node(u).inputs[1] == l->lse)
                    centered.push_back(u);
            if (centered.size() != 1 || g.users(centered[0]).size() != 1) continue;
            const ValueId p_copy = g.users(centered[0])[0];
            Graph h = g;
            const auto copy = copy_before(h, scores_chain, centered[0]);
            h.node(centered[0]).inputs[0] = copy.at(a.logits);
            if (!both_match(h, p_copy, l->lse)) continue;
            if (log)
                log->record({"recompute-attention-probabilities", "attention-backward", print_node(g, centered[0]),
                             print_node(h, centered[0]) + " (and " + std::to_string(scores_chain.size()) + " ops of " +
                                 nm(g, a.logits) + "'s chain)",
                             "the backward's exp(t - " + nm(g, l->lse) +
                                 ") gets its own copy of t's chain (pure ops: the same "
                                 "values), so the forward is one attention group and the backward one attention-backward group"});
            g = std::move(h);
            changed = true;
            continue;
        }
        if (g.users(p).size() < 2) continue;
        std::vector<ValueId> late;  // p's readers other than the forward's pv
        for (ValueId u : g.users(p))
            if (u != pv) late.push_back(u);
        const ValueId first = *std::min_element(late.begin(), late.end(), by_position);
        const ValueId first_use = std::min(pv, first, by_position);

        // Preferred: the backward reads exp(t' - lse), t' a copy of t's chain and lse the rows'
        // logsumexp, which the forward's group writes. Else it gets a copy of p's whole chain.
        Graph h = g;
        const ValueId lse = rows_logsumexp(h, a, first_use);
        const auto copy = copy_before(h, scores_chain, first);
        const ValueId centered = h.insert_before(first, make_node(h, Op::Sub, {copy.at(a.logits), lse}));
        ValueId p_copy = h.insert_before(first, make_node(h, Op::Exp, {centered}));
        for (ValueId r : late)
            for (ValueId &in : h.node(r).inputs)
                if (in == p) in = p_copy;
        const bool saved = both_match(h, p_copy, lse);
        if (!saved) {
            h = g;
            const auto whole = copy_before(h, chain, first);
            p_copy = whole.at(p);
            for (ValueId r : late)
                for (ValueId &in : h.node(r).inputs)
                    if (in == p) in = p_copy;
            if (!both_match(h, p_copy, kNoValue)) continue;
        }
        if (log) {
            const std::string copied = saved ? std::to_string(scores_chain.size()) + " ops of " + nm(g, a.logits) + "'s chain"
                                             : std::to_string(chain.size() - 1) + " ops of its chain";
            const std::string how = saved ? " read exp(t - " + nm(h, lse) + ") instead, with t recomputed from " + nm(g, a.q) +
                                                " and " + nm(g, a.kt) + " and " + nm(h, lse) +
                                                " the rows' logsumexp, which the forward's group writes"
                                          : " get their own copy of the softmax chain (pure ops: the same values)";
            log->record({"recompute-attention-probabilities", "attention-backward", print_node(g, p),
                         print_node(h, p_copy) + " (and " + copied + ")",
                         "the backward's readers of " + nm(g, p) + how +
                             ", so the forward is one attention group and the backward one attention-backward group, "
                             "and no [S, L] matrix lives from one to the other"});
        }
        g = std::move(h);
        changed = true;
    }
    return changed;
}

}  // namespace tessel::dsl
