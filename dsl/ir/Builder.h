/** \file
 * The C++ front end for tensor graphs: a GraphBuilder owns a Graph, and Value handles combine
 * through operators and free functions, as Funcs and Exprs do in Halide. It builds the same Graph
 * the parser (Parser.h) builds from the same program, node for node: ids, names, constants and
 * program order match, so `print(b.graph()) == print(parse(text))` for the equivalent text.
 *
 *   GraphBuilder b("gelu_mlp");
 *   Dim M = b.symbol("M"), K = b.symbol("K");
 *   Value hidden = (b.shape_const(2048) * 2).named("hidden");   // shape code: %hidden = 2048 * 2
 *   Value x = b.input("x", DType::F32, {M, K});
 *   Value w = b.input("w", DType::F32, {K, hidden});
 *   Value bias = b.input("bias", DType::F32, {hidden});
 *   b.output("y", gelu(matmul(x, w) + bias));
 *   Graph g = std::move(b).build();
 *
 * Mirroring the parser:
 * - `+ - * /` on two rank-0 integer Values are shape code (shape.add/sub/mul/floordiv), otherwise
 *   broadcasting add/sub/mul/div; `-v` is neg.
 * - A C++ number next to a Value becomes a rank-0 constant of that Value's dtype, created just
 *   before the op (as the parser creates a literal's constant when it builds the op).
 * - transpose(v) without a perm reverses the axes.
 * Beyond the text form, max()/min() on two rank-0 integers give shape.max/min (text spells them
 * `shape.max(...)`), and floordiv()/mod() name the remaining shape ops.
 *
 * Errors: an op whose operands do not fit throws the TypeError that infer_type() throws, naming the
 * op and the types ("add: incompatible shapes f32[4, 8] and f32[3] (dim 1)"); nothing is added to
 * the graph. Misuse of the builder itself (a Value of another builder, an undefined Value, a bad
 * name, a second name for one value, use after build()) throws UserError.
 *
 * Not done here: C++ leaves the evaluation order of an operator's operands unspecified, so in
 * `f(a) + g(b)` either side may be added first. The graph is correct either way; when ids must
 * match a text exactly (tests), build such operands in separate statements.
 * A Value points at its builder: keep the builder alive (and in place; it cannot be moved) while
 * Values are used. Layouts are set on inputs and weights here (`layout` argument) and on copies
 * (copy(v, layout), a conversion); every other value's layout is the layout-assignment pass's decision.
 * Code inside namespace tessel::dsl that includes this header sees exp/sqrt/abs/tanh/max/min on
 * Values hide the <cmath> names, so call those on numbers as std::exp etc. (as Halide code does).
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "dsl/ir/Graph.h"

namespace tessel::dsl {

class GraphBuilder;

/** A handle on one value of a GraphBuilder's graph: the builder and a ValueId. Cheap to copy.
 * A default-constructed Value is undefined; using it as an operand throws UserError. */
class Value {
public:
    Value() = default;

    bool defined() const { return builder_ != nullptr; }
    GraphBuilder *builder() const { return builder_; }
    ValueId id() const { return id_; }
    const TensorType &type() const;
    DType dtype() const { return type().dtype; }
    int rank() const { return type().rank(); }
    /** The printed name without '%' (the node's name, or its id when unnamed). */
    std::string name() const;
    /** Give the value its %name and return it (GraphBuilder::name). Example:
     *   Value k = shape_of(x, 1).named("k_view"); */
    Value named(const std::string &name) const;

private:
    friend class GraphBuilder;
    Value(GraphBuilder *b, ValueId id) : builder_(b), id_(id) {}
    GraphBuilder *builder_ = nullptr;
    ValueId id_ = kNoValue;
};

/** One dimension as the user writes it: a Dim (`b.symbol("M")`), a static size (4096), a symbol
 * name ("M"), or a rank-0 integer Value of shape code (`hidden`, `shape_of(x, 1)`). */
