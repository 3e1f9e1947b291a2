// Map: facts about shape values (positive, non-zero, factors of an element count) -> one check
// per failure mode (division, reshape, slice, written extents, state_read, assert) -> run_time_failure().
#include "dsl/analysis/RunTimeFailures.h"

#include <map>
#include <set>

#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

namespace {

std::string nm(const Graph &g, ValueId v) { return "%" + g.display_name(v); }

/** How deep the facts below look through shape code; deeper code is "not known". */
constexpr int kMaxShapeDepth = 64;

/** Whether scalar shape value v is >= 1 on every run. Extents are >= 1, so shape_of is; sums,
 * products, min and max of positive values are; anything else is not known (false). */
bool positive(const Graph &g, ValueId v, std::map<ValueId, bool> &memo, int depth = 0) {
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    // Past kMaxShapeDepth the answer is "not known": conservative, and no deep recursion.
    if (depth > kMaxShapeDepth) return false;
    bool r = false;
    if (auto c = constant_shape_value(g, v)) {
        r = *c >= 1;
    } else {
        const Node &n = g.node(v);
        switch (n.op) {
        case Op::ShapeOf: r = true; break;
        case Op::ShapeAdd:
        case Op::ShapeMul:
        case Op::ShapeMin: r = positive(g, n.inputs[0], memo, depth + 1) && positive(g, n.inputs[1], memo, depth + 1); break;
        case Op::ShapeMax: r = positive(g, n.inputs[0], memo, depth + 1) || positive(g, n.inputs[1], memo, depth + 1); break;
        default: break;
        }
    }
    return memo[v] = r;
}
bool positive(const Graph &g, ValueId v) {
    std::map<ValueId, bool> memo;
    return positive(g, v, memo);
}

/** An element count as a product: a static part and the other factors (symbols, shape values),
 * looked through shape code and `shape.mul`. `ok` is false when the static part overflows. */
struct Factors {
    int64_t fixed = 1;
    std::multiset<std::string> others;
    bool ok = true;
    bool operator==(const Factors &o) const { return ok && o.ok && fixed == o.fixed && others == o.others; }
};
void add_factors(const Graph &g, const Dim &d0, Factors &f, int depth = 0) {
    const Dim d = resolve_dim(g, d0);
    if (d.is_static()) {
        if (d.size < 1 || f.fixed > kMaxElements / d.size)
            f.ok = false;
        else
            f.fixed *= d.size;
    } else if (d.kind == Dim::Kind::Symbol) {
        f.others.insert("symbol " + d.symbol);
    } else if (depth < kMaxShapeDepth && g.contains(d.value) && g.node(d.value).op == Op::ShapeMul) {
        for (ValueId in : g.node(d.value).inputs) add_factors(g, Dim::ref(in), f, depth + 1);
    } else {
        f.others.insert("value " + std::to_string(d.value));
    }
}
Factors factors(const Graph &g, const TensorType &t) {
    Factors f;
    for (const Dim &d : t.dims) add_factors(g, d, f);
    return f;
}

FailureCheck never(std::string why = {}) { return {Failure::Never, std::move(why)}; }
FailureCheck may(std::string why) { return {Failure::May, std::move(why)}; }
FailureCheck always(std::string why) { return {Failure::Always, std::move(why)}; }

FailureCheck division(const Graph &g, const Node &n) {
    const ValueId a = n.inputs[0], b = n.inputs[1];
    const char *op = n.op == Op::ShapeMod ? " mod " : " floordiv ";
    auto dividend = [&] {
        auto c = constant_shape_value(g, a);
        return c ? std::to_string(*c) : nm(g, a);
    };
    if (auto c = constant_shape_value(g, b)) {
        if (*c == 0) return always("division by zero in shape code (" + dividend() + op + "0)");
        return never();
    }
    if (positive(g, b)) return never();
    return may("division by zero in shape code if the divisor " + nm(g, b) + " (" + shape_code_text(g, b) + ") is 0");
}

FailureCheck reshape(const Graph &g, const Node &n) {
    const TensorType &from = g.node(n.inputs[0]).type;
    if (factors(g, from) == factors(g, n.type)) return never();
    TensorType a = from, b = n.type;
    for (Dim &d : a.dims) d = resolve_dim(g, d);
    for (Dim &d : b.dims) d = resolve_dim(g, d);
    if (a.all_static() && b.all_static())
        return always("reshape: element counts differ: " + print_type(g, from) + " and " + print_type(g, n.type));
    return may("reshape: the element counts of " + print_type(g, from) + " and " + print_type(g, n.type) + " may differ");
}

/** A slice whose extents are not both static may run past its operand (static ones were checked
 * by infer_type). */
FailureCheck slice(const Graph &g, const Node &n) {
    const size_t axis = (size_t)n.attrs.axis;
    const Dim extent = resolve_dim(g, g.node(n.inputs[0]).type.dims[axis]), size = resolve_dim(g, n.type.dims[axis]);
    if (extent.is_static() && size.is_static()) return never();
    if (n.attrs.start == 0 && same_dim(g, extent, size)) return never();
    return may("slice: start=" + std::to_string(n.attrs.start) + " plus the extent of " + print_type(g, n.type) + " along axis " +
               std::to_string(axis) + " may run past " + print_type(g, g.node(n.inputs[0]).type));
}

/** Extents of a written type that shape code computes. (Inferred types take their dims from
 * operands, which were checked where they were written.) */
FailureCheck written_extents(const Graph &g, const Node &n) {
    FailureCheck worst;
    for (const Dim &d : n.type.dims) {
        if (d.kind != Dim::Kind::Value) continue;
        const Dim r = resolve_dim(g, d);
        if (r.is_static() && r.size < 1)
            return always("dimension " + nm(g, d.value) + " evaluates to " + std::to_string(r.size) +
                          "; extents must be positive (zero-size tensors are not supported)");
        if (r.kind == Dim::Kind::Value && !positive(g, r.value) && worst.kind == Failure::Never)
            worst = may("the extent " + nm(g, r.value) + " (" + shape_code_text(g, r.value) + ") may not be positive");
    }
    return worst;
}

/** Types that provably differ: dtype, rank, or a pair of static extents. */
bool provably_different(const Graph &g, const TensorType &a, const TensorType &b) {
    if (a.dtype != b.dtype || a.rank() != b.rank()) return true;
    for (int i = 0; i < a.rank(); ++i) {
        const Dim x = resolve_dim(g, a.dims[i]), y = resolve_dim(g, b.dims[i]);
        if (x.is_static() && y.is_static() && x.size != y.size) return true;
    }
    return false;
}

FailureCheck state_read(const Graph &g, const Node &n) {
    FailureCheck r;
    bool before = true;  // scanning writes that run before the read, latest last
    ValueId latest = kNoValue;
    for (ValueId id : g.order()) {
        if (id == n.id) before = false;
        const Node &w = g.node(id);
        if (w.op != Op::StateWrite || w.attrs.var != n.attrs.var) continue;
        const TensorType &t = g.node(w.inputs[0]).type;
        if (before) latest = id;
        if (!same_type(g, t, n.type) && r.kind == Failure::Never)
            r = may("state \"" + n.attrs.var + "\" is also written as " + print_type(g, t) + " (by " + print_node(g, id) + ")");
    }
    if (latest != kNoValue) {
        const TensorType &t = g.node(g.node(latest).inputs[0]).type;
        if (provably_different(g, t, n.type))
            return always("it declares " + print_type(g, n.type) + " but the last write before it, " + print_node(g, latest) +
                          ", stores " + print_type(g, t));
    }
    return r;
}

FailureCheck assertion(const Graph &g, const Node &n) {
    const ValueId c = n.inputs[0];
    const Node &cond = g.node(c);
    if (cond.op != Op::Constant) return may("its condition " + nm(g, c) + " is known only at run time");
    for (size_t i = 0; i < cond.attrs.value.size(); ++i)
        if (cond.attrs.value[i] == 0.0)
            return always(cond.attrs.value.size() == 1
                              ? "its condition " + nm(g, c) + " is the constant " + print_number(cond.attrs.value[0])
                              : "element " + std::to_string(i) + " of its condition " + nm(g, c) + " is 0");
    return never("no element of its condition " + nm(g, c) + " is 0, so it can never fail");
}

}  // namespace

FailureCheck run_time_failure(const Graph &g, ValueId id) {
    const Node &n = g.node(id);
    // Inputs: their binding is the caller's; only an extent computed by shape code can fail.
    if (n.op == Op::Input) return written_extents(g, n);
    if (n.op == Op::Assert) return assertion(g, n);
    if (n.info().attrs & kTypeFromAnnotation) {
        FailureCheck e = written_extents(g, n);
        if (e.kind == Failure::Always) return e;
        FailureCheck own = n.op == Op::Reshape     ? reshape(g, n)
                           : n.op == Op::Slice     ? slice(g, n)
                           : n.op == Op::StateRead ? state_read(g, n)
                                                   : never();
        return own.kind > e.kind ? own : e;
    }
    if (n.op == Op::ShapeFloorDiv || n.op == Op::ShapeMod) return division(g, n);
    return never();
}

void report_static_failure(const Graph &g, ValueId id, const std::string &reason) {
    throw StaticFailure(g.source, g.node(id).loc, print_node(g, id) + " always fails at run time: " + reason);
}

}  // namespace tessel::dsl
