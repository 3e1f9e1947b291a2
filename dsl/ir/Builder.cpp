/** Builder map: GraphBuilder (checks, names, add_op: every node goes through make_node, so types
 * and type errors are infer_type's) -> leaf constructors (input, constants, effects that make a
 * value) -> operators (binary(): shape code or elementwise, as Parser::binary chooses) -> free
 * functions, one node each. */
#include "dsl/ir/Builder.h"

#include <cctype>
#include <cmath>

#include "dsl/ir/Numerics.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "dsl/ir/Verifier.h"

namespace tessel::dsl {

namespace {

/** What the lexer accepts after '%': letters, digits, '_' and '.'. */
bool is_value_name(const std::string &s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!std::isalnum((unsigned char)c) && c != '_' && c != '.') return false;
    return true;
}

/** What the lexer reads as an identifier (graph names, symbols): a value name not starting with
 * a digit or '.'. */
bool is_identifier(const std::string &s) { return is_value_name(s) && (std::isalpha((unsigned char)s[0]) || s[0] == '_'); }

bool is_shape_scalar(const TensorType &t) { return t.is_scalar() && is_int(t.dtype); }

/** The builder of a binary op's operands: a's, or b's when a is undefined (check_operand then
 * reports a). */
GraphBuilder &builder_of(const Value &a, const Value &b, Op op) {
    GraphBuilder *g = a.defined() ? a.builder() : b.builder();
    if (!g)
        throw UserError(std::string(to_string(op)) + ": operands are undefined Values " +
                        "(default-constructed, never assigned from a builder)");
    return *g;
}

GraphBuilder &builder_of(const Value &v, Op op) { return builder_of(v, v, op); }

Value unary(Op op, const Value &v, Attrs attrs = {}) { return builder_of(v, op).add_op(op, {v}, std::move(attrs)); }

/** The parser's infix rule: shape code when both sides are rank-0 integers. */
Value binary(Op elementwise, Op shape, const Value &a, const Value &b) {
    GraphBuilder &g = builder_of(a, b, elementwise);
    bool is_shape =
        a.defined() && b.defined() && a.builder() == b.builder() && is_shape_scalar(a.type()) && is_shape_scalar(b.type());
    return g.add_op(is_shape ? shape : elementwise, {a, b});
}

/** A number on the left or right of an op takes the dtype of the Value beside it. */
Value literal_for(const Value &like, double v, Op op) { return builder_of(like, op).literal(v, like); }

Value reduce(Op op, const Value &v, const std::vector<int64_t> &axes, bool keepdims) {
    Attrs a;
    a.axes = axes;
    a.keepdims = keepdims;
    return unary(op, v, std::move(a));
}

void effect(Op op, const Value &v, Attrs attrs) { unary(op, v, std::move(attrs)); }

}  // namespace

// ---- Value ----

const TensorType &Value::type() const {
    if (!builder_) throw UserError("type of an undefined Value");
    return builder_->node(*this).type;
}

std::string Value::name() const {
    if (!builder_) throw UserError("name of an undefined Value");
    builder_->node(*this);  // checks the builder is still usable
    return builder_->graph_.display_name(id_);
}

Value Value::named(const std::string &name) const {
    if (!builder_) throw UserError("cannot name an undefined Value %" + name);
    return builder_->name(*this, name);
}

// ---- GraphBuilder: checks and names ----

GraphBuilder::GraphBuilder(const std::string &name, NumericMode mode) {
    if (!is_identifier(name))
        throw UserError("GraphBuilder: graph name '" + name +
                        "' is not an identifier (a letter or '_', then letters, digits, '_', '.')");
    name_ = graph_.name = name;
    graph_.mode = mode;
}

void GraphBuilder::check_usable(const std::string &what) const {
    if (built_) throw UserError(what + ": GraphBuilder '" + name_ + "' was already finished by build(); start a new builder");
}

