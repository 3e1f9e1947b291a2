/** \file
 * ExprBuilder: the inside of lower_group() (LowerToHalide.h), not part of its interface. It builds
 * one group's graph values as Halide Exprs and Funcs: the group's inputs become ImageParams over
 * their physical dimensions (every read maps a logical index through the input's layout), pure
 * ops become inline Exprs at an index (at()), and a contraction or reduction becomes a Func with
 * an update definition the first time a value reads it. The definitions are split by concept:
 *   ExprBuilder.cpp   inputs, values at an index through layouts, broadcasting, reshapes,
 *                     constants, outputs in a layout;
 *   Contractions.cpp  matmuls (sibling matmuls as one Tuple Func) and the right operand's view "w";
 *   Reductions.cpp    reduce_sum/mean/max and softmax;
 *   Attention.cpp     an attention group's online-softmax nest;
 *   AttentionBackward.cpp  an attention-backward group's nest over pairs of query and key blocks.
 * The IEEE special-value helpers they call are in IeeeMath.h.
 *
 * Legal for one FusionGroup of a Graph whose ops are pure; anything it cannot lower (integer
 * arithmetic, an unbound symbolic dimension, an op without a lowering) is refused with
 * LoweringError naming the node. One ExprBuilder per lowering: the Funcs it builds are its own.
 */
#pragma once

#include "dsl/passes/AttentionBackward.h"
#include "dsl/passes/AttentionFusion.h"
#include "lowering/IeeeMath.h"
#include "lowering/LowerToHalide.h"

#include <Halide.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace tessel::lower {

/** An attention group's output Funcs: "y" = softmax(q kᵀ) v, and "lse" = the rows' logsumexp
 * where the group writes it (else undefined). */
struct AttentionFuncs {
    Halide::Func out, lse;
};

/** An attention-backward group's two output Funcs: "y0" = {dK, dV} per key, "y1" = dQ per row. */
struct AttentionBackwardFuncs {
    Halide::Func dkv, dq;
};

/** Throws LoweringError "cannot lower <node>: <why>". */
[[noreturn]] void refuse(const dsl::Graph &g, dsl::ValueId v, const std::string &why);

class ExprBuilder {
public:
    ExprBuilder(const dsl::Graph &g, const dsl::FusionGroup &group, LoweredGroup &out);

    /** Value `v` at tensor index `idx` (idx[0] is the outermost axis). A pure value read twice at
     * the same index is built once (the Expr is shared, a DAG Halide's CSE keeps one copy of), so
     * `%b = mul(%a, %a)` chained n times costs n nodes, not 2^n. */
    Halide::Expr at(dsl::ValueId v, const std::vector<Halide::Expr> &idx);

    /** An elementwise arithmetic op as IEEE 754 defines it, outside fast mode. Halide's
     * simplifier treats float arithmetic as real arithmetic: x - x folds to 0 and x * 0 to 0,
     * which are NaN for x = inf or NaN (x - reduce_sum(x) over an axis of extent 1 is x - x once
     * the reduction is inlined). strict_float keeps the op as written, in the simplifier and in
     * LLVM, for this op only: contractions and reductions keep their fast-math code. */
    Halide::Expr ieee(const std::vector<Halide::Expr> &operands, const StrictOp &op) const {
        return mode_ == dsl::NumericMode::Fast ? op(operands) : strict_over(operands, op);
    }

    /** Whether an operand of `n` is a causal_mask (its -inf must survive fast mode). */
    bool reads_causal_mask(const dsl::Node &n) const;

    /** Extent of `axis` of value `v` as an Expr (static, or a bound symbol). */
    Halide::Expr extent(dsl::ValueId v, int axis);

    /** Output Func `name` writing value `v` in its layout: defined over the physical dims (loops
     * named as for a tensor of that rank), each point the value at its logical index; the
     * padding of a last panel is 0 (the value is read at a clamped index there, never out of
     * bounds). */
    Halide::Func laid_out(dsl::ValueId v, const std::string &name);

    std::vector<Halide::Var> vars(int rank);

    /** Attention.cpp: the attention group's output Func "y", computed by the online-softmax
     * nest over blocks of dsl::kAttentionKvBlock keys (stages: kblock, vblock, matmul, scores, block_max, probs, block_sum,
     * block_pv, state). */
    AttentionFuncs attention(const dsl::AttentionPattern &a);

