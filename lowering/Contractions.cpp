/** \file
 * Contractions (ExprBuilder.h): a matmul node becomes the Func "matmul" (pure vars n, m, b0...,
 * RDom k over the shared axis), matmuls of one group sharing their left operand and result type
 * become ONE Tuple Func (sibling fusion), and the first contraction's right operand read through
 * a layout, a transpose, a widening cast, int4 unpacking or a dequantization (per column or per
 * group) becomes the view Func "w" in [K, N] orientation.
 * Records the facts schedules need: input roles "x" and "w", the right operand's panel width,
 * the number of contractions.
 */
#include "lowering/ExprBuilder.h"

#include "dsl/ir/TypeInference.h"

namespace tessel::lower {

using dsl::Graph;
using dsl::Node;
using dsl::Op;
using dsl::ValueId;
using Halide::Expr;
using Halide::Func;

void ExprBuilder::define_matmul(const std::vector<ValueId> &siblings) {
    const ValueId v = siblings[0];
    const Node &n = g_.node(v);
    const int rank = n.type.rank();
    if (rank < 2) refuse(g_, v, "matmul lowering needs operands of rank >= 2");
    const std::string name = unique_func_name("matmul");
    Func f(name);
    out_.funcs[name] = f;  // claim the name now: an operand may define further contractions
    auto vs = vars(rank);
    const ValueId a = n.inputs[0];
    const int ra = g_.node(a).type.rank();
    Halide::RDom k(0, extent(a, ra - 1), "k");
    std::vector<Expr> idx;  // tensor order
    for (auto it = vs.rbegin(); it != vs.rend(); ++it) idx.push_back(*it);
    std::vector<Expr> lhs_idx = idx, rhs_idx = idx;
    lhs_idx.back() = k;     // a[..., m, k]
    rhs_idx[rank - 2] = k;  // b[..., k, n]
    std::vector<Expr> init, update;
    std::vector<Halide::Var> args(vs.begin(), vs.end());
    const bool first_contraction = !out_.input_roles.count("x") && !out_.funcs.count("w");
    if (first_contraction) define_operand_view(n.inputs[1], siblings.size() == 1 ? v : dsl::kNoValue);
    for (size_t i = 0; i < siblings.size(); i++) {
        const Node &s = g_.node(siblings[i]);
        init.push_back(0.0f);
        Expr prod =
            at(s.inputs[0], broadcast_index(s.inputs[0], lhs_idx)) * at(s.inputs[1], broadcast_index(s.inputs[1], rhs_idx));
        update.push_back(prod);
        tuple_of_[siblings[i]] = (int)i;
        funcs_[siblings[i]] = f;
    }
    if (siblings.size() == 1) {
        f(args) = init[0];
        f(args) += update[0];
    } else {
        f(args) = Halide::Tuple(init);
        std::vector<Expr> acc;
        std::vector<Expr> call_args(args.begin(), args.end());
        for (size_t i = 0; i < siblings.size(); i++) acc.push_back(f(call_args)[i] + update[i]);
        f(args) = Halide::Tuple(acc);
    }
    out_.reduction_axes[name] = {false, true, true};
    out_.matmul_count += (int)siblings.size();
    if (first_contraction) {
        if (auto p = params_.find(a); p != params_.end()) out_.input_roles["x"] = p->second;
        if (auto p = params_.find(n.inputs[1]); p != params_.end() && !views_.count(n.inputs[1]))
            out_.input_roles["w"] = p->second;
    }
}

bool ExprBuilder::is_column_factor(ValueId v) const {
    const dsl::TensorType &t = g_.node(v).type;
    const dsl::Dim rows = t.rank() == 2 ? dsl::resolve_dim(g_, t.dims[0]) : dsl::Dim::fixed(1);
    return t.rank() >= 1 && t.rank() <= 2 && rows.is_static() && rows.size == 1;
}

bool ExprBuilder::is_group_factor(ValueId v) const {
    const Node &n = g_.node(v);
    return n.op == Op::RepeatInterleave && n.type.rank() == 2 && n.attrs.axis == 0;
}

ValueId ExprBuilder::view_operand(ValueId v) const {
    const Node &t = g_.node(v);
    if (t.op == Op::Transpose && t.type.rank() == 2 && (t.attrs.perm.empty() || t.attrs.perm == std::vector<int64_t>{1, 0}))
        return t.inputs[0];
    if (t.op == Op::Cast && t.type.dtype == dsl::DType::F32) return t.inputs[0];
    if (t.op == Op::UnpackInt4 && t.type.rank() == 2) return t.inputs[0];
    // A dequantization: a scale per column ([K, N] times [1, N] or [N]; constant along k, so it
    // may be computed in the group too, `transpose(s)` of a [N, 1] scale) or per group of rows
    // along k (repeat_interleave of a [K / G, N] scale), times, or a zero point minus, the
    // quantized values: the view applies it to each element as it reads it.
    if ((t.op == Op::Mul || t.op == Op::Sub) && t.type.rank() == 2)
        for (int i = 0; i < 2; i++) {
            if (t.op == Op::Sub && i == 1) break;  // the quantized values are the minuend
            const ValueId factor = t.inputs[1 - i];
            if ((is_column_factor(factor) || is_group_factor(factor)) && dsl::same_type(g_, g_.node(t.inputs[i]).type, t.type))
                return t.inputs[i];
        }
    return dsl::kNoValue;
}

void ExprBuilder::define_operand_view(ValueId rhs, ValueId matmul) {
    if (g_.node(rhs).type.rank() != 2) return;
    ValueId v = rhs;
    for (; !params_.count(v); v = view_operand(v))
        if (!in_group_.count(v) || view_operand(v) == dsl::kNoValue) return;
    // A row-major f32 input is the ImageParam itself (schedules wrap it); any layout, cast or
    // scale on the way gets the view, so schedules always see w as a [K, N] f32 Func.
    const dsl::Layout &layout = g_.node(v).layout;
    if (v == rhs && layout.empty()) return;
    bool keeps_positions = true;  // casts and scales: w's elements where the panels put them
    for (ValueId u = rhs; u != v; u = view_operand(u))
        keeps_positions = keeps_positions && g_.node(u).op != Op::Transpose && g_.node(u).op != Op::UnpackInt4;
    if (keeps_positions && layout.order.empty() && layout.has_panels() && layout.panel_axis == 1)
        out_.rhs_panel_width = layout.panel_width;
    ValueId top = rhs;  // what the view computes: rhs, or in fast mode rhs without its column scale
    const Node &r = g_.node(rhs);
    if (mode_ == dsl::NumericMode::Fast && matmul != dsl::kNoValue && r.op == Op::Mul) {
        const ValueId values = view_operand(rhs), factor = r.inputs[0] == values ? r.inputs[1] : r.inputs[0];
        if (is_column_factor(factor)) {  // constant along k: applied to the sums
            top = values;
            column_scale_[matmul] = factor;
        }
    }
    Halide::Var n0("_0"), k1("_1");
    Func view("w");
    view(n0, k1) = at(top, {Expr(k1), Expr(n0)});  // rhs[k][n], through every layout on the way
    out_.funcs["w"] = view;
    views_[rhs] = view;
}

}  // namespace tessel::lower
