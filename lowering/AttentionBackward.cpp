/** \file
 * Attention backward (ExprBuilder.h): an attention-backward group (dsl/passes/AttentionBackward.h)
 * becomes three nests over Funcs that never hold an [S, L] matrix whole. For query row i, key j
 * (both global indices), depth d and column c:
 *
 *   kcols(j, d)     = kt[d, j]                          (K with the keys innermost, copied once)
 *   vcols(j, c)     = vt[c, j]                          (V likewise, for dP)
 *   score(j, i)     = scale · q[i, :] · kt[:, j] [+ mask[i, j]]
 *   row_max(i)      = max over j of score (an IEEE order key, as softmax_max)
 *   row_sum(i)      = sum over j of exp(score − row_max)
 *   lse(i)          = max + log(sum), or NaN when the maximum is not finite (softmax's NaN rows)
 *   probs(j, i)     = exp(score − lse(i)), 0 where the score is −inf
 *   dp(j, i)        = do2[i, :] · vt[:, j]
 *   ds(j, i)        = probs · (dp − r[i])
 *   dkv_block(c, j, ib) = {Σ_{i in block ib} probs(j, i) do1[i, c], Σ ds(j, i) qx[i, c]}
 *   dkv(c, lj, jb)  = Σ_ib dkv_block(c, jb·Bk + lj, ib)                        -> y0 = {c_k dK, dV}
 *   dq_block(c, i, jb)  = Σ_{j in block jb} ds_q(j, i) kx[j, c]
 *   dq(c, li, ib)   = Σ_jb dq_block(c, ib·Bq + li, jb)                         -> y1 = c_q dQ
 *
 * Blocks are dsl::kAttentionBackwardQueryBlock rows and dsl::kAttentionBackwardKeyBlock keys; a
 * block's sums run over its own rows or keys only (the last may be partial), so values read past
 * an edge never enter them. The accumulators are indexed by block (jb, ib) and position in it
 * (lj, li): a task's blocks are one index, so under a causal mask the blocks a task cannot see
 * (rows before its keys, keys past its rows) are skipped by a condition on that index alone. The
 * mask is its select (a hidden score is -inf whatever q and k hold there, as in the forward).
 *
 * probs, dp and ds are defined twice (suffix _q for dQ's nest): a Func has one schedule, and the
 * two nests compute them over different blocks — dkv per block of keys, looping over query
 * blocks; dq per block of query rows, looping over key blocks. Each task writes only its own rows
 * of the outputs. Reads are clamped to the tensors, so tiles that round up past an edge compute
 * values nobody stores; every reduction runs over exactly the rows or keys there are.
 */
#include "lowering/ExprBuilder.h"

#include "dsl/ir/TypeInference.h"
#include "dsl/passes/AttentionBackward.h"
#include "lowering/IeeeMath.h"

#include <cmath>

