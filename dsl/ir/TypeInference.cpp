#include "dsl/ir/TypeInference.h"

#include <algorithm>
#include <climits>
#include <unordered_map>

#include "dsl/ir/Printer.h"

namespace tessel::dsl {

namespace {

[[noreturn]] void fail(const Node &n, const std::string &msg) { throw TypeError(std::string(to_string(n.op)) + ": " + msg); }

const TensorType &operand(const Graph &g, const Node &n, size_t i) {
    const Node &in = g.node(n.inputs[i]);
    if (!in.has_result()) fail(n, "operand %" + g.display_name(in.id) + " (" + to_string(in.op) + ") has no value");
    return in.type;
}

/** i8 is storage only: the message says how to compute with it. */
std::string storage_hint(DType t) { return t == DType::I8 ? " (i8 is a storage type: cast it to f32 to compute)" : ""; }

void require_float(const Graph &g, const Node &n, const TensorType &t) {
    if (!is_float(t.dtype)) fail(n, "expected a floating-point operand, got " + print_type(g, t) + storage_hint(t.dtype));
}

/** For binary ops: the message names both operands, as every other binary-op error does. */
void require_float(const Graph &g, const Node &n, const TensorType &a, const TensorType &b) {
    if (!is_float(a.dtype))
        fail(n, "expected floating-point operands, got " + print_type(g, a) + " and " + print_type(g, b) + storage_hint(a.dtype));
}

/** numpy broadcasting of two shapes; dims equal or one of them statically 1. */
std::vector<Dim> broadcast(const Graph &g, const Node &n, const TensorType &a, const TensorType &b) {
    int r = std::max(a.rank(), b.rank());
    std::vector<Dim> out(r);
    for (int i = 0; i < r; ++i) {
        int ia = i - (r - a.rank()), ib = i - (r - b.rank());
        if (ia < 0) {
            out[i] = b.dims[ib];
            continue;
        }
        if (ib < 0) {
            out[i] = a.dims[ia];
            continue;
        }
        Dim da = resolve_dim(g, a.dims[ia]), db = resolve_dim(g, b.dims[ib]);
        if (same_dim(g, da, db))
            out[i] = a.dims[ia];
        else if (da.is_static() && da.size == 1)
            out[i] = b.dims[ib];
        else if (db.is_static() && db.size == 1)
            out[i] = a.dims[ia];
        else
            fail(n, "incompatible shapes " + print_type(g, a) + " and " + print_type(g, b) + " (dim " + std::to_string(i) + ")");
    }
    return out;
}

void check_axis(const Graph &g, const Node &n, int64_t axis, const TensorType &t) {
    if (axis < 0 || axis >= t.rank())
        fail(n, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(t.rank()) + " operand " +
                    print_type(g, t));
}

/** A type of node `n` (its written or previous type, and the inferred one): dims refer to scalar
 * integers defined earlier, and every extent that is known here is >= 1 (zero-size tensors are not
 * supported) with at most kMaxElements elements in all. Shape code only known at run time is
 * checked by the interpreter. */
void check_extents(const Graph &g, const Node &n, const TensorType &t) {
    int64_t numel = 1;
    for (const Dim &d : t.dims) {
        if (d.kind == Dim::Kind::Static && d.size < 1)
            fail(n, "extent " + std::to_string(d.size) + " in " + print_type(g, t) +
                        " is not positive (zero-size tensors are not supported)");
        if (d.kind == Dim::Kind::Value) {
            if (!g.contains(d.value)) fail(n, "dimension refers to an undefined value");
            const Node &dn = g.node(d.value);
            if (!dn.has_result() || !dn.type.is_scalar() || !is_int(dn.type.dtype))
                fail(n,
                     "dimension %" + g.display_name(d.value) + " must be a scalar integer value, got " + print_type(g, dn.type));
            if (auto v = constant_shape_value(g, d.value); v && *v < 1)
                fail(n, "dimension %" + g.display_name(d.value) + " (" + shape_code_text(g, d.value) + ") evaluates to " +
                            std::to_string(*v) + "; extents must be positive (zero-size tensors are not supported)");
        }
        const Dim r = resolve_dim(g, d);
        if (r.is_static() && r.size >= 1) {
            if (numel > kMaxElements / r.size) fail(n, print_type(g, t) + " has more than 2^62 elements");
            numel *= r.size;
        }
    }
}

}  // namespace

std::string shape_code_text(const Graph &g, ValueId v) {
    const Node &n = g.node(v);
    if (n.op == Op::Constant && !n.attrs.value.empty()) return print_number(n.attrs.value[0]);
    std::string s = std::string(to_string(n.op)) + "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) s += (i ? ", %" : "%") + g.display_name(n.inputs[i]);
    if (n.op == Op::ShapeOf) s += ", axis=" + std::to_string(n.attrs.axis);
    return s + ")";
}

std::optional<int64_t> eval_shape_op(Op op, int64_t a, int64_t b, DType dtype, std::string *error) {
    const char *sym = op == Op::ShapeAdd        ? " + "
                      : op == Op::ShapeSub      ? " - "
                      : op == Op::ShapeMul      ? " * "
                      : op == Op::ShapeMod      ? " mod "
                      : op == Op::ShapeFloorDiv ? " floordiv "
                                                : ", ";
    auto fail = [&](const std::string &why) -> std::optional<int64_t> {
        if (error) *error = std::string(to_string(op)) + ": " + std::to_string(a) + sym + std::to_string(b) + " " + why;
        return std::nullopt;
    };
    int64_t r = 0;
    switch (op) {
    case Op::ShapeAdd:
        if (__builtin_add_overflow(a, b, &r)) return fail("overflows 64 bits");
        break;
    case Op::ShapeSub:
        if (__builtin_sub_overflow(a, b, &r)) return fail("overflows 64 bits");
        break;
    case Op::ShapeMul:
        if (__builtin_mul_overflow(a, b, &r)) return fail("overflows 64 bits");
        break;
    case Op::ShapeMin: r = std::min(a, b); break;
    case Op::ShapeMax: r = std::max(a, b); break;
    case Op::ShapeFloorDiv: {
        if (b == 0) return fail("divides by zero");
        if (a == INT64_MIN && b == -1) return fail("overflows 64 bits");
        int64_t q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        r = q;
        break;
    }
    case Op::ShapeMod: {
        if (b == 0) return fail("divides by zero");
        if (b == -1) {
            r = 0;
            break;
        }
        int64_t m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) m += b;
        r = m;
        break;
    }
    default: return fail("is not shape arithmetic");
    }
    if (dtype == DType::I32 && (r < INT32_MIN || r > INT32_MAX)) return fail("= " + std::to_string(r) + " overflows i32");
    if (r < -kMaxExactInteger || r > kMaxExactInteger)
        return fail("= " + std::to_string(r) +
                    " is out of range (shape values are limited to 2^53 = " + std::to_string(kMaxExactInteger) + ")");
    return r;
}