void GraphBuilder::check_operand(const std::string &what, const Value &v) const {
    if (!v.defined())
        throw UserError(what +
                        ": operand is an undefined Value (default-constructed, never "
                        "assigned from a builder)");
    if (v.builder() != this)
        throw UserError(what + ": operand %" + v.builder()->graph_.display_name(v.id()) + " belongs to GraphBuilder '" +
                        v.builder()->name_ + "', not to GraphBuilder '" + name_ +
                        "'; a Value can only be used in the builder that made it");
}

Value GraphBuilder::with_layout(const Value &v, const Layout &layout) {
    check_operand("copy", v);
    if (const std::string bad = check_layout(layout, v.type().rank()); !bad.empty())
        throw UserError("copy %" + std::to_string(v.id()) + ": layout \"" + to_string(layout) + "\": " + bad);
    graph_.node(v.id()).layout = layout.canonical();
    return v;
}

const Node &GraphBuilder::node(const Value &v) const {
    check_usable("value %" + std::to_string(v.id()));
    check_operand("value", v);
    return graph_.node(v.id());
}

Dim GraphBuilder::symbol(const std::string &name) const {
    if (!is_identifier(name))
        throw UserError("symbol '" + name + "' is not an identifier (a letter or '_', then letters, digits, '_', '.')");
    return Dim::sym(name);
}

TensorType GraphBuilder::make_type(DType dtype, const Shape &dims) const {
    TensorType t{dtype, {}};
    for (const DimArg &d : dims) {
        const Dim &dim = d.dim();
        switch (dim.kind) {
        case Dim::Kind::Static:
            // As in the text form: zero-size tensors are not supported.
            if (dim.size < 1 || dim.size > kMaxElements)
                throw UserError("extent " + std::to_string(dim.size) +
                                (dim.size < 1 ? " is not positive (extents must be >= 1; zero-size tensors are "
                                                "not supported)"
                                              : " is too large (at most 2^62)"));
            break;
        case Dim::Kind::Symbol: symbol(dim.symbol); break;
        case Dim::Kind::Value: check_operand("dimension", d.value()); break;
        }
        t.dims.push_back(dim);
    }
    return t;
}

Value GraphBuilder::name(const Value &v, const std::string &name) {
    check_usable("name %" + name);
    check_operand("name %" + name, v);
    Node &n = graph_.node(v.id());
    if (!n.has_result()) throw UserError("name %" + name + ": " + to_string(n.op) + " has no result to name");
    if (!is_value_name(name)) throw UserError("name %" + name + " is not a value name (letters, digits, '_', '.')");
    if (user_named_[v.id()]) {
        if (n.name == name) return v;
        throw UserError("%" + n.name + " cannot also be named %" + name + ": a value has one name, as in the text form");
    }
    ValueId other = graph_.find(name);
    if (other != kNoValue && other != v.id()) {
        if (user_named_[other]) throw UserError("redefinition of %" + name);
        // `name` is how the unnamed value `other` prints; give it the parser's spelling instead.
        graph_.respell_unnamed(other);
    }
    graph_.set_name(v.id(), name);
    user_named_[v.id()] = 1;
    return v;
}

// ---- GraphBuilder: nodes ----

Value GraphBuilder::add_op(Op op, const std::vector<Value> &operands, Attrs attrs, std::optional<TensorType> type) {
    check_usable(to_string(op));
    std::vector<ValueId> ins;
    for (const Value &v : operands) {
        check_operand(to_string(op), v);
        ins.push_back(v.id());
    }
    // Throws TypeError naming the op and the types; nothing has been added yet.
    Node n = make_node(graph_, op, std::move(ins), std::move(attrs), std::move(type));
    if (n.op == Op::Constant)
        for (double &x : n.attrs.value) {
            if (is_int(n.type.dtype) && (std::isnan(x) || std::isinf(x) || std::trunc(x) != x))
                throw TypeError("constant: value " + print_number(x) + " is not an integer, but type is " +
                                print_type(graph_, n.type));
            x = round_to(n.type.dtype, x);
        }
    ValueId id = graph_.add(std::move(n));
    user_named_.resize(id + 1, 0);
    return Value(this, id);
}