class DimArg {
public:
    DimArg(const Dim &d) : dim_(d) {}
    template <typename I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
    DimArg(I size) : dim_(Dim::fixed((int64_t)size)) {}
    DimArg(const char *symbol) : dim_(Dim::sym(symbol)) {}
    DimArg(const std::string &symbol) : dim_(Dim::sym(symbol)) {}
    DimArg(const Value &v) : dim_(Dim::ref(v.id())), value_(v) {}

    const Dim &dim() const { return dim_; }
    /** The Value a Kind::Value dim refers to (to check it belongs to the right builder). */
    const Value &value() const { return value_; }

private:
    Dim dim_;
    Value value_;
};

/** A shape as the user writes it: `{M, K}`, `{4, hidden}`, `{}` for a scalar. */
using Shape = std::vector<DimArg>;

/** Builds one Graph. Not copyable or movable, because Values point at it. */
class GraphBuilder {
public:
    /** `name` is the graph name (an identifier, as in `graph NAME`); `mode` its numeric mode. */
    explicit GraphBuilder(const std::string &name = "main", NumericMode mode = NumericMode::Strict);
    GraphBuilder(const GraphBuilder &) = delete;
    GraphBuilder &operator=(const GraphBuilder &) = delete;

    /** A symbolic dimension, bound at run time by the inputs that carry it. Checks the name is an
     * identifier; adds nothing to the graph. Example: Dim M = b.symbol("M"). */
    Dim symbol(const std::string &name) const;

    /** `%name = input : dtype[dims]`; a non-empty `layout` is that of the caller's buffer. */
    Value input(const std::string &name, DType dtype, const Shape &dims, const Layout &layout = {});
    /** `%name = weight : dtype[dims]`: an input constant across calls, prepared once (values
     * computed from weights alone, and layout conversions, run when the weight is prepared). A
     * non-empty `layout` forces the layout kernels read it in. */
    Value weight(const std::string &name, DType dtype, const Shape &dims, const Layout &layout = {});
    /** A splat constant `value : dtype[dims]` (rank 0 by default), stored rounded to dtype.
     * Integer dtypes need an integral value. Example: b.constant(2.0f) is `2 : f32[]`. */
    Value constant(double value, DType dtype = DType::F32, const Shape &dims = {});
    /** A dense constant `constant(value=[...]) : dtype[dims]`; dims must be static and hold
     * values.size() elements (one value is a splat, as in the text form). */
    Value constant(const std::vector<double> &values, DType dtype, const Shape &dims);
    /** A rank-0 integer constant for shape code: b.shape_const(2048) is `2048 : i64[]`. */
    Value shape_const(int64_t value, DType dtype = DType::I64);

    /** Effects that make a value. Each call is a separate draw / read, in program order. */
    /** causal_mask() : dtype[..., S, L]: 0 where j <= i + L - S, else -inf (docs/TSL.md). */
    Value causal_mask(DType dtype, const Shape &dims);
    Value random_uniform(DType dtype, const Shape &dims, uint64_t seed);
    Value random_normal(DType dtype, const Shape &dims, uint64_t seed);
    Value state_read(const std::string &var, DType dtype, const Shape &dims);

    /** Append v to the graph's outputs. output(name, v) first names v (see name()). */
    void output(const Value &v);
    void output(const std::string &name, const Value &v);

    /** Name v's node so it prints as %name. Throws UserError if the name is not an identifier
     * (letters, digits, '_', '.'), is already taken by a named value, or v already has another
     * name (a value has one name, as in the text form). An unnamed value whose printed id equals
     * the name is renamed `_<id>`, as the parser does. Returns v. */
    Value name(const Value &v, const std::string &name);