namespace {

/** Shape value of a node that is not shape arithmetic (constant, shape_of), else nullopt. */
std::optional<int64_t> leaf_shape_value(const Graph &g, const Node &n) {
    if (n.op == Op::Constant && n.attrs.value.size() == 1) {
        const double v = n.attrs.value[0];
        if (!(v >= -(double)kMaxExactInteger && v <= (double)kMaxExactInteger)) return std::nullopt;
        return (int64_t)v;
    }
    if (n.op == Op::ShapeOf && n.inputs.size() == 1 && g.contains(n.inputs[0])) {
        const TensorType &t = g.node(n.inputs[0]).type;
        if (n.attrs.axis < 0 || n.attrs.axis >= t.rank()) return std::nullopt;
        Dim d = resolve_dim(g, t.dims[(size_t)n.attrs.axis]);
        if (d.is_static()) return d.size;
    }
    return std::nullopt;
}

bool is_shape_scalar(const Node &n) { return n.has_result() && n.type.is_scalar() && is_int(n.type.dtype); }

}  // namespace

std::optional<int64_t> constant_shape_value(const Graph &g, ValueId v) {
    if (!g.contains(v)) return std::nullopt;
    const Node &root = g.node(v);
    if (!is_shape_scalar(root)) return std::nullopt;
    if (!is_shape_arith(root.op)) return leaf_shape_value(g, root);
    // Shape arithmetic: a post-order walk with an explicit stack and a memo, so long chains do
    // not recurse and shared subexpressions are evaluated once.
    std::unordered_map<ValueId, std::optional<int64_t>> memo;
    std::vector<std::pair<ValueId, bool>> stack{{v, false}};
    while (!stack.empty()) {
        auto [id, expanded] = stack.back();
        if (memo.count(id)) {
            stack.pop_back();
            continue;
        }
        const Node *n = g.contains(id) ? &g.node(id) : nullptr;
        if (!n || !is_shape_scalar(*n) || !is_shape_arith(n->op) || n->inputs.size() != 2) {
            memo[id] = n && is_shape_scalar(*n) ? leaf_shape_value(g, *n) : std::nullopt;
            stack.pop_back();
            continue;
        }
        if (!expanded) {
            stack.back().second = true;
            for (ValueId in : n->inputs)
                if (!memo.count(in)) stack.push_back({in, false});
            continue;
        }
        stack.pop_back();
        const std::optional<int64_t> a = memo[n->inputs[0]], b = memo[n->inputs[1]];  // copies: memo may rehash
        memo[id] = a && b ? eval_shape_op(n->op, *a, *b, n->type.dtype) : std::nullopt;
    }
    return memo[v];
}

