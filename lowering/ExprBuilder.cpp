/** \file
 * ExprBuilder's expressions through layouts (ExprBuilder.h): the group's inputs as ImageParams
 * over their physical dimensions, a value at a logical index (pure ops inline, reads mapped
 * through layouts, broadcasting and reshapes as index arithmetic), tensor constants as buffers,
 * and an output written over its layout's physical dimensions.
 */
#include "lowering/ExprBuilder.h"

#include <cctype>

#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "lowering/IeeeMath.h"

#include <algorithm>

namespace tessel::lower {

using dsl::Graph;
using dsl::Node;
using dsl::Op;
using dsl::ValueId;
using Halide::Expr;
using Halide::Func;

[[noreturn]] void refuse(const Graph &g, ValueId v, const std::string &why) {
    throw LoweringError("cannot lower " + dsl::print_node(g, v) + ": " + why);
}

ExprBuilder::ExprBuilder(const Graph &g, const dsl::FusionGroup &group, LoweredGroup &out) : g_(g), out_(out) {
    in_group_.insert(group.nodes.begin(), group.nodes.end());
    mode_ = out.mode;
    // Every operand produced outside the group is an input buffer.
    for (ValueId v : group.nodes) {
        for (ValueId in : g.node(v).inputs) {
            if (!in_group_.count(in) && !params_.count(in)) add_input(in);
        }
    }
    for (ValueId v : group.nodes) {
        if (g.node(v).op == Op::Input && !params_.count(v)) add_input(v);
    }
    // Sibling contractions: matmuls sharing the left operand and result type share a Func.
    std::vector<ValueId> mms;
    for (ValueId v : group.nodes)
        if (g.node(v).op == Op::MatMul) mms.push_back(v);
    std::set<ValueId> grouped;
    for (size_t i = 0; i < mms.size(); i++) {
        if (grouped.count(mms[i])) continue;
        std::vector<ValueId> siblings{mms[i]};
        for (size_t j = i + 1; j < mms.size(); j++) {
            const Node &a = g.node(mms[i]), &b = g.node(mms[j]);
            if (!grouped.count(mms[j]) && a.inputs[0] == b.inputs[0] && dsl::same_type(g, a.type, b.type))
                siblings.push_back(mms[j]);
        }
        for (ValueId s : siblings) {
            grouped.insert(s);
            siblings_of_[s] = siblings;
        }
    }
}

Expr ExprBuilder::at(ValueId v, const std::vector<Expr> &idx) {
    if (auto p = params_.find(v); p != params_.end()) return p->second(reversed(dsl::physical_index(param_dims_.at(v), idx)));
    if (auto w = views_.find(v); w != views_.end()) return w->second(reversed(idx));
    if (!funcs_.count(v) && in_group_.count(v)) define_stateful_func(v);  // lazily, in use order
    if (auto f = funcs_.find(v); f != funcs_.end()) {
        if (auto t = tuple_of_.find(v); t != tuple_of_.end() && f->second.outputs() > 1)
            return f->second(reversed(idx))[t->second];
        if (auto s = column_scale_.find(v); s != column_scale_.end())  // (x @ q) * s: see define_operand_view
            return f->second(reversed(idx)) * at(s->second, broadcast_index(s->second, idx));
        return f->second(reversed(idx));
    }
    auto same_index = [&](const std::vector<Expr> &other) {
        return std::equal(idx.begin(), idx.end(), other.begin(), other.end(),
                          [](const Expr &a, const Expr &b) { return Halide::Internal::equal(a, b); });
    };
    std::vector<std::pair<std::vector<Expr>, Expr>> &built = built_[v];
    for (const auto &[index, e] : built)
        if (same_index(index)) return e;
    Expr e = build(v, idx);
    built.emplace_back(idx, e);
    return e;
}

Expr ExprBuilder::build(ValueId v, const std::vector<Expr> &idx) {
    const Node &n = g_.node(v);
    // Casts and data movement keep a narrow value's storage type (an index remap reads it as
    // stored); arithmetic is f32 only.
    const bool moves_data = n.op == Op::Cast || n.op == Op::Copy || n.op == Op::Transpose || n.op == Op::Reshape ||
                            n.op == Op::Slice || n.op == Op::Concat || n.op == Op::PackInt4 || n.op == Op::UnpackInt4 ||
                            n.op == Op::RepeatInterleave;
    if (n.type.dtype != dsl::DType::F32 && !moves_data)
        refuse(g_, v, "arithmetic is lowered in f32 only (an f16/bf16/i8 value is stored and cast)");
    auto operand = [&](int i) { return at(n.inputs[i], broadcast_index(n.inputs[i], idx)); };
    switch (n.op) {
    case Op::Constant: {
        const auto &lifted = out_.constant_values;
        if (auto at = std::find(lifted.begin(), lifted.end(), v); at != lifted.end())
            return out_.constants((int)(at - lifted.begin()));
        if (n.attrs.value.size() == 1) return Expr(scalar_constant_value(n));
        return constant_buffer(v)(reversed(idx));
    }
    case Op::CausalMask: {
        const int r = n.type.rank();
        const Expr s = extent(v, r - 2), l = extent(v, r - 1);
        return Halide::select(idx[r - 1] <= idx[r - 2] + (l - s), 0.0f, Expr(-INFINITY));
    }
    // A causal mask's -inf is its meaning, not an overflow fast mode may ignore: arithmetic on it
    // is kept as written in every mode.
    case Op::Add: {
        const StrictOp add = [](const std::vector<Expr> &o) { return o[0] + o[1]; };
        return reads_causal_mask(n) ? strict_over({operand(0), operand(1)}, add) : ieee({operand(0), operand(1)}, add);
    }
    case Op::Sub: {
        const StrictOp sub = [](const std::vector<Expr> &o) { return o[0] - o[1]; };
        return reads_causal_mask(n) ? strict_over({operand(0), operand(1)}, sub) : ieee({operand(0), operand(1)}, sub);
    }
    case Op::Mul: return ieee({operand(0), operand(1)}, [](const std::vector<Expr> &o) { return o[0] * o[1]; });
    case Op::Div: return ieee({operand(0), operand(1)}, [](const std::vector<Expr> &o) { return o[0] / o[1]; });
    case Op::Max: return ieee_maximum(operand(0), operand(1));
    case Op::Min: return ieee_minimum(operand(0), operand(1));
    // Masks are exact in every mode: a comparison is 1 or 0 (IeeeMath.h: NaN is unordered).
    case Op::Less:
    case Op::LessEqual:
    case Op::Greater:
    case Op::GreaterEqual:
    case Op::Equal:
    case Op::NotEqual: return Halide::select(ieee_compare(n.op, operand(0), operand(1)), 1.0f, 0.0f);
    case Op::Where:  // the condition's zero test on its bits: +-0 pick b, anything else (NaN too) a
        return Halide::select((float_bits(operand(0)) & 0x7fffffff) == 0, operand(2), operand(1));
    case Op::Gelu: return ieee({operand(0)}, [&](const std::vector<Expr> &o) { return gelu_expr(o[0], false, mode_); });
    case Op::GeluTanh: return ieee({operand(0)}, [&](const std::vector<Expr> &o) { return gelu_expr(o[0], true, mode_); });
    case Op::Tanh: return ieee_tanh(operand(0));
    case Op::Exp: return ieee_exp(operand(0), mode_);
    case Op::Relu: return ieee_maximum(operand(0), 0.0f);  // relu(NaN) = NaN, relu(-0) = +0
    case Op::Neg: return -operand(0);
    case Op::Abs: return Halide::abs(operand(0));
    case Op::Sqrt: return Halide::sqrt(operand(0));
    case Op::Rsqrt: return 1.0f / Halide::sqrt(operand(0));
    case Op::Log: return ieee_log(operand(0));
    case Op::Sigmoid: return ieee({operand(0)}, [](const std::vector<Expr> &o) { return ieee_sigmoid_times(o[0], 1.0f); });
    case Op::Silu: return ieee({operand(0)}, [](const std::vector<Expr> &o) { return ieee_sigmoid_times(o[0], o[0]); });
    case Op::Sin: return ieee_sin(operand(0));
    case Op::Cos: return ieee_cos(operand(0));
    case Op::Cast: {
        if (!storage_type(n.type.dtype)) refuse(g_, v, "only casts between f32, f16, bf16 and i8 are lowered");
        if (n.type.dtype == dsl::DType::I8) {  // dsl/ir/Numerics.h: nearest even, saturating, NaN to 0
            const Expr x = Halide::cast(Halide::Float(32), operand(0));
            const Expr r = Halide::clamp(Halide::round(x), -128.0f, 127.0f);
            const Expr nan = (float_bits(x) & 0x7fffffff) > 0x7f800000;  // bits: immune to fast-math flags
            return Halide::cast(Halide::Int(8), Halide::select(nan, 0.0f, r));
        }
        return Halide::cast(*storage_type(n.type.dtype), operand(0));
    }
    case Op::Transpose: {
        std::vector<Expr> in_idx(idx.size());
        for (size_t i = 0; i < idx.size(); i++) in_idx[perm(n)[i]] = idx[i];
        return at(n.inputs[0], in_idx);
    }
    case Op::Reshape: return at(n.inputs[0], reshape_index(v, idx));
    case Op::Slice: {
        std::vector<Expr> j = idx;
        j[(size_t)n.attrs.axis] += (int)n.attrs.start;
        return at(n.inputs[0], j);
    }
    case Op::RepeatInterleave: {
        std::vector<Expr> j = idx;
        j[(size_t)n.attrs.axis] = idx[(size_t)n.attrs.axis] / (int)n.attrs.repeats;
        return at(n.inputs[0], j);
    }
    case Op::UnpackInt4: {
        // The nibble of byte k / 2, sign-extended, in 32-bit lanes (x86 has no 8-bit shifts): moved
        // to the top of the word (by 28 or 24 bits: one shift by a count every lane shares, no
        // select; unsigned, as Halide takes signed overflow for impossible), then shifted down
        // arithmetically. The narrowing to i8 keeps every value, so the widening cast that reads it
        // folds away.
        const size_t axis = (size_t)n.attrs.axis;
        std::vector<Expr> j = idx;
        j[axis] = idx[axis] / 2;
        const Expr word = Halide::cast<uint32_t>(Halide::cast<int32_t>(at(n.inputs[0], j)));
        const Expr up = Halide::cast<uint32_t>(28 - 4 * (idx[axis] % 2));
        return Halide::cast<int8_t>(Halide::reinterpret<int32_t>(word << up) >> 28);
    }
    case Op::PackInt4: {  // elements 2i and 2i + 1 (clamped into the operand; 0 past its end)
        const size_t axis = (size_t)n.attrs.axis;
        const Expr last = extent(n.inputs[0], (int)axis) - 1;
        auto nibble = [&](const Expr &k) {
            std::vector<Expr> j = idx;
            j[axis] = Halide::min(k, last);
            return Halide::clamp(at(n.inputs[0], j), Halide::cast<int8_t>(-8), Halide::cast<int8_t>(7)) &
                   Halide::cast<int8_t>(15);
        };
        const Expr hi = Halide::select(2 * idx[axis] + 1 <= last, nibble(2 * idx[axis] + 1), Halide::cast<int8_t>(0));
        return nibble(2 * idx[axis]) | (hi << 4);
    }
    case Op::Concat: {  // each side's index clamped into it, so bounds inference stays within both
        const size_t axis = (size_t)n.attrs.axis;
        const Expr split = extent(n.inputs[0], (int)axis);
        std::vector<Expr> ja = idx, jb = idx;
        ja[axis] = Halide::min(idx[axis], split - 1);
        jb[axis] = Halide::max(idx[axis] - split, 0);
        return Halide::select(idx[axis] < split, at(n.inputs[0], ja), at(n.inputs[1], jb));
    }
    case Op::Copy:
        return operand(0);  // the layout is the group output's (laid_out)
    // The group's output only (no group member reads a cache write): its kernel is realized over
    // the cache's tail window, re-based at 0, so the values are read at the window's index.
    case Op::UpdateTail: return at(n.inputs[1], idx);
    default: break;
    }
    refuse(g_, v, std::string("op '") + dsl::to_string(n.op) + "' has no Halide lowering inside a group");
}

bool ExprBuilder::reads_causal_mask(const Node &n) const {
    return std::any_of(n.inputs.begin(), n.inputs.end(), [&](ValueId in) { return g_.node(in).op == Op::CausalMask; });
}

Expr ExprBuilder::extent(ValueId v, int axis) {
    const dsl::Dim d = dsl::resolve_dim(g_, g_.node(v).type.dims[axis]);
    if (d.is_static()) return Expr((int)d.size);
    if (d.kind == dsl::Dim::Kind::Symbol) {
        auto s = symbols_.find(d.symbol);
        if (s != symbols_.end()) return s->second;
        refuse(g_, v, "dimension '" + d.symbol + "' is bound by no input of this group");
    }
    refuse(g_, v, "dimension " + std::to_string(axis) + " depends on shape code that did not fold to a constant");
}

Func ExprBuilder::laid_out(ValueId v, const std::string &name) {
    const Node &n = g_.node(v);
    const std::vector<dsl::PhysicalDim> dims = dsl::physical_dims(n.layout, n.type.rank());
    auto vs = vars((int)dims.size());
    std::vector<Expr> phys;
    for (auto it = vs.rbegin(); it != vs.rend(); ++it) phys.push_back(*it);
    std::vector<Expr> idx = dsl::logical_index(dims, phys, n.type.rank()), clamped = idx;
    Expr inside = Halide::Internal::const_true();
    if (n.layout.has_panels()) {
        const int a = n.layout.panel_axis;
        const Expr e = extent(v, a);
        inside = idx[a] < e;
        clamped[a] = Halide::min(idx[a], e - 1);
    }
    Func y(name);
    const std::vector<Halide::Var> args(vs.begin(), vs.end());
    const Expr value = at(v, clamped);
    y(args) = n.layout.has_panels() ? Halide::select(inside, value, Halide::cast(value.type(), 0)) : value;
    return y;
}

std::vector<Halide::Var> ExprBuilder::vars(int rank) {
    std::vector<Halide::Var> vs;
    for (int a = rank - 1; a >= 0; a--) vs.push_back(Halide::Var(axis_name(a, rank)));
    return vs;  // Halide order: innermost first
}

void ExprBuilder::define_stateful_func(ValueId v) {
    const Op op = g_.node(v).op;
    if (op == Op::MatMul)
        define_matmul(siblings_of_.at(v));
    else if (op == Op::Softmax)
        define_softmax(v);
    else if (dsl::is_reduction(op))
        define_reduction(v);
}

std::string ExprBuilder::unique_func_name(const std::string &base) {
    std::string name = base;
    for (int i = 1; out_.funcs.count(name); i++) name = base + std::to_string(i);
    return name;
}

void ExprBuilder::add_input(ValueId v) {
    const Node &n = g_.node(v);
    const auto type = storage_type(n.type.dtype);
    if (!type) refuse(g_, v, "only f32, f16, bf16 and i8 tensors are lowered");
    const std::vector<dsl::PhysicalDim> dims = dsl::physical_dims(n.layout, n.type.rank());
    Halide::ImageParam p(*type, std::max(1, (int)dims.size()), halide_name(v));
    params_[v] = p;
    param_dims_[v] = dims;
    out_.input_values.push_back(v);
    out_.inputs.push_back(p);
    for (size_t pd = 0; pd < dims.size(); pd++) {
        const int a = dims[pd].axis, hd = (int)(dims.size() - 1 - pd);
        if (dims[pd].part == dsl::PhysicalDim::Part::InPanel) p.dim(hd).set_extent((int)dims[pd].width);
        // A panel-blocked axis's extent is not a dimension of the buffer: another input binds it.
        if (dims[pd].part != dsl::PhysicalDim::Part::Whole) continue;
        const dsl::Dim d = dsl::resolve_dim(g_, n.type.dims[a]);
        // A static extent said to Halide: loops over it need no tails (checked when the pipeline runs).
        if (d.is_static()) p.dim(hd).set_extent((int)d.size);
        if (d.kind != dsl::Dim::Kind::Symbol) continue;
        // The first input naming a symbol binds it; later ones must agree (checked when
        // the pipeline runs, and a constant extent Halide can use while compiling).
        if (auto it = symbols_.find(d.symbol); it != symbols_.end())
            p.dim(hd).set_extent(it->second);
        else
            symbols_[d.symbol] = p.dim(hd).extent();
    }
}

const std::vector<int64_t> &ExprBuilder::perm(const Node &n) {
    static thread_local std::vector<int64_t> reverse;
    if (!n.attrs.perm.empty()) return n.attrs.perm;
    reverse.clear();
    for (int i = n.type.rank() - 1; i >= 0; i--) reverse.push_back(i);
    return reverse;
}

std::vector<Expr> ExprBuilder::broadcast_index(ValueId in, const std::vector<Expr> &idx) {
    const auto &dims = g_.node(in).type.dims;
    const int r = (int)dims.size(), off = (int)idx.size() - r;
    std::vector<Expr> out;
    for (int a = 0; a < r; a++) {
        const dsl::Dim d = dsl::resolve_dim(g_, dims[a]);
        out.push_back(d.is_static() && d.size == 1 ? Expr(0) : idx[a + off]);
    }
    return out;
}

std::vector<Expr> ExprBuilder::reshape_index(ValueId v, const std::vector<Expr> &idx) {
    const Node &n = g_.node(v);
    Expr linear = 0;
    for (int a = 0; a < n.type.rank(); a++) linear = linear * extent(v, a) + idx[a];
    const ValueId in = n.inputs[0];
    const int r = g_.node(in).type.rank();
    std::vector<Expr> out(r);
    for (int a = r - 1; a >= 0; a--) {
        Expr e = extent(in, a);
        out[a] = linear % e;
        linear = linear / e;
    }
    return out;
}

Halide::Buffer<float> ExprBuilder::constant_buffer(ValueId v) {
    auto it = constants_.find(v);
    if (it != constants_.end()) return it->second;
    const Node &n = g_.node(v);
    if (!n.type.all_static()) refuse(g_, v, "a tensor constant needs a static shape");
    std::vector<int> sizes;
    for (int a = n.type.rank() - 1; a >= 0; a--) sizes.push_back((int)n.type.dims[a].size);
    Halide::Buffer<float> b(sizes, halide_name(v));
    for (size_t i = 0; i < n.attrs.value.size(); i++) b.data()[i] = (float)n.attrs.value[i];
    return constants_[v] = b;
}

}  // namespace tessel::lower
