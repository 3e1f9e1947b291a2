/** \file
 * The tensor-graph IR: plain data. A Graph owns an arena of Nodes indexed by stable ValueIds and a
 * program order (a topological order that also orders every effect). Each node defines at most one
 * value. Passes mutate a Graph through the small API below and never reorder effectful nodes.
 *
 * Cost: add, insert_before, erase, find and set_name are O(1) (amortized); users(v) is
 * O(uses of v); replace_all_uses(from, to) is O(uses of from + outputs); order() and position()
 * are O(1) after a change has been followed by one O(n) rebuild of the order cache. So parsing and
 * every pass stay linear in the graph's size (a 100,000-op graph is a tested case).
 *
 * Names go through set_name() (Node::name is read everywhere but written only by the Graph), so
 * the name index behind find() stays exact. A node reached through the non-const node() may
 * gain operands or dim references; the user index takes them in before its next use.
 *
 * Example (see docs/TSL.md for the text form):
 *   Graph g; g.name = "f";
 *   ValueId x = g.add(Node::make(Op::Input, {}, {DType::F32, {Dim::sym("M")}}, "x"));
 *   g.outputs.push_back(g.add(make_node(g, Op::Relu, {x})));   // make_node: TypeInference.h
 */
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "dsl/ir/Diagnostics.h"
#include "dsl/ir/Layout.h"
#include "dsl/ir/Types.h"

namespace tessel::dsl {

/** What an op does besides computing its result. Later passes (CSE, DCE, fusion) rely on it. */
enum class Effect { Pure, ReadsState, WritesState, Random, Observable };
/** Shape of the op's iteration space, for fusion and memory planning. */
enum class IterSpace { Elementwise, Broadcast, Reduction, Contraction, Permutation, Opaque };

// Attribute mask bits used by OpKinds.def.
constexpr unsigned kAttrValue = 1u << 0;           ///< constant: value=...
constexpr unsigned kAttrAxis = 1u << 1;            ///< shape_of, softmax: axis=
constexpr unsigned kAttrAxes = 1u << 2;            ///< reductions: axes=[...]
constexpr unsigned kAttrKeepDims = 1u << 3;        ///< reductions: keepdims=true
constexpr unsigned kAttrPerm = 1u << 4;            ///< transpose: perm=[...]
constexpr unsigned kAttrSeed = 1u << 5;            ///< random draws: seed=
constexpr unsigned kAttrVar = 1u << 6;             ///< state ops: var="name"
constexpr unsigned kAttrLabel = 1u << 7;           ///< print: label="..."
constexpr unsigned kAttrMsg = 1u << 8;             ///< assert: msg="..."
constexpr unsigned kTypeFromAnnotation = 1u << 9;  ///< result type is written, not inferred
constexpr unsigned kAttrStart = 1u << 10;          ///< slice: start=
constexpr unsigned kAttrRepeats = 1u << 11;        ///< repeat_interleave: repeats=

enum class Op {
#define DSL_OP(e, s, ar, res, eff, it, attrs) e,
#include "dsl/ir/OpKinds.def"
#undef DSL_OP
};

/** Static facts about an op, from OpKinds.def. */
struct OpInfo {
    Op op;
    const char *name;
    int arity;
    bool has_result;
    Effect effect;
    IterSpace iter_space;
    unsigned attrs;
};
const OpInfo &op_info(Op op);
const char *to_string(Op op);
const char *to_string(Effect e);
const char *to_string(IterSpace s);
/** Look an op up by its text name ("matmul", "shape.add"); false if unknown. */
bool parse_op(const std::string &name, Op *out);
const std::vector<OpInfo> &all_ops();

inline bool is_shape_arith(Op op) { return op >= Op::ShapeAdd && op <= Op::ShapeMax; }
/** Comparisons are binary elementwise ops whose result is 1 or 0 in the operands' dtype. */
inline bool is_comparison(Op op) { return op >= Op::Less && op <= Op::NotEqual; }
inline bool is_binary_elementwise(Op op) { return op >= Op::Add && op <= Op::NotEqual; }
inline bool is_unary_elementwise(Op op) { return op >= Op::Gelu && op <= Op::Cos; }
/** Elementwise ops that evaluate a polynomial or a libm call per element (cost well above an add). */
inline bool is_transcendental(Op op) {
    switch (op) {
    case Op::Gelu:
    case Op::GeluTanh:
    case Op::Tanh:
    case Op::Exp:
    case Op::Log:
    case Op::Sigmoid:
    case Op::Silu:
    case Op::Sin:
    case Op::Cos: return true;
    default: return false;
    }
}
inline bool is_reduction(Op op) { return op >= Op::ReduceSum && op <= Op::ReduceMean; }

/** Operation attributes; only the fields named by the op's attr mask are meaningful. */
struct Attrs {
    std::vector<double> value;  ///< constant: 1 element (splat) or numel elements, row-major
    int64_t axis = 0;
    int64_t start = 0;    ///< slice: the first index taken along axis
    int64_t repeats = 0;  ///< repeat_interleave: copies of each element along axis (>= 1)
    std::vector<int64_t> axes;
    bool keepdims = false;
    std::vector<int64_t> perm;
    uint64_t seed = 0;
    std::string var;   ///< state variable name
    std::string text;  ///< print label / assert message
    /** input: a weight, constant across calls (`%w = weight : f32[K, N]`). Values computed from
     * weights alone are prepared once per weight, not per call (dsl/analysis/WeightDerived.h). */
    bool weight = false;
    /** Equality; constant values compare bit for bit (so NaN == NaN, -0 != +0). */
    bool operator==(const Attrs &o) const;
    bool operator!=(const Attrs &o) const { return !(*this == o); }
};

struct Node {
    ValueId id = kNoValue;
    Op op = Op::Input;
    std::vector<ValueId> inputs;
    TensorType type;  ///< unused for ops without a result
    /** Physical layout where the value is stored (dsl/ir/Layout.h); empty = row-major. On a
     * weight it is the layout kernels read, which preparing converts the caller's row-major
     * data to; on other inputs, the layout of the caller's buffer; on a value a group
     * materializes, the layout its producer writes. Set by the text (`layout="..."`) or the
     * layout-assignment pass. */
    Layout layout;
    Attrs attrs;
    std::string name;  ///< printed as %name; empty means printed as %<id>
    SourceLoc loc;     ///< where it was parsed, for diagnostics; not printed