Dim resolve_dim(const Graph &g, const Dim &d) {
    if (d.kind != Dim::Kind::Value || !g.contains(d.value)) return d;
    if (auto c = constant_shape_value(g, d.value)) return Dim::fixed(*c);
    const Node &n = g.node(d.value);
    if (n.op == Op::ShapeOf && g.contains(n.inputs[0])) {
        const TensorType &t = g.node(n.inputs[0]).type;
        if (n.attrs.axis >= 0 && n.attrs.axis < t.rank()) return resolve_dim(g, t.dims[(size_t)n.attrs.axis]);
    }
    return d;
}

bool same_dim(const Graph &g, const Dim &a, const Dim &b) { return resolve_dim(g, a) == resolve_dim(g, b); }

bool same_type(const Graph &g, const TensorType &a, const TensorType &b) {
    if (a.dtype != b.dtype || a.rank() != b.rank()) return false;
    for (int i = 0; i < a.rank(); ++i)
        if (!same_dim(g, a.dims[i], b.dims[i])) return false;
    return true;
}

namespace {

/** pack_int4, unpack_int4, repeat_interleave: the annotated result keeps the operand's rank and
 * every dim but `axis`, where the packed (or grouped) side's extent is the other side's divided by
 * the group (2 for int4 pairs), rounded up: checked here where both extents are known, else
 * when they are (the interpreter; a kernel's bounds check). */
TensorType grouped_axis_type(const Graph &g, const Node &n) {
    const TensorType &a = operand(g, n, 0);
    check_axis(g, n, n.attrs.axis, a);
    const int axis = (int)n.attrs.axis;
    const std::string both = "operand " + print_type(g, a) + ", result " + print_type(g, n.type);
    const bool int4 = n.op != Op::RepeatInterleave;
    if (int4 && (a.dtype != DType::I8 || n.type.dtype != DType::I8))
        fail(n, std::string(to_string(n.op)) + " takes and gives i8 (int4 values, two per byte when packed): " + both);
    if (!int4 && a.dtype != n.type.dtype) fail(n, "repeat_interleave keeps the dtype: " + both);
    if (a.rank() != n.type.rank()) fail(n, std::string(to_string(n.op)) + " keeps the rank: " + both);
    for (int i = 0; i < a.rank(); ++i)
        if (i != axis && !same_dim(g, a.dims[(size_t)i], n.type.dims[(size_t)i]))
            fail(n, std::string(to_string(n.op)) + " along axis " + std::to_string(axis) + " keeps dim " + std::to_string(i) +
                        ": " + both);
    const Dim from = resolve_dim(g, a.dims[(size_t)axis]), to = resolve_dim(g, n.type.dims[(size_t)axis]);
    if (from.is_static() && to.is_static())
        if (const std::string why = grouped_extent_mismatch(n, from.size, to.size); !why.empty()) fail(n, why + ": " + both);
    return n.type;
}

/** The result type from the operands' types and the attributes, before its extents are checked. */

}  // namespace

std::string grouped_extent_mismatch(const Node &n, int64_t operand_extent, int64_t result_extent) {
    const int64_t group = n.op == Op::RepeatInterleave ? n.attrs.repeats : 2;
    // pack_int4's operand has the elements and its result the groups; the other two the reverse.
    const int64_t whole = n.op == Op::PackInt4 ? operand_extent : result_extent;
    const int64_t groups = n.op == Op::PackInt4 ? result_extent : operand_extent;
    if ((whole + group - 1) / group == groups) return "";
    return std::string(to_string(n.op)) + ": " + std::to_string(whole) + " elements along axis " + std::to_string(n.attrs.axis) +
           " make " + std::to_string((whole + group - 1) / group) + " groups of " + std::to_string(group) + ", not " +
           std::to_string(groups);
}