namespace tessel::lower {

namespace {
/** The widest column tile an attention-backward schedule uses: 2 vectors of 16 lanes. */
constexpr int64_t kColumnTile = 32;
}  // namespace

using dsl::ValueId;
using Halide::Expr;
using Halide::Func;
using Halide::Var;

AttentionBackwardFuncs ExprBuilder::attention_backward(const dsl::AttentionBackwardPattern &b) {
    const dsl::AttentionPattern &a = b.probs;
    const int rank = g_.node(a.softmax).type.rank();  // [..., S, L]
    const Expr rows = extent(a.softmax, rank - 2), keys = extent(a.softmax, rank - 1);
    const Expr depth = extent(a.q, g_.node(a.q).type.rank() - 1);
    const Expr width = extent(b.d_out, g_.node(b.d_out).type.rank() - 1);  // Dv
    const Expr columns = extent(b.dk.result, rank - 1);                    // D = Dv of dK and dV

    const Var i("i"), j("j"), c("c"), d("d");
    const bool causal = a.mask != dsl::kNoValue && g_.node(a.mask).op == dsl::Op::CausalMask;
    std::vector<Var> batch;
    for (int k = 0; k < rank - 2; k++) batch.push_back(Var("b" + std::to_string(k)));
    auto args = [&](std::vector<Var> inner) {
        inner.insert(inner.end(), batch.begin(), batch.end());
        return inner;
    };
    auto call = [&](const Func &f, std::vector<Expr> inner) {
        for (const Var &v : batch) inner.push_back(v);
        return f(inner);
    };
    auto read = [&](ValueId v, const Expr &second_last, const Expr &last) {
        std::vector<Expr> idx;
        for (auto it = batch.rbegin(); it != batch.rend(); ++it) idx.push_back(*it);
        idx.push_back(second_last);
        idx.push_back(last);
        return at(v, broadcast_index(v, idx));
    };
    // Schedules address the Funcs by these names (Halide may rename a Func whose name is taken).
    auto make = [&](const std::string &base) {
        const std::string name = unique_func_name(base);
        return out_.funcs[name] = Func(name);
    };

    const Expr row_in = Halide::clamp(Halide::likely(i), 0, rows - 1), key_in = Halide::clamp(Halide::likely(j), 0, keys - 1);
    // Columns are read unclamped where every tile a schedule may round up to (kColumnTile) fits
    // D exactly: the clamp would make Halide partition the loops, and a partition it cannot
    // prove empty runs gathers.
    const dsl::Dim width_dim = dsl::resolve_dim(g_, g_.node(b.dk.result).type.dims.back());
    const bool whole_tiles = width_dim.is_static() && width_dim.size % kColumnTile == 0;
    const Expr column_in = whole_tiles ? Expr(c) : Halide::clamp(Halide::likely(c), 0, columns - 1);
    const Expr nan = from_order_key(Halide::Int(32).max());
    const Expr neg_inf = order_key(Expr(-INFINITY), true);

    Func kcols = make("kcols");
    kcols(args({j, d})) = read(a.kt, Halide::clamp(d, 0, depth - 1), key_in);
    Func vcols = make("vcols");
    vcols(args({j, c})) = read(b.vt, Halide::clamp(c, 0, width - 1), key_in);

    // The scores of row i against key j, through a contraction Func `name` (each nest its own).
    Halide::RDom rd(0, depth, "k");
    auto score_func = [&](const std::string &base) {
        Func qk = make(base);
        qk(args({j, i})) = 0.0f;
        qk(args({j, i})) += read(a.q, row_in, rd) * call(kcols, {j, rd});
        Expr s = call(qk, {j, i});
        if (a.scale_node != dsl::kNoValue) {
            const float f = (float)g_.node(a.scale_node).attrs.value[0];
            s = a.scale_divides ? s / f : s * f;
        }
        // A causal mask is the select it stands for (a hidden score is -inf whatever it holds,
        // as in the forward's skipped blocks); another mask's -inf is an ordinary value here:
        // strict_float keeps fast math from folding it.
        if (causal)
            s = Halide::select(key_in > row_in + (keys - rows), Expr(-INFINITY), s);
        else if (a.mask != dsl::kNoValue)
            s = Halide::strict_float(s + read(a.mask, row_in, key_in));
        return s;
    };

    // The rows' statistics: the maximum, then the sum of exp(score - maximum), over every key.
    // -inf scores (masked) add nothing; a NaN or +inf score, or only -inf, makes the row NaN.
    Func scores_stats = make("scores_stats");
    scores_stats(args({j, i})) = score_func("qk_stats");
    Halide::RDom rj(0, keys, "rj");
    const Expr s_at = call(scores_stats, {rj, i});
    Func row_max = make("row_max");
    row_max(args({i})) = neg_inf;
    row_max(args({i})) = Halide::max(call(row_max, {i}), order_key(s_at, true));
    const Expr m_key = call(row_max, {i});
    Func row_sum = make("row_sum");
    row_sum(args({i})) = 0.0f;
    row_sum(args({i})) +=
        Halide::select(is_finite_key(m_key) && order_key(s_at, true) != neg_inf, Halide::exp(s_at - from_order_key(m_key)), 0.0f);
    Func lse = make("lse");
    lse(args({i})) = Halide::select(is_finite_key(m_key), from_order_key(m_key) + Halide::log(call(row_sum, {i})), nan);

    // probs, dp and ds of one nest (suffix "" or "_q").
    auto gradient_funcs = [&](const std::string &suffix) {
        const Expr s = score_func("qk" + suffix);
        Func probs = make("probs" + suffix);
        const Expr l = call(lse, {i});
        const Expr masked = order_key(s, true) == neg_inf;
        probs(args({j, i})) =
            Halide::select(is_finite_key(order_key(l, true)), Halide::select(masked, 0.0f, Halide::exp(s - l)), nan);
        Func dp = make("dp" + suffix);
        Halide::RDom rn(0, width, "n");
        dp(args({j, i})) = 0.0f;
        dp(args({j, i})) += read(b.d_out, row_in, rn) * call(vcols, {j, rn});
        Func ds = make("ds" + suffix);
        ds(args({j, i})) = call(probs, {j, i}) * (call(dp, {j, i}) - read(b.row_dot, row_in, 0));
        return std::make_pair(probs, ds);
    };
    auto scaled = [&](const dsl::AttentionGradient &x, const Expr &e) {
        if (x.result == x.matmul) return e;
        return x.divides ? e / (float)(1.0 / x.scale) : e * (float)x.scale;
    };

    // dK and dV per key: one Tuple, summed over the rows block by block (dkv_block: one block's
    // sums, which schedules keep in registers), each block's rows only.
    const int qb = (int)dsl::kAttentionBackwardQueryBlock, kb = (int)dsl::kAttentionBackwardKeyBlock;
    const auto [probs, ds] = gradient_funcs("");
    const Var ib("ib"), jb("jb"), li("li"), lj("lj");
    Func dkv_block = make("dkv_block");
    {
        Halide::RDom rr(0, qb, "rr");
        rr.where(ib * qb + rr < rows);
        const Expr row = ib * qb + rr, row_read = Halide::clamp(row, 0, rows - 1);
        dkv_block(args({c, j, ib})) = Halide::Tuple(0.0f, 0.0f);
        dkv_block(args({c, j, ib})) =
            Halide::Tuple(call(dkv_block, {c, j, ib})[0] + call(probs, {j, row}) * read(b.dv.operand, row_read, column_in),
                          call(dkv_block, {c, j, ib})[1] + call(ds, {j, row}) * read(b.dk.operand, row_read, column_in));
    }
    Func dkv = make("dkv");
    {
        Halide::RDom rib(0, (rows + (qb - 1)) / qb, "rib");
        // A causal mask hides key j from the rows before j - (L - S): blocks of rows that end
        // before the task's first key are skipped (Halide lifts the condition into the loop's
        // bounds, as it depends on the task's block jb alone).
        if (causal) rib.where(rib * qb + (qb - 1) + (keys - rows) >= jb * kb);
        const Expr key = jb * kb + lj;
        dkv(args({c, lj, jb})) = Halide::Tuple(0.0f, 0.0f);
        dkv(args({c, lj, jb})) = Halide::Tuple(call(dkv, {c, lj, jb})[0] + call(dkv_block, {c, key, rib})[0],
                                               call(dkv, {c, lj, jb})[1] + call(dkv_block, {c, key, rib})[1]);
    }
    // dQ per row, summed over the keys block by block likewise.
    const Func ds_q = gradient_funcs("_q").second;
    Func dq_block = make("dq_block");
    {
        Halide::RDom rk(0, kb, "rk");
        rk.where(jb * kb + rk < keys);
        const Expr key = jb * kb + rk, key_read = Halide::clamp(key, 0, keys - 1);
        dq_block(args({c, i, jb})) = 0.0f;
        dq_block(args({c, i, jb})) += call(ds_q, {key, i}) * read(b.dq.operand, key_read, column_in);
    }
    Func dq = make("dq");
    {
        Halide::RDom rjb(0, (keys + (kb - 1)) / kb, "rjb");
        // Likewise the key blocks past the last key the task's rows see.
        if (causal) rjb.where(rjb * kb <= Halide::min(ib * qb + (qb - 1), rows - 1) + (keys - rows));
        dq(args({c, li, ib})) = 0.0f;
        dq(args({c, li, ib})) += call(dq_block, {c, ib * qb + li, rjb});
    }
    AttentionBackwardFuncs f;
    f.dkv = Func("y0");
    f.dkv(args({c, j})) = Halide::Tuple(scaled(b.dk, call(dkv, {c, j % kb, j / kb})[1]), call(dkv, {c, j % kb, j / kb})[0]);
    f.dq = Func("y1");
    f.dq(args({c, i})) = scaled(b.dq, call(dq, {c, i % qb, i / qb}));

    auto role = [&](const char *r, ValueId v) {
        if (auto p = params_.find(v); p != params_.end()) out_.input_roles[r] = p->second;
    };
    role("q", a.q);
    role("k", a.k != dsl::kNoValue ? a.k : a.kt);
    if (a.mask != dsl::kNoValue) role("mask", a.mask);
    out_.matmul_count = 7;
    return f;
}

}  // namespace tessel::lower