Value GraphBuilder::input(const std::string &name, DType dtype, const Shape &dims, const Layout &layout) {
    check_usable("input %" + name);
    if (!is_value_name(name))  // before adding, so a bad name leaves no unnamed input behind
        throw UserError("name %" + name + " is not a value name (letters, digits, '_', '.')");
    ValueId taken = graph_.find(name);
    if (taken != kNoValue && user_named_[taken]) throw UserError("redefinition of %" + name);
    if (const std::string bad = check_layout(layout, (int)dims.size()); !bad.empty())
        throw UserError("input %" + name + ": layout \"" + to_string(layout) + "\": " + bad);
    Value v = add_op(Op::Input, {}, {}, make_type(dtype, dims)).named(name);
    graph_.node(v.id()).layout = layout.canonical();
    return v;
}

Value GraphBuilder::weight(const std::string &name, DType dtype, const Shape &dims, const Layout &layout) {
    Value v = input(name, dtype, dims, layout);
    graph_.node(v.id()).attrs.weight = true;
    return v;
}

Value GraphBuilder::constant(double value, DType dtype, const Shape &dims) {
    return constant(std::vector<double>{value}, dtype, dims);
}

Value GraphBuilder::constant(const std::vector<double> &values, DType dtype, const Shape &dims) {
    Attrs a;
    a.value = values;
    return add_op(Op::Constant, {}, std::move(a), make_type(dtype, dims));
}

Value GraphBuilder::shape_const(int64_t value, DType dtype) {
    if (!is_int(dtype)) throw TypeError(std::string("constant: shape code is integer, not ") + to_string(dtype));
    return constant((double)value, dtype);
}

Value GraphBuilder::literal(double value, const Value &like) {
    check_operand("literal " + print_number(value), like);
    return constant(value, like.dtype());
}

Value GraphBuilder::causal_mask(DType dtype, const Shape &dims) {
    return add_op(Op::CausalMask, {}, Attrs{}, make_type(dtype, dims));
}

Value GraphBuilder::random_uniform(DType dtype, const Shape &dims, uint64_t seed) {
    Attrs a;
    a.seed = seed;
    return add_op(Op::RandomUniform, {}, std::move(a), make_type(dtype, dims));
}

Value GraphBuilder::random_normal(DType dtype, const Shape &dims, uint64_t seed) {
    Attrs a;
    a.seed = seed;
    return add_op(Op::RandomNormal, {}, std::move(a), make_type(dtype, dims));
}

Value GraphBuilder::state_read(const std::string &var, DType dtype, const Shape &dims) {
    Attrs a;
    a.var = var;
    return add_op(Op::StateRead, {}, std::move(a), make_type(dtype, dims));
}

void GraphBuilder::output(const Value &v) {
    check_usable("output");
    check_operand("output", v);
    if (!graph_.node(v.id()).has_result())
        throw UserError(std::string("output: ") + to_string(graph_.node(v.id()).op) + " has no result");
    graph_.outputs.push_back(v.id());
}

void GraphBuilder::output(const std::string &name, const Value &v) {
    this->name(v, name);
    output(v);
}

const Graph &GraphBuilder::graph() {
    check_usable("graph()");
    verify_or_throw(graph_, "GraphBuilder '" + graph_.name + "'");
    return graph_;
}

Graph GraphBuilder::build() && {
    check_usable("build()");
    if (graph_.outputs.empty())
        throw UserError("GraphBuilder '" + graph_.name +
                        "': build(): the graph has no output (call output(...)), as the text form requires");
    verify_or_throw(graph_, "GraphBuilder '" + graph_.name + "'");
    built_ = true;
    return std::move(graph_);
}

// ---- Operators ----