    const OpInfo &info() const { return op_info(op); }
    bool has_result() const { return info().has_result; }
    bool is_pure() const { return info().effect == Effect::Pure; }

    static Node make(Op op, std::vector<ValueId> inputs, TensorType type, std::string name = {}, Attrs attrs = {}) {
        Node n;
        n.op = op;
        n.inputs = std::move(inputs);
        n.type = std::move(type);
        n.name = std::move(name);
        n.attrs = std::move(attrs);
        return n;
    }
};

/** Numeric mode of a graph (docs/TSL.md, "Numeric modes"):
 *  - `exact`:  every formula as written and every reduction (the k sum of a matmul, a row sum)
 *              in program order, so results do not depend on the schedule;
 *  - `strict` (default): every formula as written (IEEE semantics bit for bit for elementwise
 *              ops); a reduction may be evaluated as a fixed tree of partial sums chosen by the
 *              schedule (split-K, vector lanes), as BLAS libraries do;
 *  - `fast`:   additionally reassociation and identities that are exact only for finite,
 *              non-negative-zero values (x * 0 -> 0, 0.5 (1 + tanh u) -> sigmoid(2u)). */
enum class NumericMode { Exact, Strict, Fast };
/** Whether a schedule may split a reduction into partial sums (rfactor, split-K): not in exact. */
inline bool allows_split_reductions(NumericMode mode) { return mode != NumericMode::Exact; }
/** "exact", "strict" or "fast", as the text form writes it (`graph f mode=fast { ... }`). */
const char *to_string(NumericMode mode);
/** Inverse of to_string; throws std::invalid_argument naming the value and the choices. */
NumericMode parse_numeric_mode(const std::string &text);

class Graph {
public:
    std::string name = "main";
    NumericMode mode = NumericMode::Strict;
    /** The file the graph was parsed from, for diagnostics that point at a node's SourceLoc;
     * empty for graphs built in C++. Not printed. */
    std::string source;
    /** The graph's interface, in order: output i is value outputs[i] under the name
     * output_name(i). Callers and generated libraries bind to these names, so no pass may change
     * them; see replace_all_uses. */
    std::vector<ValueId> outputs;
    /** Parallel to `outputs`: an explicit interface name where it differs from the value's
     * display name (`output %y = %x`); an empty or missing entry means the value's own name.
     * Write it through set_output_name(). */
    std::vector<std::string> output_names;

