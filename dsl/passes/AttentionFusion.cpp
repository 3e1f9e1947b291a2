// Map: helpers (one-element constants, readers inside a set) -> match_attention(): walk up from
// pv through softmax, the mask add, the scale and the scores matmul, then the legality checks.
#include "dsl/passes/AttentionFusion.h"

#include <algorithm>
#include <set>

#include "dsl/analysis/MemoryTraffic.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

namespace {

std::string nm(const Graph &g, ValueId v) { return "%" + g.display_name(v); }

/** A constant holding one value (a scalar or a splat of any shape). */
bool one_value_constant(const Graph &g, ValueId v, double *value) {
    const Node &n = g.node(v);
    if (n.op != Op::Constant || n.attrs.value.size() != 1) return false;
    *value = n.attrs.value[0];
    return true;
}

/** softmax written out along the last axis: exp(t - reduce_max(t)) / reduce_sum(of that exp),
 * both reductions over the last axis with keepdims. */
struct WrittenSoftmax {
    ValueId logits = kNoValue;
    std::vector<ValueId> values;  ///< p, the exp, the difference, the max, the sum
};

bool last_axis_reduction(const Graph &g, ValueId v, Op op, ValueId operand) {
    const Node &n = g.node(v);
    const int rank = g.node(operand).type.rank();
    return n.op == op && n.inputs[0] == operand && n.attrs.keepdims && n.attrs.axes.size() == 1 &&
           (n.attrs.axes[0] == rank - 1 || n.attrs.axes[0] == -1);
}

std::optional<WrittenSoftmax> written_softmax(const Graph &g, ValueId p) {
    const Node &div = g.node(p);
    if (div.op != Op::Div || g.node(p).type.rank() < 2) return std::nullopt;
    const ValueId e = div.inputs[0], sum = div.inputs[1];
    if (g.node(e).op != Op::Exp || !last_axis_reduction(g, sum, Op::ReduceSum, e)) return std::nullopt;
    const ValueId d = g.node(e).inputs[0];
    if (g.node(d).op != Op::Sub) return std::nullopt;
    const ValueId t = g.node(d).inputs[0], m = g.node(d).inputs[1];
    if (!last_axis_reduction(g, m, Op::ReduceMax, t)) return std::nullopt;
    return WrittenSoftmax{t, {p, e, d, m, sum}};
}

}  // namespace

bool swaps_last_two(const Node &n) {
    const int r = n.type.rank();
    if (n.op != Op::Transpose || r < 2) return false;
    std::vector<int64_t> swap_last(r);
    for (int i = 0; i < r; i++) swap_last[i] = i;
    std::swap(swap_last[r - 1], swap_last[r - 2]);
    return n.attrs.perm == swap_last;
}

bool stays_inside(const Graph &g, const std::vector<ValueId> &values, const std::set<ValueId> &inside, const std::string &what,
                  std::string *why_not) {
    for (ValueId v : values) {
        if (g.is_output(v)) {
            *why_not = nm(g, v) + " is a graph output, so it would have to exist in memory";
            return false;
        }
        for (ValueId user : g.users(v))
            if (!inside.count(user)) {
                *why_not =
                    nm(g, v) + " is also read by " + nm(g, user) + " outside " + what + ", so it would have to exist in memory";
                return false;
            }
    }
    return true;
}

bool row_vector(const Graph &g, ValueId v, ValueId full) {
    const auto &d = g.node(v).type.dims;
    const auto &f = g.node(full).type.dims;
    if (d.size() < 2 || d.size() > f.size()) return false;
    const Dim last = resolve_dim(g, d.back());
    return last.is_static() && last.size == 1 && same_dim(g, d[d.size() - 2], f[f.size() - 2]);
}

