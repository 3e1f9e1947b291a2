/** Map: matchers (splat_value, operand helpers) -> the rule table rules() -> simplify_algebra(),
 * the greedy driver that applies the first matching rule to each node in program order. */
#include "dsl/passes/AlgebraicSimplify.h"

#include <cmath>
#include <functional>
#include <optional>

#include "dsl/analysis/WeightDerived.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

namespace {

/** What a rule proposes: use an existing value, or a new node inserted before the matched one. */
struct Replacement {
    ValueId existing = kNoValue;
    std::optional<Node> fresh;
    std::string why;
};
using Match = std::optional<Replacement>;

struct Rule {
    const char *name;
    bool fast_only;
    std::function<Match(const Graph &, const Node &)> match;
};

Match use(ValueId v, std::string why) { return Replacement{v, std::nullopt, std::move(why)}; }
Match build(Node n, std::string why) { return Replacement{kNoValue, std::move(n), std::move(why)}; }

/** The value of a constant whose elements are all the same bits. */
std::optional<double> splat_value(const Graph &g, ValueId v) {
    const Node &n = g.node(v);
    if (n.op != Op::Constant || n.attrs.value.empty()) return std::nullopt;
    double x = n.attrs.value[0];
    for (double y : n.attrs.value)
        if (!(y == x && std::signbit(y) == std::signbit(x))) return std::nullopt;
    return x;
}
bool is_splat(const Graph &g, ValueId v, double want) {
    auto s = splat_value(g, v);
    return s && *s == want && std::signbit(*s) == std::signbit(want);
}
const Node &in(const Graph &g, const Node &n, size_t i) { return g.node(n.inputs[i]); }
/** Replacing n by v keeps every user's operand type. */
bool same_as(const Graph &g, const Node &n, ValueId v) { return same_type(g, n.type, g.node(v).type); }

/** For a binary op with a splat `c` on either side, the other operand (if n's type equals it). */
std::optional<ValueId> other_side(const Graph &g, const Node &n, double c, bool either_side) {
    if (is_splat(g, n.inputs[1], c) && same_as(g, n, n.inputs[0])) return n.inputs[0];
    if (either_side && is_splat(g, n.inputs[0], c) && same_as(g, n, n.inputs[1])) return n.inputs[1];
    return std::nullopt;
}

std::string perm_str(const std::vector<int64_t> &p) {
    std::string s = "[";
    for (size_t i = 0; i < p.size(); ++i) s += (i ? ", " : "") + std::to_string(p[i]);
    return s + "]";
}

Node zeros_like(const Node &n) {
    Attrs a;
    a.value = {0.0};
    return Node::make(Op::Constant, {}, n.type, {}, a);
}

const std::vector<Rule> &rules() {
    static const std::vector<Rule> table = {
        // transpose(transpose(w, p), q) -> w when p[q[i]] == i for all i.
        {"transpose-pair-identity", false,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Transpose || in(g, n, 0).op != Op::Transpose) return {};
             const auto &p = in(g, n, 0).attrs.perm, &q = n.attrs.perm;
             for (size_t i = 0; i < q.size(); ++i)
                 if (p[(size_t)q[i]] != (int64_t)i) return {};
             ValueId w = in(g, n, 0).inputs[0];
             if (!same_as(g, n, w)) return {};
             return use(w, "perms " + perm_str(p) + " then " + perm_str(q) + " compose to the identity; %" + g.display_name(w) +
                               " is an SSA value (a state_read is a snapshot), so no state write "
                               "can intervene");
         }},
        // transpose(x, identity perm) -> x
        {"transpose-identity", false,
         [](const Graph &, const Node &n) -> Match {
             if (n.op != Op::Transpose) return {};
             for (size_t i = 0; i < n.attrs.perm.size(); ++i)
                 if (n.attrs.perm[i] != (int64_t)i) return {};
             return use(n.inputs[0], "the permutation is the identity");
         }},
        // reshape(x) to x's own shape -> x
        {"reshape-noop", false,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Reshape || !same_as(g, n, n.inputs[0])) return {};
             return use(n.inputs[0], "the target shape " + print_type(g, n.type) + " equals the operand's shape");
         }},
        // reshape(reshape(x)) -> reshape(x)
        {"reshape-reshape", false,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Reshape || in(g, n, 0).op != Op::Reshape) return {};
             return build(Node::make(Op::Reshape, {in(g, n, 0).inputs[0]}, n.type),
                          "reshapes only reinterpret row-major order, so two compose into one");
         }},
        // cast(x) to x's own dtype -> x
        {"cast-noop", false,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Cast || !same_as(g, n, n.inputs[0])) return {};
             return use(n.inputs[0], "casting to the same dtype is the identity");
         }},
        // copy(x) into x's own layout -> x
        {"copy-noop", false,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Copy || !(n.layout == in(g, n, 0).layout)) return {};
             return use(n.inputs[0], "a copy into the layout its operand already has moves nothing");
         }},
        // cast(cast(x) : narrow float) : x's dtype -> x: drops the rounding to the narrow type,
        // which changes values, so fast mode only. Never for a weight-derived x: narrowing a weight is
        // the storage the graph asks for (the kernel reads half the bytes), not arithmetic.
        {"cast-pair", true,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Cast || in(g, n, 0).op != Op::Cast) return {};
             const ValueId x = in(g, n, 0).inputs[0];
             if (!same_as(g, n, x) || byte_size(in(g, n, 0).type.dtype) >= byte_size(n.type.dtype)) return {};
             // Through i8 the values become integers (quantizing), not f32's values rounded.
             if (!is_float(in(g, n, 0).type.dtype)) return {};
             const std::vector<char> derived = weight_derived(g);
             if (x < derived.size() && derived[x]) return {};
             return use(x, "casting down to " + std::string(to_string(in(g, n, 0).type.dtype)) +
                               " and back only rounds; fast mode may skip the rounding");
         }},
        // x * 1 -> x, 1 * x -> x
        {"mul-one", false,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Mul) return {};
             if (auto x = other_side(g, n, 1.0, true))
                 return use(*x, "x * 1 == x bit for bit in IEEE arithmetic, including NaN, inf and -0");
             return {};
         }},
        // x / 1 -> x
        {"div-one", false,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Div) return {};
             if (auto x = other_side(g, n, 1.0, false))
                 return use(*x, "x / 1 == x bit for bit in IEEE arithmetic, including NaN, inf and -0");
             return {};
         }},
        // x + (-0.0) -> x, (-0.0) + x -> x
        {"add-negative-zero", false,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Add) return {};
             if (auto x = other_side(g, n, -0.0, true))
                 return use(*x, "x + (-0) == x for every x, including x = -0 (-0 + -0 = -0) and x = +0");
             return {};
         }},
        // x - (+0.0) -> x
        {"sub-zero", false,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Sub) return {};
             if (auto x = other_side(g, n, 0.0, false)) return use(*x, "x - (+0) == x + (-0) == x for every x, including -0");
             return {};
         }},
        // neg(neg(x)) -> x
        {"neg-neg", false,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Neg || in(g, n, 0).op != Op::Neg) return {};
             return use(in(g, n, 0).inputs[0], "negation only flips the sign bit; twice is the identity");
         }},
        // abs(abs(x)) -> abs(x)
        {"abs-abs", false,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Abs || in(g, n, 0).op != Op::Abs) return {};
             return use(n.inputs[0], "abs is idempotent (it clears the sign bit)");
         }},
        // abs(neg(x)) -> abs(x)
        {"abs-neg", false,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Abs || in(g, n, 0).op != Op::Neg) return {};
             return build(Node::make(Op::Abs, {in(g, n, 0).inputs[0]}, n.type), "abs clears the sign bit that neg flipped");
         }},
        // relu(relu(x)) -> relu(x)
        {"relu-relu", false,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Relu || in(g, n, 0).op != Op::Relu) return {};
             return use(n.inputs[0], "relu is idempotent (NaN stays NaN, -0 became +0)");
         }},
        // max(x, x) -> x, min(x, x) -> x
        {"minmax-self", false,
         [](const Graph &, const Node &n) -> Match {
             if ((n.op != Op::Max && n.op != Op::Min) || n.inputs[0] != n.inputs[1]) return {};
             return use(n.inputs[0], "max and min of a value with itself return that value");
         }},
        // fast: x + 0.0 -> x   (strict refuses: -0 + 0 = +0)
        {"add-zero", true,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Add) return {};
             if (auto x = other_side(g, n, 0.0, true))
                 return use(*x, "fast mode: the sign of zero is not preserved (-0 + 0 = +0 in IEEE)");
             return {};
         }},
        // fast: x - (-0.0) -> x   (strict refuses: -0 - -0 = +0)
        {"sub-negative-zero", true,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Sub) return {};
             if (auto x = other_side(g, n, -0.0, false))
                 return use(*x, "fast mode: the sign of zero is not preserved (-0 - -0 = +0 in IEEE)");
             return {};
         }},
        // fast: x - x -> 0   (strict refuses: inf - inf = NaN, NaN - NaN = NaN)
        {"sub-self", true,
         [](const Graph &, const Node &n) -> Match {
             if (n.op != Op::Sub || n.inputs[0] != n.inputs[1]) return {};
             return build(zeros_like(n), "fast mode: values are assumed finite (inf - inf = NaN in IEEE)");
         }},
        // fast: x * 0 -> 0, 0 * x -> 0   (strict refuses: inf * 0 = NaN, -1 * 0 = -0)
        {"mul-zero", true,
         [](const Graph &g, const Node &n) -> Match {
             if (n.op != Op::Mul || !(is_splat(g, n.inputs[0], 0.0) || is_splat(g, n.inputs[1], 0.0))) return {};
             return build(zeros_like(n), "fast mode: values are assumed finite and the sign of zero ignored");
         }},
    };
    return table;
}

}  // namespace

bool simplify_algebra(Graph &g, RewriteLog *log) {
    bool changed = false;
    const bool fast = g.mode == NumericMode::Fast;
    std::vector<ValueId> order = g.order();
    for (ValueId id : order) {
        if (!g.contains(id) || !g.node(id).is_pure()) continue;
        for (const Rule &r : rules()) {
            if (r.fast_only && !fast) continue;
            Match m = r.match(g, g.node(id));
            if (!m) continue;
            std::string before = print_node(g, id);
            ValueId to = m->existing;
            std::string after;
            if (m->fresh) {
                Node fresh = *m->fresh;
                fresh.type = infer_type(g, fresh);
                fresh.loc = g.node(id).loc;
                to = g.insert_before(id, std::move(fresh));
            }
            g.replace_all_uses(id, to);
            g.erase(id);
            after = m->fresh ? print_node(g, to) : "%" + g.display_name(to);
            if (log) log->record({"simplify-algebra", r.name, before, after, m->why});
            changed = true;
            break;
        }
    }
    return changed;
}

}  // namespace tessel::dsl
