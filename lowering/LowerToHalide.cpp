// Map: ExprBuilder (value_at: one graph value at an index, as a Halide Expr or Func call) ->
// define_matmul / define_reduction / define_softmax (Funcs with update definitions) ->
// lower_group(), which binds inputs and outputs.
#include "lowering/LowerToHalide.h"

#include <cctype>

#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

namespace tessel::lower {

using dsl::Graph;
using dsl::Node;
using dsl::Op;
using dsl::ValueId;
using Halide::Expr;
using Halide::Func;

std::string axis_name(int axis, int rank) {
    const int from_end = rank - 1 - axis;
    if (from_end == 0) return "n";
    if (from_end == 1) return "m";
    return "b" + std::to_string(from_end - 2);
}

std::vector<Halide::Argument> LoweredGroup::arguments() const {
    std::vector<Halide::Argument> args;
    for (const auto &p : inputs) args.push_back(p);
    return args;
}

Halide::Pipeline LoweredGroup::pipeline() const { return Halide::Pipeline(outputs); }

namespace {

// Special values of exp. Halide's exp is a vectorizable polynomial that is right for finite
// arguments in range, but it converts the exponent to an integer (exp(NaN) = exp(+inf) =
// exp(1e30) = 0). The cases are selected on the float's bits (fast-math flags cannot fold them
// away), and only where the polynomial is wrong, so every finite result in range is the
// polynomial's, bit for bit. Cost: integer and/compares and three selects per element, all
// vector operations (to be benchmarked: exp is in softmax-free epilogues and the fast GELU).

/** The bits of a float32, for NaN and infinity tests. */
Expr float_bits(const Expr &x) { return Halide::reinterpret(Halide::Int(32), x); }

/** exp with IEEE special values: NaN stays NaN, past ln(FLT_MAX) (88.72284) the result is
 * +inf, below -104 (exp < half the smallest subnormal) it is 0; in between Halide's polynomial.
 * The ranges are compared on the bits too (a positive float's bits order as the float). */
Expr ieee_exp(const Expr &x) {
    const Expr bits = float_bits(x);
    const Expr magnitude = bits & 0x7fffffff;
    const Expr nan = magnitude > 0x7f800000, over = bits > 0x42b17218 /* 88.72284f */,
               under = bits < 0 && magnitude > 0x42d00000 /* -104.0f */;
    // The polynomial sees only arguments in range (0 instead), so no flagged float op ever
    // meets an infinity or NaN that LLVM may assume away.
    const Expr in_range = Halide::select(nan || over || under, Expr(0.0f), x);
    return Halide::select(nan, x, over, Expr(INFINITY), under, Expr(0.0f), Halide::exp(in_range));
}

/** erf with IEEE special values. Halide's erf is a rational polynomial that divides
 * infinities for large arguments (erf(+inf) = erf(1e30) = NaN): NaN stays NaN, from |x| >= 4
 * (where float32 erf rounds to +-1: 1 - erf(4) = 1.5e-8) the result is +-1 with x's sign, in
 * between the polynomial, which sees only in-range arguments (0 instead). Selected on the bits
 * as in ieee_exp, so fast-math flags cannot fold the cases away. */
Expr ieee_erf(const Expr &x) {
    const Expr bits = float_bits(x);
    const Expr magnitude = bits & 0x7fffffff;
    const Expr nan = magnitude > 0x7f800000, saturated = magnitude >= 0x40800000 /* 4.0f */;
    const Expr unit = Halide::reinterpret(Halide::Float(32), (bits & Halide::Int(32).min()) | 0x3f800000);  // +-1
    const Expr in_range = Halide::select(nan || saturated, Expr(0.0f), x);
    return Halide::select(nan, x, saturated, unit, Halide::erf(in_range));
}

/** GELU of `v`: the exact (erf) form, or the tanh approximation. Strict mode evaluates the
 * formula as written; fast mode turns 0.5 (1 + tanh u) into sigmoid(2u), exact in real
 * arithmetic with different rounding, because Halide's exp vectorizes where tanh calls libm
 * once per lane. Halide's erf is a vectorizable polynomial accurate to the last few bits
 * (ieee_erf adds its special values: gelu(+inf) = inf, gelu(-inf) = -inf * 0 = NaN as the
 * formula gives, gelu(-1e30) = -0). */
Expr gelu_expr(const Expr &v, bool tanh_form, dsl::NumericMode mode) {
    if (!tanh_form) return 0.5f * v * (1.0f + ieee_erf(v * 0.70710678118654752f));
    const Expr u = 0.79788456080286536f * (v + 0.044715f * v * v * v);
    if (mode == dsl::NumericMode::Fast) return v / (1.0f + ieee_exp(-2.0f * u));
    return 0.5f * v * (1.0f + Halide::tanh(u));
}

// NaN and signed zeros (docs/TSL.md, "Special values"): max, min, relu, reduce_max and softmax
// follow IEEE 754-2019 maximum/minimum, as the interpreter does. Halide's max/min on floats are
// a compare and select (max(NaN, 0) = 0, max(-0, +0) depends on the operand order) and LLVM gets
// fast-math flags that may assume no NaN, so they are computed on integers instead: the float's
// bits mapped to a key whose signed order is the float order (-0 < +0), with NaN given the key
// that wins. Integer max/min vectorizes (pmaxsd), no fast-math flag applies to it, and Halide
// still sees max/min, so rfactor and vector partial results keep working on reductions.

/** Key of a float32 whose int32 order is the float order on non-NaN values (-0 below +0); NaN
 * maps to INT32_MAX if `nan_wins_max` (for max), else to INT32_MIN (for min). */
Expr order_key(const Expr &x, bool nan_wins_max) {
    if (const auto c = Halide::Internal::as_const_float(x)) {  // constants: the key itself
        const float f = (float)*c;
        int32_t b;
        std::memcpy(&b, &f, sizeof b);
        if (std::isnan(f)) return nan_wins_max ? Halide::Int(32).max() : Halide::Int(32).min();
        return Expr(b < 0 ? b ^ 0x7fffffff : b);
    }
    const Expr bits = Halide::reinterpret(Halide::Int(32), x);
    const Expr key = bits ^ ((bits >> 31) & 0x7fffffff);  // negative floats: flip the magnitude
    const Expr is_nan = (bits & 0x7fffffff) > 0x7f800000;    // on bits: immune to fast-math flags
    return Halide::select(is_nan, nan_wins_max ? Halide::Int(32).max() : Halide::Int(32).min(), key);
}

/** Inverse of order_key (the NaN keys decode to NaN bit patterns). */
Expr from_order_key(const Expr &k) { return Halide::reinterpret(Halide::Float(32), k ^ ((k >> 31) & 0x7fffffff)); }

/** Whether an order key (NaN wins max) is that of a finite float: strictly between -inf's and +inf's. */
Expr is_finite_key(const Expr &k) { return k > order_key(Expr(-INFINITY), true) && k < order_key(Expr(INFINITY), true); }

Expr ieee_maximum(const Expr &a, const Expr &b) {
    return from_order_key(Halide::max(order_key(a, true), order_key(b, true)));
}
Expr ieee_minimum(const Expr &a, const Expr &b) {
    return from_order_key(Halide::min(order_key(a, false), order_key(b, false)));
}

}  // namespace

std::optional<Halide::Type> storage_type(dsl::DType t) {
    switch (t) {
    case dsl::DType::F32: return Halide::Float(32);
    case dsl::DType::F16: return Halide::Float(16);
    case dsl::DType::BF16: return Halide::BFloat(16);
    default: return std::nullopt;
    }
}

namespace {

[[noreturn]] void refuse(const Graph &g, ValueId v, const std::string &why) {
    throw LoweringError("cannot lower " + dsl::print_node(g, v) + ": " + why);
}

class ExprBuilder {
public:
    ExprBuilder(const Graph &g, const dsl::FusionGroup &group, LoweredGroup &out) : g_(g), out_(out) {
        in_group_.insert(group.nodes.begin(), group.nodes.end());
        mode_ = g.mode;
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

    /** Value `v` at tensor index `idx` (idx[0] is the outermost axis). */
    Expr at(ValueId v, const std::vector<Expr> &idx) {
        const Node &n = g_.node(v);
        if (auto p = params_.find(v); p != params_.end())
            return p->second(reversed(dsl::physical_index(param_dims_.at(v), idx)));
        if (auto w = views_.find(v); w != views_.end()) return w->second(reversed(idx));
        if (!funcs_.count(v) && in_group_.count(v)) define_stateful_func(v);  // lazily, in use order
        if (auto f = funcs_.find(v); f != funcs_.end()) {
            if (auto t = tuple_of_.find(v); t != tuple_of_.end() && f->second.outputs() > 1)
                return f->second(reversed(idx))[t->second];
            return f->second(reversed(idx));
        }
        if (n.type.dtype != dsl::DType::F32 && n.op != Op::Cast) refuse(g_, v, "arithmetic is lowered in f32 only (an f16/bf16 value is stored and cast)");
        auto operand = [&](int i) { return at(n.inputs[i], broadcast_index(n.inputs[i], idx)); };
        switch (n.op) {
        case Op::Constant: {
            if (n.attrs.value.size() == 1) return Expr((float)n.attrs.value[0]);
            return constant_buffer(v)(reversed(idx));
        }
        case Op::Add: return ieee(operand(0) + operand(1));
        case Op::Sub: return ieee(operand(0) - operand(1));
        case Op::Mul: return ieee(operand(0) * operand(1));
        case Op::Div: return ieee(operand(0) / operand(1));
        case Op::Max: return ieee_maximum(operand(0), operand(1));
        case Op::Min: return ieee_minimum(operand(0), operand(1));
        case Op::Gelu: return gelu_expr(operand(0), false, mode_);
        case Op::GeluTanh: return gelu_expr(operand(0), true, mode_);
        case Op::Tanh: return Halide::tanh(operand(0));
        case Op::Exp: return ieee_exp(operand(0));
        case Op::Relu: return ieee_maximum(operand(0), 0.0f);  // relu(NaN) = NaN, relu(-0) = +0
        case Op::Neg: return -operand(0);
        case Op::Abs: return Halide::abs(operand(0));
        case Op::Sqrt: return Halide::sqrt(operand(0));
        case Op::Rsqrt: return 1.0f / Halide::sqrt(operand(0));
        case Op::Cast: {
            if (!storage_type(n.type.dtype)) refuse(g_, v, "only casts between f32, f16 and bf16 are lowered");
            return Halide::cast(*storage_type(n.type.dtype), operand(0));
        }
        case Op::Transpose: {
            std::vector<Expr> in_idx(idx.size());
            for (size_t i = 0; i < idx.size(); i++) in_idx[perm(n)[i]] = idx[i];
            return at(n.inputs[0], in_idx);
        }
        case Op::Reshape: return at(n.inputs[0], reshape_index(v, idx));
        case Op::Copy: return operand(0);  // the layout is the group output's (laid_out)
        default: break;
        }
        refuse(g_, v, std::string("op '") + dsl::to_string(n.op) + "' has no Halide lowering inside a group");
    }

    /** An elementwise arithmetic op as IEEE 754 defines it, outside fast mode. Halide's
     * simplifier treats float arithmetic as real arithmetic: x - x folds to 0 and x * 0 to 0,
     * which are NaN for x = inf or NaN (x - reduce_sum(x) over an axis of extent 1 is x - x once
     * the reduction is inlined). strict_float keeps the op as written, in the simplifier and in
     * LLVM, for this op only: contractions and reductions keep their fast-math code. */
    Expr ieee(const Expr &e) const { return mode_ == dsl::NumericMode::Fast ? e : Halide::strict_float(e); }

    /** Extent of `axis` of value `v` as an Expr (static, or a bound symbol). */
    Expr extent(ValueId v, int axis) {
        const dsl::Dim d = dsl::resolve_dim(g_, g_.node(v).type.dims[axis]);
        if (d.is_static()) return Expr((int)d.size);
        if (d.kind == dsl::Dim::Kind::Symbol) {
            auto s = symbols_.find(d.symbol);
            if (s != symbols_.end()) return s->second;
            refuse(g_, v, "dimension '" + d.symbol + "' is bound by no input of this group");
        }
        refuse(g_, v, "dimension " + std::to_string(axis) + " depends on shape code that did not fold to a constant");
    }

    /** Output Func `name` writing value `v` in its layout: defined over the physical dims (loops
     * named as for a tensor of that rank), each point the value at its logical index; the
     * padding of a last panel is 0 (the value is read at a clamped index there, never out of
     * bounds). */
    Func laid_out(ValueId v, const std::string &name) {
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

    std::vector<Halide::Var> vars(int rank) {
        std::vector<Halide::Var> vs;
        for (int a = rank - 1; a >= 0; a--) vs.push_back(Halide::Var(axis_name(a, rank)));
        return vs;  // Halide order: innermost first
    }


private:
    const Graph &g_;
    LoweredGroup &out_;
    dsl::NumericMode mode_;
    std::set<ValueId> in_group_;
    std::map<ValueId, Halide::ImageParam> params_;
    std::map<ValueId, std::vector<dsl::PhysicalDim>> param_dims_;  // each input's physical dims
    std::map<ValueId, Func> funcs_;
    std::map<ValueId, Func> views_;    // transposed operand -> its view Func "w"
    std::map<ValueId, int> tuple_of_;  // matmul value -> its element in the shared Func
    std::map<ValueId, std::vector<ValueId>> siblings_of_;  // matmul -> the matmuls sharing its Func

    /** Defines the Func of a contraction or reduction node the first time it is used. */
    void define_stateful_func(ValueId v) {
        const Op op = g_.node(v).op;
        if (op == Op::MatMul) define_matmul(siblings_of_.at(v));
        else if (op == Op::Softmax) define_softmax(v);
        else if (dsl::is_reduction(op)) define_reduction(v);
    }
    std::map<std::string, Expr> symbols_;
    std::map<ValueId, Halide::Buffer<float>> constants_;

    static std::vector<Expr> reversed(const std::vector<Expr> &idx) { return {idx.rbegin(), idx.rend()}; }

    /** The value's name as Halide and generated C headers accept it: '.' (legal in TSL names,
     * Halide's separator) and any other non-identifier character become '_', an unnamed value's
     * id gets a letter in front (Halide writes `<name>_buffer` parameters), and the id is
     * appended to any changed name so names stay distinct. */
    std::string halide_name(ValueId v) const {
        std::string s = g_.display_name(v);
        bool changed = false;
        for (char &c : s)
            if (!std::isalnum((unsigned char)c) && c != '_') c = '_', changed = true;
        if (s.empty() || std::isdigit((unsigned char)s[0])) s = "v" + s, changed = true;
        return changed ? s + "_" + std::to_string(v) : s;
    }

    std::string unique_func_name(const std::string &base) {
        std::string name = base;
        for (int i = 1; out_.funcs.count(name); i++) name = base + std::to_string(i);
        return name;
    }

    void add_input(ValueId v) {
        const Node &n = g_.node(v);
        const auto type = storage_type(n.type.dtype);
        if (!type) refuse(g_, v, "only f32, f16 and bf16 tensors are lowered");
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
            if (d.kind != dsl::Dim::Kind::Symbol) continue;
            // The first input naming a symbol binds it; later ones must agree (checked when
            // the pipeline runs, and a constant extent Halide can use while compiling).
            if (auto it = symbols_.find(d.symbol); it != symbols_.end()) p.dim(hd).set_extent(it->second);
            else symbols_[d.symbol] = p.dim(hd).extent();
        }
    }

    const std::vector<int64_t> &perm(const Node &n) {
        static thread_local std::vector<int64_t> reverse;
        if (!n.attrs.perm.empty()) return n.attrs.perm;
        reverse.clear();
        for (int i = n.type.rank() - 1; i >= 0; i--) reverse.push_back(i);
        return reverse;
    }

    /** Numpy broadcasting: map the result index onto operand `in` (aligned at the last axis). */
    std::vector<Expr> broadcast_index(ValueId in, const std::vector<Expr> &idx) {
        const auto &dims = g_.node(in).type.dims;
        const int r = (int)dims.size(), off = (int)idx.size() - r;
        std::vector<Expr> out;
        for (int a = 0; a < r; a++) {
            const dsl::Dim d = dsl::resolve_dim(g_, dims[a]);
            out.push_back(d.is_static() && d.size == 1 ? Expr(0) : idx[a + off]);
        }
        return out;
    }

    std::vector<Expr> reshape_index(ValueId v, const std::vector<Expr> &idx) {
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

    Halide::Buffer<float> constant_buffer(ValueId v) {
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

    void define_matmul(const std::vector<ValueId> &siblings) {
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
        lhs_idx.back() = k;                 // a[..., m, k]
        rhs_idx[rank - 2] = k;              // b[..., k, n]
        std::vector<Expr> init, update;
        std::vector<Halide::Var> args(vs.begin(), vs.end());
        const bool first_contraction = !out_.input_roles.count("x") && !out_.funcs.count("w");
        if (first_contraction) define_operand_view(n.inputs[1]);
        for (size_t i = 0; i < siblings.size(); i++) {
            const Node &s = g_.node(siblings[i]);
            init.push_back(0.0f);
            Expr prod = at(s.inputs[0], broadcast_index(s.inputs[0], lhs_idx)) *
                        at(s.inputs[1], broadcast_index(s.inputs[1], rhs_idx));
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

    /** The right operand read through a 2-D transpose or a widening cast (or both) of a group
     * input: `x @ transpose(w_nk)` (PyTorch's Linear, weights stored [N, K]), `x @ cast(w_bf16)`.
     * It becomes a Func "w" in the [K, N] orientation schedules expect — pure vars _0 (n) and
     * _1 (k), like an ImageParam's wrapper — which the matmul reads; schedules stage and pack
     * it exactly as they pack a w stored [K, N] in f32. */
    void define_operand_view(ValueId rhs) {
        if (g_.node(rhs).type.rank() != 2) return;
        ValueId v = rhs;
        for (; !params_.count(v); v = g_.node(v).inputs[0]) {
            const Node &t = g_.node(v);
            if (!in_group_.count(v)) return;
            const bool transpose = t.op == Op::Transpose && t.type.rank() == 2 &&
                                   (t.attrs.perm.empty() || t.attrs.perm == std::vector<int64_t>{1, 0});
            const bool widen = t.op == Op::Cast && t.type.dtype == dsl::DType::F32;
            if (!transpose && !widen) return;
        }
        // A row-major f32 input is the ImageParam itself (schedules wrap it); any layout or cast
        // on the way gets the view, so schedules always see w as a [K, N] f32 Func.
        const dsl::Layout &layout = g_.node(v).layout;
        if (v == rhs && layout.empty()) return;
        bool through_casts_only = true;
        for (ValueId u = rhs; u != v; u = g_.node(u).inputs[0]) through_casts_only = through_casts_only && g_.node(u).op == Op::Cast;
        if (through_casts_only && layout.order.empty() && layout.has_panels() && layout.panel_axis == 1)
            out_.rhs_panel_width = layout.panel_width;
        Halide::Var n0("_0"), k1("_1");
        Func view("w");
        view(n0, k1) = at(rhs, {Expr(k1), Expr(n0)});  // rhs[k][n], through every layout on the way
        out_.funcs["w"] = view;
        views_[rhs] = view;
    }

    void define_reduction(ValueId v) {
        const Node &n = g_.node(v);
        const ValueId in = n.inputs[0];
        const int rin = g_.node(in).type.rank();
        std::set<int64_t> axes;
        for (int64_t a : n.attrs.axes) axes.insert(a < 0 ? a + rin : a);
        Halide::Region region;
        for (int64_t a : axes) region.push_back({0, extent(in, (int)a)});
        const std::string name = unique_func_name("reduce");
        Halide::RDom r(region, "r");
        Func f(name);
        out_.funcs[name] = f;  // claim the name now: the input may define further reductions
        auto vs = vars(n.type.rank());
        std::vector<Expr> out_idx;
        for (auto it = vs.rbegin(); it != vs.rend(); ++it) out_idx.push_back(*it);
        std::vector<Expr> in_idx;
        int ri = 0, oi = 0;
        for (int a = 0; a < rin; a++) {
            if (axes.count(a)) {
                in_idx.push_back(r[ri++]);
                if (n.attrs.keepdims) oi++;
            } else {
                in_idx.push_back(out_idx[oi++]);
            }
        }
        std::vector<Halide::Var> args(vs.begin(), vs.end());
        Expr x = at(in, in_idx);
        if (n.op == Op::ReduceMax) {
            // On order keys (Int(32)); the value is decoded where it is read. Starts at -inf.
            f(args) = order_key(Expr(-INFINITY), true);
            f(args) = Halide::max(f(args), order_key(x, true));
        } else {
            f(args) = 0.0f;
            f(args) += x;
        }
        // Halide's RDom walks the reduced axes in increasing order, so r alone is the last axis
        // only when that is the sole reduced axis; n is reduced when keepdims kept it as 1.
        const bool last_reduced = axes.count(rin - 1) > 0;
        out_.reduction_axes[name] = {last_reduced && axes.size() == 1,
                                     n.type.rank() >= 1 && !(n.attrs.keepdims && last_reduced),
                                     n.type.rank() >= 1 && !axes.count(0)};
        if (n.op == Op::ReduceMean) {
            Expr count = 1;
            for (int64_t a : axes) count = count * extent(in, (int)a);
            Func mean(unique_func_name(name + "_mean"));
            mean(args) = f(args) / Halide::cast<float>(count);
            funcs_[v] = mean;
        } else if (n.op == Op::ReduceMax) {
            Func value(unique_func_name(name + "_value"));  // inline: decodes the key
            value(args) = from_order_key(f(args));
            funcs_[v] = value;
        } else {
            funcs_[v] = f;
        }
    }

    void define_softmax(ValueId v) {
        const Node &n = g_.node(v);
        const ValueId in = n.inputs[0];
        const int rank = n.type.rank();
        const int axis = (int)(n.attrs.axis < 0 ? n.attrs.axis + rank : n.attrs.axis);
        auto vs = vars(rank);
        std::vector<Halide::Var> args(vs.begin(), vs.end());
        std::vector<Expr> idx;
        for (auto it = vs.rbegin(); it != vs.rend(); ++it) idx.push_back(*it);
        Halide::RDom r(0, extent(in, axis), "r");
        std::vector<Expr> ridx = idx;
        ridx[axis] = r;
        // The reductions are indexed by every axis but `axis` (kept as a unit-extent var).
        Func mx("softmax_max");  // the row maximum's order key (see ieee_maximum)
        mx(args) = order_key(Expr(-INFINITY), true);
        mx(args) = Halide::max(mx(args), order_key(at(in, ridx), true));
        const std::string mx_name = unique_func_name("softmax_max");
        out_.funcs[mx_name] = mx;
        out_.reduction_axes[mx_name] = {axis == rank - 1, axis != rank - 1, axis != 0};
        std::vector<Expr> red_idx(args.begin(), args.end());
        red_idx[rank - 1 - axis] = 0;
        const Expr m_key = mx(red_idx), m = from_order_key(m_key);
        Func sum("softmax_sum");
        sum(args) = 0.0f;
        sum(args) += Halide::exp(at(in, ridx) - m);
        const std::string sum_name = unique_func_name("softmax_sum");
        out_.funcs[sum_name] = sum;
        out_.reduction_axes[sum_name] = {axis == rank - 1, axis != rank - 1, axis != 0};
        Func y(unique_func_name("softmax"));
        // A row whose maximum is NaN or +-inf is NaN throughout, as exp(x - m) / sum computes it
        // in IEEE arithmetic; said explicitly, since Halide's exp need not return NaN for NaN.
        // With a finite maximum every x - m is <= 0 or -inf (exp gives 0) and the sum is >= 1.
        y(args) = Halide::select(is_finite_key(m_key), Halide::exp(at(in, idx) - m) / sum(red_idx),
                                 from_order_key(Halide::Int(32).max()));
        funcs_[v] = y;
    }
};

}  // namespace

LoweredGroup lower_group(const Graph &g, const dsl::FusionGroup &group) {
    LoweredGroup out;
    out.name = group.name;
    out.kind = group.kind;
    out.mode = g.mode;
    for (ValueId v : group.nodes) {
        const Node &n = g.node(v);
        if (!n.is_pure()) refuse(g, v, std::string("effectful op (") + dsl::to_string(n.info().effect) +
                                           ") runs in the interpreter only");
    }
    try {
        ExprBuilder b(g, group, out);
        for (ValueId v : group.outputs)
            if (g.node(v).type.rank() == 0) refuse(g, v, "scalar outputs are not lowered");
        // A matmul group's outputs of one shape (an epilogue whose intermediate is exported too,
        // sibling matmuls both exported) become ONE Tuple Func "y": the matmul schedules address
        // "y", and every output is written in the same loop nest as the tile that computes it.
        bool one_tuple = group.kind == dsl::GroupKind::MatmulEpilogue && group.outputs.size() > 1;
        for (ValueId v : group.outputs)
            one_tuple = one_tuple && dsl::same_type(g, g.node(v).type, g.node(group.outputs[0]).type);
        const size_t funcs = one_tuple ? 1 : group.outputs.size();
        for (size_t i = 0; i < funcs; i++) {
            const int rank = g.node(group.outputs[i]).type.rank();
            const std::string name = funcs == 1 ? "y" : "y" + std::to_string(i);
            Func y(name);
            auto vs = b.vars(rank);
            std::vector<Expr> idx;
            for (auto it = vs.rbegin(); it != vs.rend(); ++it) idx.push_back(*it);
            const std::vector<Halide::Var> args(vs.begin(), vs.end());
            if (one_tuple) {
                std::vector<Expr> elements;
                for (ValueId v : group.outputs) elements.push_back(b.at(v, idx));
                y(args) = Halide::Tuple(elements);
            } else if (const ValueId v = group.outputs[i]; !g.node(v).layout.empty()) {
                if (group.kind == dsl::GroupKind::MatmulEpilogue)
                    refuse(g, v, "a matmul group writes its outputs row-major (its schedules address the loops n and m); "
                                 "give the layout to a value of a separate group");
                y = b.laid_out(v, name);
            } else {
                y(args) = b.at(v, idx);
            }
            out.funcs[name] = y;
            out.output_names.push_back(name);
            out.outputs.push_back(y);
        }
        for (size_t i = 0; i < group.outputs.size(); i++) {
            out.output_values.push_back(group.outputs[i]);
            out.output_func.push_back(one_tuple ? 0 : i);
        }
        // Panel facts hold for a single contraction only: a sibling or a second contraction
        // reads other operands, whose columns past N are not padding.
        if (out.matmul_count != 1) out.rhs_panel_width = 0;
    } catch (const Halide::Error &e) {
        throw LoweringError("Halide rejected the lowering of group '" + group.name + "': " + e.what());
    }
    return out;
}

}  // namespace tessel::lower