Value operator+(const Value &a, const Value &b) { return binary(Op::Add, Op::ShapeAdd, a, b); }
Value operator-(const Value &a, const Value &b) { return binary(Op::Sub, Op::ShapeSub, a, b); }
Value operator*(const Value &a, const Value &b) { return binary(Op::Mul, Op::ShapeMul, a, b); }
Value operator/(const Value &a, const Value &b) { return binary(Op::Div, Op::ShapeFloorDiv, a, b); }
Value operator+(const Value &a, double b) { return a + literal_for(a, b, Op::Add); }
Value operator-(const Value &a, double b) { return a - literal_for(a, b, Op::Sub); }
Value operator*(const Value &a, double b) { return a * literal_for(a, b, Op::Mul); }
Value operator/(const Value &a, double b) { return a / literal_for(a, b, Op::Div); }
Value operator+(double a, const Value &b) { return literal_for(b, a, Op::Add) + b; }
Value operator-(double a, const Value &b) { return literal_for(b, a, Op::Sub) - b; }
Value operator*(double a, const Value &b) { return literal_for(b, a, Op::Mul) * b; }
Value operator/(double a, const Value &b) { return literal_for(b, a, Op::Div) / b; }
Value operator-(const Value &a) { return unary(Op::Neg, a); }

Value max(const Value &a, const Value &b) { return binary(Op::Max, Op::ShapeMax, a, b); }
Value min(const Value &a, const Value &b) { return binary(Op::Min, Op::ShapeMin, a, b); }
Value max(const Value &a, double b) { return max(a, literal_for(a, b, Op::Max)); }
Value min(const Value &a, double b) { return min(a, literal_for(a, b, Op::Min)); }

Value floordiv(const Value &a, const Value &b) { return builder_of(a, b, Op::ShapeFloorDiv).add_op(Op::ShapeFloorDiv, {a, b}); }
Value mod(const Value &a, const Value &b) { return builder_of(a, b, Op::ShapeMod).add_op(Op::ShapeMod, {a, b}); }
Value floordiv(const Value &a, int64_t b) { return floordiv(a, literal_for(a, (double)b, Op::ShapeFloorDiv)); }
Value mod(const Value &a, int64_t b) { return mod(a, literal_for(a, (double)b, Op::ShapeMod)); }

// ---- Tensor ops ----

Value matmul(const Value &a, const Value &b) { return builder_of(a, b, Op::MatMul).add_op(Op::MatMul, {a, b}); }
Value gelu(const Value &v) { return unary(Op::Gelu, v); }
Value gelu_tanh(const Value &v) { return unary(Op::GeluTanh, v); }
Value tanh(const Value &v) { return unary(Op::Tanh, v); }
Value exp(const Value &v) { return unary(Op::Exp, v); }
Value relu(const Value &v) { return unary(Op::Relu, v); }
Value neg(const Value &v) { return unary(Op::Neg, v); }
Value abs(const Value &v) { return unary(Op::Abs, v); }
Value sqrt(const Value &v) { return unary(Op::Sqrt, v); }
Value rsqrt(const Value &v) { return unary(Op::Rsqrt, v); }
Value log(const Value &v) { return unary(Op::Log, v); }
Value sigmoid(const Value &v) { return unary(Op::Sigmoid, v); }
Value silu(const Value &v) { return unary(Op::Silu, v); }
Value sin(const Value &v) { return unary(Op::Sin, v); }
Value cos(const Value &v) { return unary(Op::Cos, v); }

#define TESSEL_COMPARISON(name, op)                                                                \
    Value name(const Value &a, const Value &b) { return builder_of(a, b, op).add_op(op, {a, b}); } \
    Value name(const Value &a, double b) { return name(a, literal_for(a, b, op)); }
TESSEL_COMPARISON(lt, Op::Less)
TESSEL_COMPARISON(le, Op::LessEqual)
TESSEL_COMPARISON(gt, Op::Greater)
TESSEL_COMPARISON(ge, Op::GreaterEqual)
TESSEL_COMPARISON(eq, Op::Equal)
TESSEL_COMPARISON(ne, Op::NotEqual)
#undef TESSEL_COMPARISON