    /** Add a node of any op: its type is inferred (or `type`, for ops whose type comes from an
     * annotation; see OpKinds.def). The free functions below all go through here. Throws
     * TypeError (from infer_type) or UserError (operands from another builder). Returns the new
     * value; for ops without a result (print, assert, state_write) a Value that cannot be used. */
    Value add_op(Op op, const std::vector<Value> &operands, Attrs attrs = {}, std::optional<TensorType> type = std::nullopt);
    /** A rank-0 constant of `like`'s dtype: how a C++ number next to a Value becomes an operand. */
    Value literal(double value, const Value &like);
    /** dtype[dims] with every dim checked (symbols are identifiers, sizes >= 0, Values from this
     * builder). */
    TensorType make_type(DType dtype, const Shape &dims) const;

    /** Sets the layout of `v`, a copy (see dsl::copy); the layout is checked against its rank. */
    Value with_layout(const Value &v, const Layout &layout);

    const std::string &graph_name() const { return name_; }
    /** The graph so far, after checking it with verify(); throws InternalError if invalid. */
    const Graph &graph();
    /** The finished graph, verified; one with no output is a UserError, as in the text form.
     * The builder cannot be used afterwards. */
    Graph build() &&;

private:
    friend class Value;
    const Node &node(const Value &v) const;
    void check_usable(const std::string &what) const;
    void check_operand(const std::string &what, const Value &v) const;

    std::string name_;  ///< graph_.name, kept for messages after build() moved graph_ out
    Graph graph_;
    std::vector<char> user_named_;  ///< per ValueId: the name was given through name()
    bool built_ = false;
};

// ---- Arithmetic: shape code on two rank-0 integers, else broadcasting elementwise. ----
Value operator+(const Value &a, const Value &b);
Value operator-(const Value &a, const Value &b);
Value operator*(const Value &a, const Value &b);
/** Floor division (shape.floordiv) on two rank-0 integers, else div. */
Value operator/(const Value &a, const Value &b);
Value operator+(const Value &a, double b);
Value operator-(const Value &a, double b);
Value operator*(const Value &a, double b);
Value operator/(const Value &a, double b);
Value operator+(double a, const Value &b);
Value operator-(double a, const Value &b);
Value operator*(double a, const Value &b);
Value operator/(double a, const Value &b);
/** neg(a). */
Value operator-(const Value &a);

/** Elementwise max/min with broadcasting; shape.max/min on two rank-0 integers. */
Value max(const Value &a, const Value &b);
Value min(const Value &a, const Value &b);
Value max(const Value &a, double b);
Value min(const Value &a, double b);
/** Shape code only (two rank-0 integers of one dtype): floor division and modulo rounding toward
 * -inf. Anything else throws TypeError. */
Value floordiv(const Value &a, const Value &b);
Value mod(const Value &a, const Value &b);
Value floordiv(const Value &a, int64_t b);
Value mod(const Value &a, int64_t b);

// ---- Tensor ops: one node each, named after the op in OpKinds.def. ----
/** [..., M, K] x [..., K, N] -> [..., M, N]; batch dims broadcast. */
Value matmul(const Value &a, const Value &b);
Value gelu(const Value &v);       ///< exact (erf) form
Value gelu_tanh(const Value &v);  ///< tanh approximation
Value tanh(const Value &v);
Value exp(const Value &v);
Value relu(const Value &v);
Value neg(const Value &v);
Value abs(const Value &v);
Value sqrt(const Value &v);
Value rsqrt(const Value &v);
Value log(const Value &v);
Value sigmoid(const Value &v);
Value silu(const Value &v);  ///< x * sigmoid(x), written x / (1 + exp(-x))
Value sin(const Value &v);
Value cos(const Value &v);
/** Comparisons: 1 where the relation holds, else 0, in the operands' dtype (a mask value). */
Value lt(const Value &a, const Value &b);
Value le(const Value &a, const Value &b);
Value gt(const Value &a, const Value &b);
Value ge(const Value &a, const Value &b);
Value eq(const Value &a, const Value &b);
Value ne(const Value &a, const Value &b);
Value lt(const Value &a, double b);
Value le(const Value &a, double b);
Value gt(const Value &a, double b);
Value ge(const Value &a, double b);
Value eq(const Value &a, double b);
Value ne(const Value &a, double b);
/** `a` where `cond` is nonzero, else `b`; the three broadcast. A number takes the dtype of the
 * Value beside it: where(mask, x, -INFINITY). */