std::optional<LogSumExp> logsumexp_of(const Graph &g, ValueId t) {
    for (ValueId m : g.users(t)) {
        if (!last_axis_reduction(g, m, Op::ReduceMax, t)) continue;
        for (ValueId add : g.users(m)) {
            const Node &n = g.node(add);
            if (n.op != Op::Add || n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) continue;
            const ValueId log = n.inputs[n.inputs[0] == m ? 1 : 0];
            if (g.node(log).op != Op::Log) continue;
            const ValueId sum = g.node(log).inputs[0];
            if (g.node(sum).op != Op::ReduceSum) continue;
            const ValueId e = g.node(sum).inputs[0];
            if (!last_axis_reduction(g, sum, Op::ReduceSum, e) || g.node(e).op != Op::Exp) continue;
            const ValueId d = g.node(e).inputs[0];
            if (g.node(d).op != Op::Sub || g.node(d).inputs[0] != t || g.node(d).inputs[1] != m) continue;
            return LogSumExp{add, {m, d, e, sum, log, add}};
        }
    }
    return std::nullopt;
}

bool match_attention_probabilities(const Graph &g, ValueId p, AttentionPattern *out, std::vector<ValueId> *chain,
                                   bool saved_lse) {
    AttentionPattern &a = *out;
    a.softmax = p;
    chain->clear();
    ValueId t = kNoValue;  // the softmax's input
    if (const Node &sm = g.node(p); sm.op == Op::Softmax) {
        const int rank = sm.type.rank();
        if (rank < 2 || (sm.attrs.axis != -1 && sm.attrs.axis != rank - 1)) return false;
        t = sm.inputs[0];
        *chain = {p};
    } else if (const std::optional<WrittenSoftmax> w = written_softmax(g, p)) {
        t = w->logits;
        *chain = w->values;
    } else if (const Node &e = g.node(p); saved_lse && e.op == Op::Exp && g.node(e.inputs[0]).op == Op::Sub) {
        const Node &d = g.node(e.inputs[0]);
        if (d.inputs[0] == d.inputs[1] || !row_vector(g, d.inputs[1], d.inputs[0])) return false;
        t = d.inputs[0];
        a.saved_lse = d.inputs[1];
        *chain = {p, e.inputs[0]};
    } else {
        return false;
    }

    a.logits = t;
    // t = u + mask | u, and u = s * c | c * s | s / c | s with s the scores matmul.
    auto scaled_scores = [&](ValueId u, AttentionPattern *into) {
        const Node &n = g.node(u);
        if (n.op == Op::MatMul) return u;
        double c = 0;
        for (int side = 0; side < 2; side++) {
            const ValueId value = n.inputs.size() == 2 ? n.inputs[side] : kNoValue;
            const ValueId factor = n.inputs.size() == 2 ? n.inputs[1 - side] : kNoValue;
            const bool legal = (n.op == Op::Mul || (n.op == Op::Div && side == 0)) && value != kNoValue;
            if (legal && g.node(value).op == Op::MatMul && one_value_constant(g, factor, &c)) {
                if (into)
                    into->scale_node = factor, into->scale = n.op == Op::Div ? 1.0 / c : c, into->scale_divides = n.op == Op::Div;
                return value;
            }
        }
        return kNoValue;
    };
    ValueId u = t;
    if (const Node &tn = g.node(t); tn.op == Op::Add && scaled_scores(t, nullptr) == kNoValue) {
        const int side = scaled_scores(tn.inputs[0], nullptr) != kNoValue ? 0 : 1;
        u = tn.inputs[side];
        a.mask = tn.inputs[1 - side];
        chain->push_back(t);
    }
    const ValueId s = scaled_scores(u, &a);
    if (s == kNoValue) return false;
    if (u != s) chain->push_back(u);
    a.scores = s;
    chain->push_back(s);
    a.q = g.node(s).inputs[0];
    a.kt = g.node(s).inputs[1];
    if (const Node &kt = g.node(a.kt); kt.op == Op::Transpose && swaps_last_two(kt)) a.k = kt.inputs[0];
    return true;
}