namespace {

TensorType infer_result_type(const Graph &g, const Node &n) {
    switch (n.op) {
    case Op::Input:
    case Op::RandomUniform:
    case Op::RandomNormal:
    case Op::StateRead:
        if (n.op == Op::StateRead && n.attrs.var.empty()) fail(n, "needs var=\"name\"");
        if ((n.op == Op::RandomUniform || n.op == Op::RandomNormal) && !is_float(n.type.dtype))
            fail(n, "random draws produce floating-point values, not " + print_type(g, n.type));
        return n.type;
    case Op::CausalMask:
        if (!is_float(n.type.dtype) || n.type.rank() < 2)
            fail(n, "a causal mask is a float tensor of rank >= 2 ([..., S, L]), not " + print_type(g, n.type));
        return n.type;
    case Op::Constant: {
        size_t k = n.attrs.value.size();
        if (k == 0) fail(n, "constant needs a value");
        if (k > 1) {
            if (!n.type.all_static()) fail(n, "a dense constant needs a static shape, got " + print_type(g, n.type));
            if ((int64_t)k != n.type.static_numel())
                fail(n, "constant has " + std::to_string(k) + " values but type " + print_type(g, n.type) + " holds " +
                            std::to_string(n.type.static_numel()));
        }
        return n.type;
    }
    case Op::ShapeAdd:
    case Op::ShapeSub:
    case Op::ShapeMul:
    case Op::ShapeFloorDiv:
    case Op::ShapeMod:
    case Op::ShapeMin:
    case Op::ShapeMax: {
        const TensorType &a = operand(g, n, 0), &b = operand(g, n, 1);
        if (!a.is_scalar() || !b.is_scalar() || !is_int(a.dtype) || a.dtype != b.dtype)
            fail(n, "expected two scalar integers of one dtype, got " + print_type(g, a) + " and " + print_type(g, b));
        return a;
    }
    case Op::ShapeOf: {
        const TensorType &a = operand(g, n, 0);
        check_axis(g, n, n.attrs.axis, a);
        return TensorType{DType::I64, {}};
    }
    case Op::MatMul: {
        const TensorType &a = operand(g, n, 0), &b = operand(g, n, 1);
        require_float(g, n, a, b);
        if (a.dtype != b.dtype) fail(n, "dtype mismatch " + print_type(g, a) + " and " + print_type(g, b));
        if (a.rank() < 2 || b.rank() < 2)
            fail(n, "operands must have rank >= 2, got " + print_type(g, a) + " and " + print_type(g, b));
        if (!same_dim(g, a.dims[a.rank() - 1], b.dims[b.rank() - 2]))
            fail(n, "contraction dims differ: " + print_type(g, a) + " and " + print_type(g, b));
        TensorType ba{a.dtype, std::vector<Dim>(a.dims.begin(), a.dims.end() - 2)};
        TensorType bb{b.dtype, std::vector<Dim>(b.dims.begin(), b.dims.end() - 2)};
        TensorType r{a.dtype, broadcast(g, n, ba, bb)};
        r.dims.push_back(a.dims[a.rank() - 2]);
        r.dims.push_back(b.dims[b.rank() - 1]);
        return r;
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Max:
    case Op::Min:
    case Op::Less:
    case Op::LessEqual:
    case Op::Greater:
    case Op::GreaterEqual:
    case Op::Equal:
    case Op::NotEqual: {
        const TensorType &a = operand(g, n, 0), &b = operand(g, n, 1);
        require_float(g, n, a, b);
        if (a.dtype != b.dtype) fail(n, "dtype mismatch " + print_type(g, a) + " and " + print_type(g, b));
        return TensorType{a.dtype, broadcast(g, n, a, b)};
    }
    case Op::Where: {
        const TensorType &c = operand(g, n, 0), &a = operand(g, n, 1), &b = operand(g, n, 2);
        require_float(g, n, a, b);
        require_float(g, n, c);
        if (a.dtype != b.dtype || c.dtype != a.dtype)
            fail(n, "dtype mismatch: condition " + print_type(g, c) + ", values " + print_type(g, a) + " and " +
                        print_type(g, b) + " (a condition is a mask of the values' dtype)");
        const TensorType ab{a.dtype, broadcast(g, n, a, b)};
        return TensorType{a.dtype, broadcast(g, n, c, ab)};
    }
    case Op::Gelu:
    case Op::GeluTanh:
    case Op::Tanh:
    case Op::Exp:
    case Op::Relu:
    case Op::Neg:
    case Op::Abs:
    case Op::Sqrt:
    case Op::Rsqrt:
    case Op::Log:
    case Op::Sigmoid:
    case Op::Silu:
    case Op::Sin:
    case Op::Cos: {
        const TensorType &a = operand(g, n, 0);
        require_float(g, n, a);
        return a;
    }
    case Op::Copy: {
        const TensorType &a = operand(g, n, 0);
        if (!is_tensor_data(a.dtype)) fail(n, "expected a tensor operand, got " + print_type(g, a));
        return a;
    }
    case Op::Cast: {
        const TensorType &a = operand(g, n, 0);
        TensorType want{n.type.dtype, a.dims};
        if (!same_type(g, want, n.type))
            fail(n, "cast keeps the shape: operand " + print_type(g, a) + ", result " + print_type(g, n.type));
        return n.type;
    }
    case Op::Transpose: {
        const TensorType &a = operand(g, n, 0);
        const auto &p = n.attrs.perm;
        std::vector<char> seen(a.rank(), 0);
        bool ok = (int)p.size() == a.rank();
        for (int64_t i : p) {
            if (!ok || i < 0 || i >= a.rank() || seen[i]) {
                ok = false;
                break;
            }
            seen[i] = 1;
        }
        if (!ok)
            fail(
                n, "perm " +
                       [&] {
                           std::string s = "[";
                           for (size_t i = 0; i < p.size(); ++i) s += (i ? ", " : "") + std::to_string(p[i]);
                           return s + "]";
                       }() +
                       " is not a permutation of the axes of " + print_type(g, a));
        TensorType r{a.dtype, {}};
        for (int64_t i : p) r.dims.push_back(a.dims[(size_t)i]);
        return r;
    }
    case Op::Slice: {
        const TensorType &a = operand(g, n, 0);
        check_axis(g, n, n.attrs.axis, a);
        const int axis = (int)n.attrs.axis;
        const std::string both = "operand " + print_type(g, a) + ", result " + print_type(g, n.type);
        if (a.dtype != n.type.dtype || a.rank() != n.type.rank()) fail(n, "slice keeps the dtype and rank: " + both);
        for (int i = 0; i < a.rank(); ++i)
            if (i != axis && !same_dim(g, a.dims[(size_t)i], n.type.dims[(size_t)i]))
                fail(n, "slice along axis " + std::to_string(axis) + " keeps dim " + std::to_string(i) + ": " + both);
        if (n.attrs.start < 0) fail(n, "start=" + std::to_string(n.attrs.start) + " is negative");
        const Dim extent = resolve_dim(g, a.dims[(size_t)axis]), size = resolve_dim(g, n.type.dims[(size_t)axis]);
        if (extent.is_static() && size.is_static() && n.attrs.start + size.size > extent.size)
            fail(n, "start=" + std::to_string(n.attrs.start) + " plus the result's extent " + std::to_string(size.size) +
                        " runs past the operand's extent " + std::to_string(extent.size) + " along axis " + std::to_string(axis) +
                        ": " + both);
        return n.type;
    }
    case Op::PackInt4:
    case Op::UnpackInt4:
    case Op::RepeatInterleave: return grouped_axis_type(g, n);
    case Op::Concat: {
        const TensorType &a = operand(g, n, 0), &b = operand(g, n, 1);
        check_axis(g, n, n.attrs.axis, a);
        const int axis = (int)n.attrs.axis;
        const std::string both = print_type(g, a) + " and " + print_type(g, b);
        if (a.dtype != b.dtype || a.rank() != b.rank()) fail(n, "concat needs one dtype and rank: " + both);
        for (int i = 0; i < a.rank(); ++i)
            if (i != axis && !same_dim(g, a.dims[(size_t)i], b.dims[(size_t)i]))
                fail(n, "concat along axis " + std::to_string(axis) + " needs dim " + std::to_string(i) + " equal: " + both);
        const Dim ea = resolve_dim(g, a.dims[(size_t)axis]), eb = resolve_dim(g, b.dims[(size_t)axis]);
        if (!ea.is_static() || !eb.is_static())
            fail(n, "concat along axis " + std::to_string(axis) + " needs static extents there: " + both);
        TensorType r = a;
        r.dims[(size_t)axis] = Dim::fixed(ea.size + eb.size);
        return r;
    }
    case Op::UpdateTail: {
        const TensorType &c = operand(g, n, 0), &v = operand(g, n, 1);
        check_axis(g, n, n.attrs.axis, c);
        const int axis = (int)n.attrs.axis;
        const std::string both = "cache " + print_type(g, c) + ", values " + print_type(g, v);
        if (c.dtype != v.dtype || c.rank() != v.rank()) fail(n, "update_tail needs one dtype and rank: " + both);
        for (int i = 0; i < c.rank(); ++i)
            if (i != axis && !same_dim(g, c.dims[(size_t)i], v.dims[(size_t)i]))
                fail(n, "update_tail along axis " + std::to_string(axis) + " needs dim " + std::to_string(i) + " equal: " + both);
        const Dim ec = resolve_dim(g, c.dims[(size_t)axis]), ev = resolve_dim(g, v.dims[(size_t)axis]);
        if (ec.is_static() && ev.is_static() && ev.size > ec.size)
            fail(n, "update_tail writes " + std::to_string(ev.size) + " positions into a cache of " + std::to_string(ec.size) +
                        " along axis " + std::to_string(axis) + ": " + both);
        return c;
    }
    case Op::Reshape: {
        const TensorType &a = operand(g, n, 0);
        if (a.dtype != n.type.dtype)
            fail(n, "reshape keeps the dtype: operand " + print_type(g, a) + ", result " + print_type(g, n.type));
        TensorType ra = a, rn = n.type;
        for (Dim &d : ra.dims) d = resolve_dim(g, d);
        for (Dim &d : rn.dims) d = resolve_dim(g, d);
        if (ra.all_static() && rn.all_static() && ra.static_numel() != rn.static_numel())
            fail(n, "element counts differ: " + print_type(g, a) + " and " + print_type(g, n.type));
        return n.type;
    }
    case Op::ReduceSum:
    case Op::ReduceMax:
    case Op::ReduceMean: {
        const TensorType &a = operand(g, n, 0);
        require_float(g, n, a);
        if (n.attrs.axes.empty()) fail(n, "axes must not be empty (operand " + print_type(g, a) + ")");
        std::vector<char> red(a.rank(), 0);
        for (int64_t ax : n.attrs.axes) {
            check_axis(g, n, ax, a);
            if (red[ax]) fail(n, "axis " + std::to_string(ax) + " listed twice (operand " + print_type(g, a) + ")");
            red[ax] = 1;
        }
        TensorType r{a.dtype, {}};
        for (int i = 0; i < a.rank(); ++i) {
            if (!red[i])
                r.dims.push_back(a.dims[i]);
            else if (n.attrs.keepdims)
                r.dims.push_back(Dim::fixed(1));
        }
        return r;
    }
    case Op::Softmax: {
        const TensorType &a = operand(g, n, 0);
        require_float(g, n, a);
        check_axis(g, n, n.attrs.axis, a);
        return a;
    }
    case Op::StateWrite:
    case Op::Print:
    case Op::Assert:
        operand(g, n, 0);
        if (n.op != Op::Print && n.op != Op::Assert && n.attrs.var.empty()) fail(n, "needs var=\"name\"");
        return TensorType{};
    }
    fail(n, "unknown op");
}

}  // namespace

TensorType infer_type(const Graph &g, const Node &n) {
    const OpInfo &info = n.info();
    if ((int)n.inputs.size() != info.arity)
        fail(n, "expected " + std::to_string(info.arity) + " operand(s), got " + std::to_string(n.inputs.size()));
    check_extents(g, n, n.type);
    // A result can outgrow the limit its operands meet (matmul [2^59, 8] x [8, 16]).
    TensorType result = infer_result_type(g, n);
    check_extents(g, n, result);
    return result;
}

Node make_node(const Graph &g, Op op, std::vector<ValueId> inputs, Attrs attrs, std::optional<TensorType> type) {
    Node n = Node::make(op, std::move(inputs), type ? *type : TensorType{}, {}, std::move(attrs));
    n.type = infer_type(g, n);
    return n;
}

}  // namespace tessel::dsl