Value where(const Value &cond, const Value &a, const Value &b);
Value where(const Value &cond, const Value &a, double b);
Value where(const Value &cond, double a, const Value &b);
/** Reverse the axes (the text form's default). */
Value transpose(const Value &v);
Value transpose(const Value &v, const std::vector<int64_t> &perm);
/** Same dtype and element count, new dims: reshape(x, {M, k_view}). */
Value reshape(const Value &v, const Shape &dims);
/** `size` elements of v from `start` along `axis`; size may be a symbol or shape code. */
Value slice(const Value &v, int64_t axis, int64_t start, const DimArg &size);
/** a then b along `axis` (static extents there; the other dims equal). */
Value concat(const Value &a, const Value &b, int64_t axis);
/** cache with its last extent(values, axis) positions along `axis` replaced by values (a KV-cache
 * write; in place when the caller donates the cache). */
Value update_tail(const Value &cache, const Value &values, int64_t axis);
/** Reduce along `axes` (non-negative, each once); keepdims leaves size-1 dims in their place. */
Value reduce_sum(const Value &v, const std::vector<int64_t> &axes, bool keepdims = false);
Value reduce_max(const Value &v, const std::vector<int64_t> &axes, bool keepdims = false);
Value reduce_mean(const Value &v, const std::vector<int64_t> &axes, bool keepdims = false);
Value softmax(const Value &v, int64_t axis);
/** `shape_of(v)[axis]`: an i64 rank-0 Value, usable as a dim. */
Value shape_of(const Value &v, int64_t axis);
/** Same shape, new dtype. */
Value cast(const Value &v, DType dtype);
/** The same values stored in `layout` (a layout conversion; see OpKinds.def). */
Value copy(const Value &v, const Layout &layout);
/** Weight-only int8 (docs/TSL.md, "Quantized weights"): `w` stored as i8 with one f32 scale per
 * slice across `axis` (axis 0 of a [K, N] weight: a scale per output column), dequantized where
 * it is read: cast(cast(w / s) : i8) : f32 * s with s = reduce_max(abs(w), [axis]) / 127. On a
 * weight, s and the i8 values are prepared once and the matmul reads a quarter of the bytes. */
Value quantized_int8(const Value &w, int64_t axis = 0);
/** q's int4 values (i8, saturated to [-8, 7]) two per byte along `axis`: [ceil(K / 2), ...]. */
Value pack_int4(const Value &q, int64_t axis);
/** The inverse of pack_int4: `extent` values along `axis` (ceil(extent / 2) = p's extent there). */
Value unpack_int4(const Value &p, int64_t axis, const DimArg &extent);
/** Each element of v `repeats` times along `axis`, `extent` in all (a group's scale per row). */
Value repeat_interleave(const Value &v, int64_t axis, int64_t repeats, const DimArg &extent);
/** w [K, N] (static extents) as weight-only int4 in groups of `group` rows along K (even, e.g.
 * 32, 64, 128), a scale per group and column, dequantized where it is read:
 * cast(unpack_int4(p)) : f32 * repeat_interleave(s) with s = max |w| over the group / 7 and p the
 * values round(w / s) packed two per byte (TSL.md, "Quantized weights"). A K that is not a
 * multiple of the group has a short last group. On a weight, p and s are prepared once and the
 * matmul reads an eighth of f32's bytes plus the scales. */
Value quantized_int4(const Value &w, int64_t group);

// ---- Effects without a result; they run in the order they are built. ----
void state_write(const std::string &var, const Value &v);
/** Prints `label: <value>` when the graph runs. */
void print(const std::string &label, const Value &v);
/** Fails the run with `msg` if any element of v is 0. */
void assert_that(const Value &v, const std::string &msg);

}  // namespace tessel::dsl