std::optional<AttentionPattern> match_attention(const Graph &g, ValueId pv, std::string *why_not) {
    why_not->clear();
    AttentionPattern a;
    const Node &out = g.node(pv);
    if (out.op != Op::MatMul) return std::nullopt;
    a.output = pv;
    a.v = out.inputs[1];
    std::vector<ValueId> chain;  // the pattern's values between scores and pv
    if (!match_attention_probabilities(g, out.inputs[0], &a, &chain)) return std::nullopt;
    const ValueId s = a.scores;

    // The shape is attention; now whether fusing it is legal.
    if (g.mode != NumericMode::Fast) {
        *why_not =
            "the online softmax sums the denominator and P·V block by block, rescaling as the row maximum "
            "grows: a reassociation, which " +
            std::string(to_string(g.mode)) + " mode forbids (declare `graph " + g.name + " mode=fast` to allow it)";
        return std::nullopt;
    }
    std::set<ValueId> inside(chain.begin(), chain.end());
    inside.insert(pv);
    if (a.k != kNoValue) inside.insert(a.kt), chain.push_back(a.kt);
    // The rows' logsumexp, when the graph computes it from t before pv: the group writes it.
    if (const std::optional<LogSumExp> l = logsumexp_of(g, a.logits); l && g.position(l->lse) < g.position(pv)) {
        a.lse = l->lse;
        for (ValueId v : l->values)
            if (inside.insert(v).second && v != l->lse) chain.push_back(v);
    }
    if (!stays_inside(g, chain, inside, "the pattern", why_not)) return std::nullopt;
    for (ValueId v : {pv, a.softmax, s, a.q, a.kt, a.v})
        if (g.node(v).type.dtype != DType::F32 || g.node(v).type.rank() < 2) {
            *why_not = nm(g, v) + " is " + to_string(g.node(v).type.dtype) + " of rank " + std::to_string(g.node(v).type.rank()) +
                       "; the fused group reads f32 operands of rank >= 2";
            return std::nullopt;
        }
    if (a.lse != kNoValue && (g.node(a.lse).type.dtype != DType::F32 || !row_vector(g, a.lse, a.softmax))) {
        *why_not = "the logsumexp " + nm(g, a.lse) + " is not one f32 value per row";
        return std::nullopt;
    }
    if (a.mask != kNoValue && g.node(a.mask).type.dtype != DType::F32) {
        *why_not = "the mask " + nm(g, a.mask) + " is not f32";
        return std::nullopt;
    }
    a.nodes.assign(inside.begin(), inside.end());
    std::sort(a.nodes.begin(), a.nodes.end(), [&](ValueId x, ValueId y) { return g.position(x) < g.position(y); });
    return a;
}

ResourceEstimate attention_estimate(const Graph &g, const AttentionPattern &a, const FusionOptions &opts) {
    auto last = [&](ValueId v) { return dim_size(g, g.node(v).type.dims.back(), opts.symbol_sizes); };
    const int64_t d = last(a.q), dv = last(a.v), bq = kAttentionQueryBlock, bk = kAttentionKvBlock;
    ResourceEstimate e;
    const int64_t lanes = opts.target.vector_lanes;
    e.registers_f32 = 4 * 2 * lanes + 2 * lanes + lanes;  // a 4 x 2L score or output tile, its operands
    e.cache_bytes = 4 * (bq * d + bk * d + bk * dv + bq * bk + bq * dv);
    e.fits = (opts.target.l2_cache_bytes == 0 || e.cache_bytes <= opts.target.l2_cache_bytes) &&
             e.registers_f32 <= int64_t(opts.target.vector_registers) * lanes;
    e.detail = "query block " + std::to_string(bq) + " x key block " + std::to_string(bk) + ", D " + std::to_string(d) + ", Dv " +
               std::to_string(dv) + ": q, K, V, score and accumulator blocks " + format_bytes(e.cache_bytes) + " of L2 " +
               format_bytes(opts.target.l2_cache_bytes);
    return e;
}

}  // namespace tessel::dsl
