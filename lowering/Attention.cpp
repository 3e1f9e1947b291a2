/** \file
 * Attention (ExprBuilder.h): an attention group (dsl/passes/AttentionFusion.h) becomes one
 * online-softmax pipeline, FlashAttention-2's forward written as Halide Funcs. Keys are taken in
 * blocks of dsl::kAttentionKvBlock; for query row i and block jb:
 *
 *   kblock(lj, d, jb)   = k[jb*Bk + lj, d]          (the block of K, key index innermost)
 *   vblock(n, lj, jb)   = v[jb*Bk + lj, n]          (V in blocks: reads past an edge are clamped here)
 *   matmul(lj, i, jb)   = sum_d q[i, d] kblock(lj, d, jb)
 *   scores(lj, i, jb)   = matmul * scale [+ mask]   (-inf past the last key)
 *   block_max(i, jb)    = max_lj score              (an IEEE order key, as softmax_max; through
 *                                                    lane_max, kAttentionLanes partial results)
 *   probs(lj, i, jb)    = exp(score - block_max)    (0 where the block is all -inf)
 *   block_sum(i, jb)    = sum_lj probs              (through lane_sum, likewise)
 *   block_pv(n, i, jb)  = sum_lj probs v[jb*Bk + lj, n]
 *   state(n, i)         = {acc, max key, sum}, updated for jb = 0, 1, ...:
 *                         m' = max(m, block_max), acc' = acc e^(m - m') + block_pv e^(block_max - m'),
 *                         sum' = sum e^(m - m') + block_sum e^(block_max - m')
 *                         (one factor is 1, the other e^-|m - block_max|: one exp)
 *   y(n, i)             = acc / sum, or NaN when the row's maximum is not finite
 *   lse(0, i)           = m + log(sum), where the group writes the rows' logsumexp
 *
 * Each block is summed against its own maximum and rescaled once into the running state, so the
 * state's update needs nothing of a block but block_max, block_sum and block_pv: schedules compute
 * those at the state's block loop, and no [S, L] value is ever stored. The row maximum and sum are
 * kept per output column n (all equal): vectorized along n they cost a few vector exps per block.
 * Special values follow the interpreter's softmax: a row holding NaN or +inf, or only -inf, is NaN
 * throughout; a block of only -inf (a masked block) adds nothing.
 */
#include "lowering/ExprBuilder.h"

#include "dsl/ir/TypeInference.h"
#include "lowering/IeeeMath.h"

#include <cmath>