    /** AttentionBackward.cpp: the attention-backward group's outputs (stages: kcols, vcols,
     * qk_stats, row_max, row_sum, lse, then qk, probs, dp, ds, dq_block, dk_block, dv_block, grads). */
    AttentionBackwardFuncs attention_backward(const dsl::AttentionBackwardPattern &b);

private:
    const dsl::Graph &g_;
    LoweredGroup &out_;
    dsl::NumericMode mode_;
    std::set<dsl::ValueId> in_group_;
    std::map<dsl::ValueId, Halide::ImageParam> params_;
    std::map<dsl::ValueId, std::vector<dsl::PhysicalDim>> param_dims_;  // each input's physical dims
    std::map<dsl::ValueId, Halide::Func> funcs_;
    std::map<dsl::ValueId, Halide::Func> views_;                     // right operand read through a view -> its Func "w"
    std::map<dsl::ValueId, dsl::ValueId> column_scale_;              // matmul -> the scale per column its readers apply
    std::map<dsl::ValueId, int> tuple_of_;                           // matmul value -> its element in the shared Func
    std::map<dsl::ValueId, std::vector<dsl::ValueId>> siblings_of_;  // matmul -> the matmuls sharing its Func
    std::map<std::string, Halide::Expr> symbols_;
    std::map<dsl::ValueId, Halide::Buffer<float>> constants_;
    /** at()'s pure values built so far: value -> (index, Expr), indices compared structurally. */
    std::map<dsl::ValueId, std::vector<std::pair<std::vector<Halide::Expr>, Halide::Expr>>> built_;
    Halide::Expr build(dsl::ValueId v, const std::vector<Halide::Expr> &idx);

    /** Defines the Func of a contraction or reduction node the first time it is used. */
    void define_stateful_func(dsl::ValueId v);

    static std::vector<Halide::Expr> reversed(const std::vector<Halide::Expr> &idx) { return {idx.rbegin(), idx.rend()}; }

    std::string halide_name(dsl::ValueId v) const { return lower::halide_name(g_, v); }
    std::string unique_func_name(const std::string &base);
    void add_input(dsl::ValueId v);
    const std::vector<int64_t> &perm(const dsl::Node &n);

    /** Numpy broadcasting: map the result index onto operand `in` (aligned at the last axis). */
    std::vector<Halide::Expr> broadcast_index(dsl::ValueId in, const std::vector<Halide::Expr> &idx);
    std::vector<Halide::Expr> reshape_index(dsl::ValueId v, const std::vector<Halide::Expr> &idx);
    Halide::Buffer<float> constant_buffer(dsl::ValueId v);

    // Contractions.cpp
    void define_matmul(const std::vector<dsl::ValueId> &siblings);
    /** The right operand read through 2-D transposes, widening casts, int4 unpacking and
     * dequantization factors of a group input: `x @ transpose(w_nk)` (PyTorch's Linear, weights
     * stored [N, K]), `x @ cast(w_bf16)`, `x @ (cast(q_i8) * s)` (weight-only int8),
     * `x @ (cast(unpack_int4(p)) * repeat_interleave(s))` (int4 in groups). It becomes a Func "w" in
     * the [K, N] orientation schedules expect — pure vars _0 (n) and _1 (k), like an
     * ImageParam's wrapper — which the matmul reads; schedules stage and pack it exactly as they
     * pack a w stored [K, N] in f32. In fast mode a scale per column at the top of the chain
     * (x @ (cast(q) * s)) is applied to the sums instead, (x @ cast(q)) * s: one multiply per
     * output rather than per weight element read (distributing the product is a reassociation). */
    void define_operand_view(dsl::ValueId rhs, dsl::ValueId matmul);
    /** The operand a view reads through v (a transpose, widening cast, unpack_int4, or a factor
     * or zero point per column or per group), or kNoValue where v is none of them. */
    dsl::ValueId view_operand(dsl::ValueId v) const;
    /** A dequantization's factor constant along k: [1, N] or [N] (a scale per column). */
    bool is_column_factor(dsl::ValueId v) const;
    /** A dequantization's factor per group of rows along k: repeat_interleave along axis 0. */
    bool is_group_factor(dsl::ValueId v) const;

    // Reductions.cpp
    void define_reduction(dsl::ValueId v);
    void define_softmax(dsl::ValueId v);
};

}  // namespace tessel::lower