Value where(const Value &cond, const Value &a, const Value &b) {
    GraphBuilder &g = cond.defined() ? builder_of(cond, Op::Where) : builder_of(a, b, Op::Where);
    return g.add_op(Op::Where, {cond, a, b});
}
Value where(const Value &cond, const Value &a, double b) { return where(cond, a, literal_for(a, b, Op::Where)); }
Value where(const Value &cond, double a, const Value &b) { return where(cond, literal_for(b, a, Op::Where), b); }

Value transpose(const Value &v) {
    builder_of(v, Op::Transpose);  // an undefined Value gets the operand message, not a type one
    std::vector<int64_t> perm;
    for (int64_t i = v.rank() - 1; i >= 0; --i) perm.push_back(i);
    return transpose(v, perm);
}

Value transpose(const Value &v, const std::vector<int64_t> &perm) {
    Attrs a;
    a.perm = perm;
    return unary(Op::Transpose, v, std::move(a));
}

Value reshape(const Value &v, const Shape &dims) {
    GraphBuilder &g = builder_of(v, Op::Reshape);
    return g.add_op(Op::Reshape, {v}, {}, g.make_type(v.dtype(), dims));
}

Value slice(const Value &v, int64_t axis, int64_t start, const DimArg &size) {
    GraphBuilder &g = builder_of(v, Op::Slice);
    TensorType t = v.type();
    if (axis < 0 || axis >= t.rank())
        throw TypeError("slice: axis " + std::to_string(axis) + " out of range for rank " + std::to_string(t.rank()));
    t.dims[(size_t)axis] = g.make_type(v.dtype(), {size}).dims[0];
    Attrs a;
    a.axis = axis;
    a.start = start;
    return g.add_op(Op::Slice, {v}, std::move(a), t);
}

Value concat(const Value &a, const Value &b, int64_t axis) {
    Attrs at;
    at.axis = axis;
    return builder_of(a, b, Op::Concat).add_op(Op::Concat, {a, b}, std::move(at));
}

Value update_tail(const Value &cache, const Value &values, int64_t axis) {
    Attrs at;
    at.axis = axis;
    return builder_of(cache, values, Op::UpdateTail).add_op(Op::UpdateTail, {cache, values}, std::move(at));
}

Value reduce_sum(const Value &v, const std::vector<int64_t> &axes, bool keepdims) {
    return reduce(Op::ReduceSum, v, axes, keepdims);
}
Value reduce_max(const Value &v, const std::vector<int64_t> &axes, bool keepdims) {
    return reduce(Op::ReduceMax, v, axes, keepdims);
}
Value reduce_mean(const Value &v, const std::vector<int64_t> &axes, bool keepdims) {
    return reduce(Op::ReduceMean, v, axes, keepdims);
}

Value softmax(const Value &v, int64_t axis) {
    Attrs a;
    a.axis = axis;
    return unary(Op::Softmax, v, std::move(a));
}

Value shape_of(const Value &v, int64_t axis) {
    Attrs a;
    a.axis = axis;
    return unary(Op::ShapeOf, v, std::move(a));
}

Value cast(const Value &v, DType dtype) {
    GraphBuilder &g = builder_of(v, Op::Cast);
    return g.add_op(Op::Cast, {v}, {}, TensorType{dtype, v.type().dims});
}

Value copy(const Value &v, const Layout &layout) { return builder_of(v, Op::Copy).with_layout(unary(Op::Copy, v), layout); }

Value quantized_int8(const Value &w, int64_t axis) {
    const Value scale = reduce_max(abs(w), {axis}, true) / 127.0;
    return cast(cast(w / scale, DType::I8), w.type().dtype) * scale;
}