    /** Interface name of output i: output_names[i] if set, else display_name(outputs[i]). */
    std::string output_name(size_t i) const;
    /** Bind output i to `name`; stores nothing extra when it is the value's own name. */
    void set_output_name(size_t i, const std::string &name);
    /** Append an output (`name` empty: the value's own name). */
    void add_output(ValueId v, const std::string &name = {});

    /** Append n at the end of program order; assigns and returns its id. */
    ValueId add(Node n);
    /** Insert n just before `pos` in program order. */
    ValueId insert_before(ValueId pos, Node n);
    /** Remove a node from program order; its id is never reused. Precondition: no uses left. */
    void erase(ValueId id);

    Node &node(ValueId id);
    const Node &node(ValueId id) const;
    bool contains(ValueId id) const;
    /** Program order: every operand (and dim reference) precedes its user; effects in order.
     * The reference stays valid until the next change to the graph. */
    const std::vector<ValueId> &order() const;
    /** Number of values in program order (O(1)). */
    size_t size() const { return live_; }
    /** Position of id in program order. */
    size_t position(ValueId id) const;

    /** Redirect every use of `from` (operands, dim references, outputs) to `to`. If `to` has no
     * name, it takes over from's name (from is left unnamed). Outputs keep their interface
     * names: an output that was `%y` and now holds a value named otherwise becomes the binding
     * `output %y = %x`. Returns the number of uses changed. */
    int replace_all_uses(ValueId from, ValueId to);
    /** Values that use `id` as an operand or dim reference, in program order. */
    std::vector<ValueId> users(ValueId id) const;
    bool is_output(ValueId id) const;

    /** The printed name without '%': the node's name, or its id when unnamed. */
    std::string display_name(ValueId id) const;
    /** Node with this display name (the first in program order if several), or kNoValue. */
    ValueId find(const std::string &display) const;
    /** Rename a node (empty: unnamed, printed as its id). Does not check for clashes; the
     * verifier reports duplicate names. */
    void set_name(ValueId id, const std::string &name);
    /** An unnamed value prints as its number; give it the spelling "_<id>" instead (more '_'
     * until no other value has it), so that number may become another value's name. */
    void respell_unnamed(ValueId id);

    Graph() = default;
    Graph(const Graph &o);
    Graph(Graph &&o) noexcept;
    Graph &operator=(const Graph &o);
    Graph &operator=(Graph &&o) noexcept;

private:
    void fix_name(Node &n) const;
    void index_name(ValueId id);
    void unindex_name(ValueId id);
    void link_before(ValueId pos, ValueId id);
    void note_uses(ValueId user);
    void flush_touched() const;
    void rebuild_order() const;

    std::vector<Node> nodes_;
    std::vector<char> erased_;
    /** Program order as a doubly linked list over ids: O(1) insertion and removal. */
    std::vector<ValueId> next_, prev_;
    ValueId head_ = kNoValue, tail_ = kNoValue;
    size_t live_ = 0;
    /** display name -> ids spelled that way (normally one; stale entries are skipped). */
    std::unordered_map<std::string, std::vector<ValueId>> by_name_;
    /** id -> nodes that may use it (a superset, checked on use; duplicates allowed). */
    mutable std::vector<std::vector<ValueId>> may_use_;
    /** Nodes handed out through the non-const node() since the user index last looked. */
    mutable std::vector<ValueId> touched_;
    mutable std::vector<char> is_touched_;
    /** The order as a vector and each id's position, rebuilt after a change (under a lock, so
     * const readers on several threads are safe). */
    mutable std::vector<ValueId> order_;
    mutable std::vector<size_t> pos_;
    mutable std::atomic<bool> order_dirty_{false};
    mutable std::mutex order_mutex_;
};

/** Visit every value a node depends on: its operands, then dims of its type that refer to values. */
template <typename F>
void for_each_dependency(const Node &n, F f) {
    for (ValueId v : n.inputs) f(v);
    for (const Dim &d : n.type.dims)
        if (d.kind == Dim::Kind::Value) f(d.value);
}

}  // namespace tessel::dsl
