/** \file
 * Attention backward (ExprBuilder.h): an attention-backward group (dsl/passes/AttentionBackward.h)
 * becomes three nests over Funcs that never hold an [S, L] matrix whole. For query row i, key j
 * (both global indices), depth d and column c:
 *
 *   kcols(j, d)     = kt[d, j]                          (K with the keys innermost, copied once)
 *   vcols(j, c)     = vt[c, j]                          (V likewise, for dP)
 *   score(j, i)     = scale · q[i, :] · kt[:, j] [+ mask[i, j]]
 *   lse(i)          = the row's logsumexp where the group reads it (saved by the forward), else
 *                     max + log(sum), or NaN when the maximum is not finite (softmax's NaN rows), from
 *   row_max(i)      = max over j of score (an IEEE order key, as softmax_max)
 *   row_sum(i)      = sum over j of exp(score − row_max)
 *   probs(j, i)     = exp(score − lse(i)), 0 where the score is −inf
 *   dp(j, i)        = do2[i, :] · vt[:, j]
 *   ds(j, i)        = probs · (dp − r[i])
 *   dq_block(c, x, ib, jb) = Σ_{j in block jb} ds(j, ib·B + x) kx[j, c]     (row x of block ib)
 *   dk_block(c, x, ib, jb) = Σ_{i in block ib} ds(jb·B + x, i) qx[i, c]     (key x of block jb)
 *   dv_block(c, x, ib, jb) = Σ_{i in block ib} probs(jb·B + x, i) do1[i, c]
 *   grads(c, n, w, part)   = the three summed over block pairs (ib, jb), jb ≡ part (mod parts):
 *                            w = 0 at n = ib·B + x (dQ's row), 1 and 2 at n = jb·B + x (dK's and
 *                            dV's key)
 *   y0 = {c_k dK, dV} and y1 = c_q dQ: grads summed over the parts
 *
 * One nest computes all three gradients, so P and dS are recomputed once per block pair (the
 * FlashAttention-2 backward's work: scores, dP, dV, dK and dQ, five products). Blocks are B =
 * dsl::kAttentionBackwardQueryBlock = kAttentionBackwardKeyBlock rows or keys; a block's sums run
 * over its own rows or keys only (the last may be partial), so values read past an edge never
 * enter them. A task is one part of the key blocks of one batch entry: dK's and dV's keys each
 * belong to one task, and dQ's rows get a partial sum per part, so no two threads write one
 * value. There are two parts when there is one batch entry (work for two threads), else one.
 * Under a causal mask, block pairs whose rows all precede the key block's first visible key are
 * skipped by a condition on the block indices; the mask is its select (a hidden score is -inf
 * whatever q and k hold there, as in the forward). Reads are clamped to the tensors, so tiles
 * that round up past an edge compute values nobody stores.
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

    // The rows' logsumexp: read where the forward's group saved it, else computed here from the
    // rows' statistics: the maximum, then the sum of exp(score - maximum), over every key. -inf
    // scores (masked) add nothing; a NaN or +inf score, or only -inf, makes the row NaN.
    Func lse = make("lse");
    if (a.saved_lse != dsl::kNoValue) {
        lse(args({i})) = read(a.saved_lse, row_in, 0);
    } else {
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
        row_sum(args({i})) += Halide::select(is_finite_key(m_key) && order_key(s_at, true) != neg_inf,
                                             Halide::exp(s_at - from_order_key(m_key)), 0.0f);
        lse(args({i})) = logsumexp_from_max_key(m_key, call(row_sum, {i}));
    }

    // P, dP and dS at row i and key j.
    auto gradient_funcs = [&]() {
        const Expr s = score_func("qk");
        Func probs = make("probs");
        const Expr l = call(lse, {i});
        const Expr masked = order_key(s, true) == neg_inf;
        // exp(s - l) with IEEE special values (compared as order keys, which fast math keeps): a
        // computed lse is finite or NaN; a saved one may be anything its graph gives.
        const Expr l_key = order_key(l, true), s_key = order_key(s, true);
        const Expr pos_inf = order_key(Expr(INFINITY), true);
        const Expr s_nan = s_key > pos_inf;
        probs(args({j, i})) = Halide::select(
            is_finite_key(l_key), Halide::select(masked, 0.0f, s_nan, nan, s_key == pos_inf, Expr(INFINITY), Halide::exp(s - l)),
            l_key == pos_inf, Halide::select(s_key >= pos_inf, nan, 0.0f),  //
            l_key == neg_inf, Halide::select(masked || s_nan, nan, Expr(INFINITY)), nan);
        Func dp = make("dp");
        Halide::RDom rn(0, width, "n");
        dp(args({j, i})) = 0.0f;
        dp(args({j, i})) += read(b.d_out, row_in, rn) * call(vcols, {j, rn});
        Func ds = make("ds");
        ds(args({j, i})) = call(probs, {j, i}) * (call(dp, {j, i}) - read(b.row_dot, row_in, 0));
        return std::make_pair(probs, ds);
    };
    auto scaled = [&](const dsl::AttentionGradient &x, const Expr &e) {
        if (x.result == x.matmul) return e;
        return x.divides ? e / (float)(1.0 / x.scale) : e * (float)x.scale;
    };

    // One nest for all three gradients. Per block pair (query block ib, key block jb): P's and
    // dS's blocks, then the block's sums for its rows of dQ and its keys of dK and dV (each over
    // that block's keys or rows only), added into `grads`: [c, row or key, w, part] with w = 0
    // for dQ's rows, 1 for dK's keys, 2 for dV's. The key blocks are dealt to `parts` tasks per
    // batch entry (block jb to part jb mod parts), so dK's and dV's keys are written by one task
    // each; dQ's rows get one partial sum per part, added at the end. Two parts when there is
    // one batch entry (so two threads have work), else one.
    static_assert(dsl::kAttentionBackwardQueryBlock == dsl::kAttentionBackwardKeyBlock,
                  "the block sums share one tile loop over a block's rows or keys");
    const int qb = (int)dsl::kAttentionBackwardQueryBlock, kb = (int)dsl::kAttentionBackwardKeyBlock;
    const auto [probs, ds] = gradient_funcs();
    const Var ib("ib"), jb("jb"), x("x"), w("w"), part("part");
    Halide::RDom rk(0, kb, "rk"), rr(0, qb, "rr");
    rk.where(jb * kb + rk < keys);
    rr.where(ib * qb + rr < rows);
    const Expr key = jb * kb + rk, key_read = Halide::clamp(key, 0, keys - 1);
    const Expr row = ib * qb + rr, row_read = Halide::clamp(row, 0, rows - 1);
    Func dq_block = make("dq_block"), dk_block = make("dk_block"), dv_block = make("dv_block");
    dq_block(args({c, x, ib, jb})) = 0.0f;
    dq_block(args({c, x, ib, jb})) += call(ds, {key, ib * qb + x}) * read(b.dq.operand, key_read, column_in);
    dk_block(args({c, x, ib, jb})) = 0.0f;
    dk_block(args({c, x, ib, jb})) += call(ds, {jb * kb + x, row}) * read(b.dk.operand, row_read, column_in);
    dv_block(args({c, x, ib, jb})) = 0.0f;
    dv_block(args({c, x, ib, jb})) += call(probs, {jb * kb + x, row}) * read(b.dv.operand, row_read, column_in);

    Expr batch_entries = 1;
    for (int k = 0; k < rank - 2; k++) batch_entries *= extent(a.softmax, k);
    const Expr parts = Halide::select(batch_entries == 1, 2, 1);
    const Expr key_blocks = (keys + (kb - 1)) / kb, row_blocks = (rows + (qb - 1)) / qb;
    Func grads = make("grads");
    const Var n("n");
    grads(args({c, n, w, part})) = 0.0f;
    {
        // Named one by one ("rx", not "g$x"): schedules address these loops.
        Halide::RDom g(Halide::Internal::ReductionDomain(
            {{"rx", 0, qb}, {"rw", 0, 3}, {"rib", 0, row_blocks}, {"rjb", 0, (key_blocks + parts - 1) / parts}}));
        const Expr rx = g[0], rw = g[1], rib = g[2], block = g[3] * parts + part;
        g.where(block < key_blocks);
        // A causal mask hides key j from the rows before j - (L - S): pairs whose rows all end
        // before the key block's first key are skipped.
        if (causal) g.where(rib * qb + (qb - 1) + (keys - rows) >= block * kb);
        const Expr site = Halide::select(rw == 0, rib * qb + rx, block * kb + rx);
        const Expr sum = Halide::select(rw == 0, call(dq_block, {c, rx, rib, block}), rw == 1,
                                        call(dk_block, {c, rx, rib, block}), call(dv_block, {c, rx, rib, block}));
        call(grads, {c, site, rw, part}) += sum;
    }
    // The parts' sums (a second part's term is 0 where there is one part, and reads part 0).
    auto total = [&](const Expr &sel, const Expr &at) {
        const Expr second = Halide::min(1, parts - 1);
        return call(grads, {c, at, sel, 0}) + Halide::select(parts > 1, call(grads, {c, at, sel, second}), 0.0f);
    };
    AttentionBackwardFuncs f;
    f.dkv = Func("y0");
    f.dkv(args({c, j})) = Halide::Tuple(scaled(b.dk, total(1, j)), total(2, j));
    f.dq = Func("y1");
    f.dq(args({c, i})) = scaled(b.dq, total(0, i));

    auto role = [&](const char *r, ValueId v) {
        if (auto p = params_.find(v); p != params_.end()) out_.input_roles[r] = p->second;
    };
    role("q", a.q);
    role("k", a.k != dsl::kNoValue ? a.k : a.kt);
    if (a.mask != dsl::kNoValue) role("mask", a.mask);
    out_.matmul_count = 6;
    return f;
}

}  // namespace tessel::lower