Value pack_int4(const Value &q, int64_t axis) {
    GraphBuilder &g = builder_of(q, Op::PackInt4);
    TensorType t = q.type();
    if (axis < 0 || axis >= t.rank())
        throw TypeError("pack_int4: axis " + std::to_string(axis) + " out of range for rank " + std::to_string(t.rank()));
    const Dim d = resolve_dim(g.graph(), t.dims[(size_t)axis]);
    if (!d.is_static()) throw TypeError("pack_int4: the extent along axis " + std::to_string(axis) + " must be static");
    t.dims[(size_t)axis] = Dim::fixed((d.size + 1) / 2);
    Attrs a;
    a.axis = axis;
    return g.add_op(Op::PackInt4, {q}, std::move(a), t);
}

Value unpack_int4(const Value &p, int64_t axis, const DimArg &extent) {
    GraphBuilder &g = builder_of(p, Op::UnpackInt4);
    TensorType t = p.type();
    if (axis < 0 || axis >= t.rank())
        throw TypeError("unpack_int4: axis " + std::to_string(axis) + " out of range for rank " + std::to_string(t.rank()));
    t.dims[(size_t)axis] = g.make_type(DType::I8, {extent}).dims[0];
    Attrs a;
    a.axis = axis;
    return g.add_op(Op::UnpackInt4, {p}, std::move(a), t);
}

Value repeat_interleave(const Value &v, int64_t axis, int64_t repeats, const DimArg &extent) {
    GraphBuilder &g = builder_of(v, Op::RepeatInterleave);
    TensorType t = v.type();
    if (axis < 0 || axis >= t.rank())
        throw TypeError("repeat_interleave: axis " + std::to_string(axis) + " out of range for rank " + std::to_string(t.rank()));
    if (repeats < 1) throw TypeError("repeat_interleave: repeats=" + std::to_string(repeats) + " must be at least 1");
    t.dims[(size_t)axis] = g.make_type(v.dtype(), {extent}).dims[0];
    Attrs a;
    a.axis = axis;
    a.repeats = repeats;
    return g.add_op(Op::RepeatInterleave, {v}, std::move(a), t);
}

Value quantized_int4(const Value &w, int64_t group) {
    GraphBuilder &g = builder_of(w, Op::PackInt4);
    const TensorType t = w.type();
    if (t.rank() != 2) throw TypeError("quantized_int4: expected a [K, N] weight, got rank " + std::to_string(t.rank()));
    const Dim kd = resolve_dim(g.graph(), t.dims[0]), nd = resolve_dim(g.graph(), t.dims[1]);
    if (!kd.is_static() || !nd.is_static()) throw TypeError("quantized_int4: the weight's extents must be static");
    if (group < 2 || group % 2) throw TypeError("quantized_int4: group=" + std::to_string(group) + " must be even and >= 2");
    const int64_t k = kd.size, n = nd.size, groups = (k + group - 1) / group;
    // Groups are formed over w padded with zero rows to a whole number of groups; a padded row
    // never raises its group's maximum and is cut before packing.
    Value padded = w;
    if (groups * group != k) padded = concat(w, g.constant(0.0, t.dtype, {groups * group - k, n}), 0);
    const Value scale = reduce_max(abs(reshape(padded, {groups, group, n})), {1}, true) / 7.0;  // [G, 1, N]
    const Value q = cast(reshape(reshape(padded, {groups, group, n}) / scale, {groups * group, n}), DType::I8);
    const Value packed = pack_int4(groups * group == k ? q : slice(q, 0, 0, k), 0);
    const Value values = cast(unpack_int4(packed, 0, k), t.dtype);
    return values * repeat_interleave(reshape(scale, {groups, n}), 0, group, k);
}

// ---- Effects ----

void state_write(const std::string &var, const Value &v) {
    Attrs a;
    a.var = var;
    effect(Op::StateWrite, v, std::move(a));
}

void print(const std::string &label, const Value &v) {
    Attrs a;
    a.text = label;
    effect(Op::Print, v, std::move(a));
}

void assert_that(const Value &v, const std::string &msg) {
    Attrs a;
    a.text = msg;
    effect(Op::Assert, v, std::move(a));
}

}  // namespace tessel::dsl