namespace tessel::lower {

using dsl::ValueId;
using Halide::Expr;
using Halide::Func;
using Halide::Var;

AttentionFuncs ExprBuilder::attention(const dsl::AttentionPattern &a) {
    const int rank = g_.node(a.output).type.rank();  // [..., S, Dv]
    const int sm_rank = g_.node(a.softmax).type.rank();
    const Expr keys = extent(a.softmax, sm_rank - 1), depth = extent(a.q, g_.node(a.q).type.rank() - 1);
    const int bk = (int)dsl::kAttentionKvBlock;  // the blocks cpu_attention's bounds assume
    const Expr blocks = (keys + (bk - 1)) / bk;

    const std::vector<Var> vs = vars(rank);  // n, m, b0, ...
    const Var n = vs[0], i = vs[1], lj("lj"), jb("jb"), d("d");
    std::vector<Var> batch(vs.begin() + 2, vs.end());  // b0 (innermost batch axis) ...
    // Halide argument lists: (inner..., batch...), and tensor indices: (batch outermost..., last two).
    auto args = [&](std::vector<Var> inner) {
        inner.insert(inner.end(), batch.begin(), batch.end());
        return inner;
    };
    auto index = [&](const Expr &second_last, const Expr &last) {
        std::vector<Expr> idx;
        for (auto it = batch.rbegin(); it != batch.rend(); ++it) idx.push_back(*it);
        idx.push_back(second_last);
        idx.push_back(last);
        return idx;
    };
    auto read = [&](ValueId v, const Expr &second_last, const Expr &last) {
        return at(v, broadcast_index(v, index(second_last, last)));
    };
    auto call = [&](const Func &f, std::vector<Expr> inner) {
        for (const Var &b : batch) inner.push_back(b);
        return f(inner);
    };
    // K's and V's blocks at the batch entries they are stored for: 0 along a batch axis the
    // operand broadcasts (grouped-query heads), so a copy is made once per kv head, not per head.
    auto operand_call = [&](const Func &f, ValueId operand, std::vector<Expr> inner) {
        const auto &dims = g_.node(operand).type.dims;
        for (size_t b = 0; b < batch.size(); b++) {
            const int at = (int)dims.size() - 3 - (int)b;  // the operand's axis for batch axis b
            const dsl::Dim d = at >= 0 ? dsl::resolve_dim(g_, dims[(size_t)at]) : dsl::Dim::fixed(1);
            inner.push_back(d.is_static() && d.size == 1 ? Expr(0) : Expr(batch[b]));
        }
        return f(inner);
    };
    // Schedules address the Funcs by these names (Halide may rename a Func whose name is taken).
    std::vector<std::pair<std::string, Func>> named;
    auto name = [&](const std::string &base) {
        named.push_back({unique_func_name(base), Func()});
        return named.back().first;
    };

    // Reads are clamped to the tensors: a schedule may round a tile up past the last query row,
    // output column or key, and those lanes compute values nobody stores (keys past the end are
    // also masked to -inf, so they add nothing). K and V are read through kblock and vblock, which
    // schedules copy once so the clamps (gathers when vectorized) stay out of the inner loops.
    const int q_rank = g_.node(a.q).type.rank(), v_rank = g_.node(a.v).type.rank();
    const Expr rows = extent(a.q, q_rank - 2), columns = extent(a.v, v_rank - 1);
    // likely(): loops over the middle of a tensor run without the clamps (Halide partitions them).
    const Expr row_in = Halide::clamp(i, 0, rows - 1), column_in = Halide::clamp(Halide::likely(n), 0, columns - 1);
    const Expr key = jb * bk + lj;  // the key this block column holds
    const Expr key_in = Halide::clamp(Halide::likely(key), 0, keys - 1);
    const Expr in_range = key < keys;

    Func kblock(name("kblock"));
    kblock(args({lj, d, jb})) = read(a.kt, d, key_in);
    Func vblock(name("vblock"));
    vblock(args({n, lj, jb})) = read(a.v, key_in, column_in);
    Func qrow(name("qrow"));
    qrow(args({d, i})) = read(a.q, row_in, d);
    Func qk(name("matmul"));
    Halide::RDom rd(0, depth, "k");
    qk(args({lj, i, jb})) = 0.0f;
    qk(args({lj, i, jb})) += call(qrow, {rd, i}) * operand_call(kblock, a.kt, {lj, rd, jb});
    Expr score = call(qk, {lj, i, jb});
    if (a.scale_node != dsl::kNoValue) {
        const float c = (float)g_.node(a.scale_node).attrs.value[0];
        score = a.scale_divides ? score / c : score * c;
    }
    if (a.mask != dsl::kNoValue) score = score + read(a.mask, row_in, key_in);
    Func scores(name("scores"));
    // Infinities are ordinary values here (a mask's -inf, the tail's): strict_float keeps LLVM's
    // fast-math flags, which assume no infinities, from folding them away (select(c, -inf, 0) + x
    // -> x), at no cost to this elementwise step.
    scores(args({lj, i, jb})) = Halide::strict_float(Halide::select(in_range, score, Expr(-INFINITY)));
    score = call(scores, {lj, i, jb});

    // Row maximum and sum of a block as kLanes partial results along the keys (a fixed tree,
    // like a vectorized row sum), then the lanes combined: the partial results are contiguous.
    const int lanes = dsl::kAttentionLanes;
    const Var u("u");
    Halide::RDom rl(0, bk, "r"), ro(0, bk / lanes, "ro"), ru(0, lanes, "ru");
    Func lane_max(name("lane_max"));
    lane_max(args({u, i, jb})) = order_key(Expr(-INFINITY), true);
    lane_max(args({u, i, jb})) = Halide::max(lane_max(args({u, i, jb})), order_key(call(scores, {ro * lanes + u, i, jb}), true));
    Func block_max(name("block_max"));
    block_max(args({i, jb})) = order_key(Expr(-INFINITY), true);
    block_max(args({i, jb})) = Halide::max(block_max(args({i, jb})), call(lane_max, {ru, i, jb}));
    const Expr bmax_key = call(block_max, {i, jb});

    Func probs(name("probs"));
    // A -inf score (masked) gives exactly 0, decided on the order key: Halide's exp is a polynomial
    // that need not return 0 for -inf, and its simplifier may fold a constant -inf into it.
    const Expr masked = order_key(score, true) == order_key(Expr(-INFINITY), true);
    probs(args({lj, i, jb})) =
        Halide::select(in_range && is_finite_key(bmax_key) && !masked, Halide::exp(score - from_order_key(bmax_key)), 0.0f);
    Func lane_sum(name("lane_sum"));
    lane_sum(args({u, i, jb})) = 0.0f;
    lane_sum(args({u, i, jb})) += call(probs, {ro * lanes + u, i, jb});
    Func block_sum(name("block_sum"));
    block_sum(args({i, jb})) = 0.0f;
    block_sum(args({i, jb})) += call(lane_sum, {ru, i, jb});
    Func block_pv(name("block_pv"));
    block_pv(args({n, i, jb})) = 0.0f;
    block_pv(args({n, i, jb})) += call(probs, {rl, i, jb}) * operand_call(vblock, a.v, {n, rl, jb});

    Func state(name("state"));
    Halide::RDom rj(0, blocks, "rj");
    // A causal mask hides every key past i + L - S: blocks that start past it are skipped (the
    // row's update would add nothing), which Halide turns into a shorter block loop per task.
    if (a.mask != dsl::kNoValue && g_.node(a.mask).op == dsl::Op::CausalMask)
        rj.where(rj * bk <= Halide::min(i, rows - 1) + (keys - rows));
    state(args({n, i})) = Halide::Tuple(0.0f, order_key(Expr(-INFINITY), true), 0.0f);
    {
        const Expr acc = call(state, {n, i})[0], m_key = call(state, {n, i})[1], sum = call(state, {n, i})[2];
        const Expr b_key = call(block_max, {i, rj}), m_new_key = Halide::max(m_key, b_key);
        const Expr finite_new = is_finite_key(m_new_key);
        // One of the two factors is 1 (the larger maximum's): one exp gives the other,
        // e^-|m - b|, which the state's update computes for every column.
        const Expr old_wins = m_key >= b_key;
        const Expr e = Halide::exp(-Halide::abs(from_order_key(m_key) - from_order_key(b_key)));
        const Expr alpha = Halide::select(finite_new && is_finite_key(m_key), Halide::select(old_wins, 1.0f, e), 0.0f);
        const Expr beta = Halide::select(finite_new && is_finite_key(b_key), Halide::select(old_wins, e, 1.0f), 0.0f);
        state(args({n, i})) = Halide::Tuple(acc * alpha + call(block_pv, {n, i, rj}) * beta, m_new_key,
                                            sum * alpha + call(block_sum, {i, rj}) * beta);
    }
    Func y("y");
    y(args({n, i})) = Halide::select(is_finite_key(call(state, {n, i})[1]), call(state, {n, i})[0] / call(state, {n, i})[2],
                                     from_order_key(Halide::Int(32).max()));

    AttentionFuncs out{y, Func()};
    if (a.lse != dsl::kNoValue) {
        // The rows' logsumexp from the state's maximum and sum (equal along n: column 0's),
        // NaN where the maximum is not finite, as m + log(sum) of the rows is.
        out.lse = Func("lse");
        out.lse(args({n, i})) = logsumexp_from_max_key(call(state, {0, i})[1], call(state, {0, i})[2]);
    }

    const Func funcs[] = {kblock, vblock, qrow, qk, scores, lane_max, block_max, probs, lane_sum, block_sum, block_pv, state};
    for (size_t f = 0; f < named.size(); f++) out_.funcs[named[f].first] = funcs[f];
    auto role = [&](const char *r, ValueId v) {
        if (auto p = params_.find(v); p != params_.end()) out_.input_roles[r] = p->second;
    };
    role("q", a.q);
    role("k", a.k != dsl::kNoValue ? a.k : a.kt);
    role("v", a.v);
    if (a.mask != dsl::kNoValue) role("mask", a.mask);
    out_.matmul_count = 2;
    return out;
}

}  // namespace tessel::lower
