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

/** Whether v (of shape [..., S, 1]) broadcasts along the last axis of a [..., S, L] value. */
bool row_vector(const Graph &g, ValueId v, ValueId full) {
    const auto &d = g.node(v).type.dims;
    const auto &f = g.node(full).type.dims;
    if (d.size() < 2 || d.size() > f.size()) return false;
    const Dim last = resolve_dim(g, d.back());
    return last.is_static() && last.size == 1 && same_dim(g, d[d.size() - 2], f[f.size() - 2]);
}

}  // namespace

std::optional<AttentionBackwardPattern> match_attention_backward(const Graph &g, ValueId p, std::string *why_not) {
    why_not->clear();
    AttentionBackwardPattern b;
    std::vector<ValueId> chain;
    if (!match_attention_probabilities(g, p, &b.probs, &chain)) return std::nullopt;
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
    for (ValueId x : {b.probs.mask, b.row_dot, b.d_out, b.vt, b.dq.operand, b.dk.operand, b.dv.operand, b.probs.q, b.probs.kt})
        if (x != kNoValue && g.node(x).type.dtype != DType::F32) {
            *why_not = nm(g, x) + " is not f32";
            return std::nullopt;
        }
    b.nodes.assign(inside.begin(), inside.end());
    std::sort(b.nodes.begin(), b.nodes.end(), [&](ValueId x, ValueId y) { return g.position(x) < g.position(y); });
    return b;
}

bool recompute_attention_probabilities(Graph &g, RewriteLog *log) {
    if (g.mode != NumericMode::Fast) return false;
    bool changed = false;
    const std::vector<ValueId> order = g.order();
    for (ValueId pv : order) {
        if (!g.contains(pv) || g.node(pv).op != Op::MatMul) continue;
        const ValueId p = g.node(pv).inputs[0];
        AttentionPattern a;
        std::vector<ValueId> chain;
        if (!match_attention_probabilities(g, p, &a, &chain) || g.users(p).size() < 2 || g.is_output(p)) continue;
        std::vector<ValueId> late;  // p's readers other than the forward's pv
        for (ValueId u : g.users(p))
            if (u != pv) late.push_back(u);
        if (a.k != kNoValue) chain.push_back(a.kt);
        std::sort(chain.begin(), chain.end(), [&](ValueId x, ValueId y) { return g.position(x) < g.position(y); });
        ValueId first = late.front();
        for (ValueId r : late)
            if (g.position(r) < g.position(first)) first = r;
        Graph h = g;
        std::unordered_map<ValueId, ValueId> clone;
        for (ValueId u : chain) {
            Node n = h.node(u);
            n.id = kNoValue;
            for (ValueId &in : n.inputs)
                if (clone.count(in)) in = clone.at(in);
            n.name.clear();
            clone[u] = h.insert_before(first, std::move(n));
        }
        for (ValueId r : late)
            for (ValueId &in : h.node(r).inputs)
                if (in == p) in = clone.at(p);
        std::string why_not;
        const bool backward = match_attention_backward(h, clone.at(p), &why_not).has_value();
        const bool forward = backward && match_attention(h, pv, &why_not).has_value();
        if (!forward) continue;
        if (log)
            log->record({"recompute-attention-probabilities", "attention-backward", print_node(g, p),
                         print_node(h, clone.at(p)) + " (and " + std::to_string(chain.size() - 1) + " ops of its chain)",
                         "the backward's readers of " + nm(g, p) +
                             " get their own copy of the softmax chain (pure ops: "
                             "the same values), so the forward is one attention group and the backward one attention-backward "
                             "group, and no [S, L] matrix lives from one to the other"});
        g = std::move(h);
        changed = true;
    }
    return changed;
}

}  // namespace tessel::dsl
