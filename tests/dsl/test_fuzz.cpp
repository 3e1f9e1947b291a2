// Differential fuzz test: random graphs in strict mode must give bit-identical interpreter results
// (outputs, printed text, final state) before and after the default pipeline, and must print and
// parse back identically. Random graphs in fast mode (a quarter as many) must stay within the
// reassociation bound derived above fast_tolerance(). TESSEL_FUZZ_ITERS (default 2000) and
// TESSEL_FUZZ_SEED select the run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <map>
#include <numeric>
#include <random>

#include "TestUtil.h"
#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/TypeInference.h"

using namespace tessel::dsl;

namespace {

class GraphGen {
public:
    /** `fast`: a mode=fast graph whose constants are finite normal numbers (see fast_tolerance),
     * with extra add/mul chains for reassociation, some of them sharing a subterm. Strict
     * graphs are the same for a seed as before the option existed. */
    explicit GraphGen(uint64_t seed, bool fast = false) : rng_(seed), fast_(fast) {}

    Graph generate() {
        g_.name = "fuzz";
        if (fast_) g_.mode = NumericMode::Fast;
        int n_inputs = 1 + pick(3);
        for (int i = 0; i < n_inputs; ++i) {
            TensorType t{DType::F32, {}};
            int rank = 1 + pick(3);
            for (int d = 0; d < rank; ++d) t.dims.push_back(d == 0 && pick(4) == 0 ? Dim::sym("M") : Dim::fixed(1 + pick(3)));
            pool_.push_back(g_.add(Node::make(Op::Input, {}, t, "in" + std::to_string(i))));
        }
        int steps = 6 + pick(20);
        for (int i = 0; i < steps; ++i) step();
        int n_out = 1 + pick(3);
        for (int i = 0; i < n_out; ++i) g_.outputs.push_back(any());
        return std::move(g_);
    }

private:
    int pick(int n) { return (int)(rng_() % (uint64_t)n); }
    ValueId any() { return pool_[(size_t)pick((int)pool_.size())]; }
    const TensorType &type(ValueId v) { return g_.node(v).type; }
    ValueId add(Op op, std::vector<ValueId> in, Attrs a = {}, std::optional<TensorType> t = {}) {
        return g_.add(make_node(g_, op, std::move(in), std::move(a), std::move(t)));
    }
    ValueId keep(ValueId v) {
        pool_.push_back(v);
        return v;
    }

    double special() {
        static const double vals[] = {0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.25, -7.0, NAN, INFINITY, -INFINITY, 1e-40, 65504.0};
        static const double normal[] = {0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.25, -7.0, 65504.0};  // fast: finite, not subnormal
        return fast_ ? normal[pick(9)] : vals[pick(13)];
    }
    ValueId constant(const TensorType &t) {
        Attrs a;
        if (t.all_static() && pick(2)) {
            for (int64_t i = 0; i < t.static_numel(); ++i)
                a.value.push_back(pick(3) ? (double)(float)(pick(200) / 16.0 - 6) : special());
            if (a.value.size() == 1) a.value.push_back(0), a.value.pop_back();
        } else {
            a.value = {special()};
        }
        for (double &v : a.value) v = (double)(float)v;
        return g_.add(Node::make(Op::Constant, {}, t, {}, a));
    }
    /** A second operand for a binary op with v: same-type value, scalar or same-type constant. */
    ValueId partner(ValueId v) {
        int c = pick(4);
        if (c == 0) {
            std::vector<ValueId> same;
            for (ValueId p : pool_)
                if (same_type(g_, type(p), type(v))) same.push_back(p);
            return same[(size_t)pick((int)same.size())];
        }
        if (c == 1) return constant(TensorType{DType::F32, {}});
        return constant(type(v));
    }
    std::vector<int64_t> random_perm(int r) {
        std::vector<int64_t> p(r);
        std::iota(p.begin(), p.end(), 0);
        std::shuffle(p.begin(), p.end(), rng_);
        return p;
    }

    /** A chain of 3-8 terms of one op (v, values like v, constants) in a random bracketing;
     * sometimes a subterm is used twice by one node (s + s) or written twice (CSE merges it). */
    void chain(ValueId v) {
        const Op op = pick(3) ? Op::Add : Op::Mul;
        std::vector<ValueId> terms{v};
        for (int k = 3 + pick(6); (int)terms.size() < k;) terms.push_back(pick(3) ? partner(v) : v);
        while (terms.size() > 1) {
            const size_t i = (size_t)pick((int)terms.size() - 1);
            const ValueId a = terms[i], b = terms[i + 1];
            switch (pick(6)) {
            case 0: terms[i] = add(op, {a, a}); break;  // shared: one node reads a twice
            case 1:
                terms[i] = add(op, {add(op, {a, b}), add(op, {a, b})});
                terms.erase(terms.begin() + (long)i + 1);
                break;
            default: terms[i] = add(op, {a, b}); terms.erase(terms.begin() + (long)i + 1);
            }
        }
        keep(terms[0]);
    }

    void step() {
        ValueId v = any();
        if (fast_ && pick(3) == 0) return chain(v);
        int r = type(v).rank();
        static const Op unary[] = {Op::Gelu, Op::GeluTanh, Op::Tanh, Op::Exp,     Op::Relu, Op::Neg, Op::Abs,
                                   Op::Sqrt, Op::Rsqrt,    Op::Log,  Op::Sigmoid, Op::Silu, Op::Sin, Op::Cos};
        static const Op binary[] = {Op::Add,  Op::Sub,       Op::Mul,     Op::Div,          Op::Max,   Op::Min,
                                    Op::Less, Op::LessEqual, Op::Greater, Op::GreaterEqual, Op::Equal, Op::NotEqual};
        const int nu = (int)std::size(unary), nb = (int)std::size(binary);
        switch (pick(14)) {
        case 0: keep(add(unary[pick(nu)], {v})); break;
        case 1:
        case 2: {
            ValueId w = partner(v);
            if (pick(4) == 0) {  // where(v cmp w, v, w) or with the operands swapped
                const ValueId c = add(binary[6 + pick(6)], {v, w});
                keep(pick(2) ? add(Op::Where, {c, v, w}) : add(Op::Where, {c, w, v}));
                break;
            }
            keep(pick(2) ? add(binary[pick(nb)], {v, w}) : add(binary[pick(nb)], {w, v}));
            break;
        }
        case 3: {  // transpose pair: inverse or not
            if (r < 2) break;
            Attrs a, b;
            a.perm = random_perm(r);
            ValueId t = add(Op::Transpose, {v}, a);
            if (pick(2)) {
                b.perm.assign((size_t)r, 0);
                for (int i = 0; i < r; ++i) b.perm[(size_t)a.perm[(size_t)i]] = i;
            } else
                b.perm = random_perm(r);
            keep(add(Op::Transpose, {t}, b));
            break;
        }
        case 4: {  // reshape through shape code: flatten the first two dims
            if (r < 2) break;
            Attrs a0, a1;
            a0.axis = 0;
            a1.axis = 1;
            ValueId k0 = add(Op::ShapeOf, {v}, a0), k1 = add(Op::ShapeOf, {v}, a1);
            ValueId p = add(Op::ShapeMul, {k0, k1});
            TensorType t{DType::F32, {Dim::ref(p)}};
            for (int i = 2; i < r; ++i) t.dims.push_back(type(v).dims[(size_t)i]);
            ValueId f = add(Op::Reshape, {v}, {}, t);
            keep(pick(2) ? f : add(Op::Reshape, {f}, {}, type(v)));
            break;
        }
        case 5: {
            if (r == 0) break;
            Attrs a;
            for (int i = 0; i < r; ++i)
                if (pick(2)) a.axes.push_back(i);
            if (a.axes.empty()) a.axes.push_back(pick(r));
            a.keepdims = pick(2);
            static const Op red[] = {Op::ReduceSum, Op::ReduceMax, Op::ReduceMean};
            keep(add(red[pick(3)], {v}, a));
            break;
        }
        case 6: {
            if (r == 0) break;
            Attrs a;
            a.axis = pick(r);
            keep(add(Op::Softmax, {v}, a));
            break;
        }
        case 7: {  // matmul with its own transpose (2-D or batched)
            if (r < 2) break;
            Attrs a;
            a.perm = random_perm(r);
            a.perm.clear();
            for (int i = 0; i < r - 2; ++i) a.perm.push_back(i);
            a.perm.push_back(r - 1);
            a.perm.push_back(r - 2);
            keep(add(Op::MatMul, {v, add(Op::Transpose, {v}, a)}));
            break;
        }
        case 8: {  // cast round trip through a narrow type
            TensorType t = type(v);
            t.dtype = pick(2) ? DType::F16 : DType::BF16;
            ValueId c = add(Op::Cast, {v}, {}, t);
            if (pick(2)) c = add(unary[pick(9)], {c});
            keep(add(Op::Cast, {c}, {}, type(v)));
            break;
        }
        case 9: {  // identity patterns, exact and inexact
            switch (pick(8)) {
            case 0: keep(add(Op::Neg, {add(Op::Neg, {v})})); break;
            case 1: keep(add(Op::Abs, {add(Op::Neg, {v})})); break;
            case 2: keep(add(Op::Relu, {add(Op::Relu, {v})})); break;
            case 3: keep(add(pick(2) ? Op::Max : Op::Sub, {v, v})); break;
            case 4: keep(add(Op::Cast, {v}, {}, type(v))); break;
            case 5: keep(add(Op::Reshape, {v}, {}, type(v))); break;
            default: {
                Attrs a;
                a.value = {pick(2) ? 1.0 : (pick(2) ? 0.0 : -0.0)};
                ValueId c = g_.add(Node::make(Op::Constant, {}, TensorType{DType::F32, {}}, {}, a));
                static const Op ops[] = {Op::Mul, Op::Add, Op::Sub, Op::Div};
                keep(pick(2) ? add(ops[pick(4)], {v, c}) : add(ops[pick(4)], {c, v}));
            }
            }
            break;
        }
        case 10: {  // duplicate an earlier pure node
            std::vector<ValueId> pure;
            for (ValueId id : g_.order())
                if (g_.node(id).is_pure() && g_.node(id).op != Op::Input) pure.push_back(id);
            if (pure.empty()) break;
            Node copy = g_.node(pure[(size_t)pick((int)pure.size())]);
            copy.name.clear();
            ValueId d = g_.add(copy);
            if (type(d).dtype == DType::F32 && g_.node(d).has_result()) keep(d);
            break;
        }
        case 11: {  // constant-only arithmetic
            TensorType t{DType::F32, {Dim::fixed(1 + pick(3))}};
            keep(add(binary[pick(6)], {constant(t), constant(t)}));
            break;
        }
        case 12: {  // random draws
            Attrs a;
            a.seed = (uint64_t)pick(3);
            keep(add(pick(2) ? Op::RandomUniform : Op::RandomNormal, {}, a, type(v)));
            break;
        }
        default: {  // state, print, assert
            std::string var = "s" + std::to_string(pick(2));
            auto it = state_types_.find(var);
            if (it == state_types_.end()) it = state_types_.emplace(var, type(v)).first;
            Attrs a;
            a.var = var;
            switch (pick(4)) {
            case 0: keep(add(Op::StateRead, {}, a, it->second)); break;
            case 1:
                for (ValueId p : pool_)
                    if (same_type(g_, type(p), it->second)) {
                        add(Op::StateWrite, {p}, a);
                        break;
                    }
                break;
            case 2:
                a.text = "p" + std::to_string(pick(9));
                add(Op::Print, {v}, a);
                break;
            default: {
                Attrs one;
                one.value = {1.0};
                ValueId c = g_.add(Node::make(Op::Constant, {}, TensorType{DType::F32, {}}, {}, one));
                a.text = "abs(v) + 1 is never zero";
                add(Op::Assert, {add(Op::Add, {add(Op::Abs, {v}), c})}, a);
            }
            }
        }
        }
    }

    std::mt19937_64 rng_;
    bool fast_;
    Graph g_;
    std::vector<ValueId> pool_;
    std::map<std::string, TensorType> state_types_;
};

uint64_t env_or(const char *name, uint64_t dflt) {
    const char *s = std::getenv(name);
    return s ? std::strtoull(s, nullptr, 10) : dflt;
}

RunOptions fuzz_options(uint64_t seed) {
    RunOptions o;
    o.random_missing_inputs = true;
    o.input_seed = seed;
    o.symbol_sizes["M"] = 2;
    return o;
}

// ---- Fast mode: how far the pipeline may move a result ----------------------------------------
// Of fast mode's rules only reassociation and cast-pair elision change finite results (x + 0 -> x,
// x - x -> 0 and x * 0 -> 0 are exact for finite x up to the sign of zero, which the comparison
// ignores). Eliding cast(cast(x) : f16) : f32 moves the outer cast's value by exactly
// |x - round(x)|, which is that cast's delta below.
//  * A sum of n terms t_i evaluated in float32 in any order is within g(n-1) sum |t_i| of the
//    exact sum, g(k) = k u / (1 - k u), u = 2^-24 (Higham, Accuracy and Stability of Numerical
//    Algorithms, 4.2), so two orders differ by at most 2 g(n-1) sum |t_i| ~ (n-1) 2^-23 sum |t_i|;
//    a product of n factors by (n-1) 2^-23 |product| (3.1). That is `delta` at a chain's top.
//  * The pass reassociates chains inside the maximal add (mul) trees of the original graph;
//    trees are taken here ignoring sharing (CSE and DCE change which nodes are shared, so which
//    subtrees become chains of their own, but cutting a tree into chains adds errors whose bounds
//    sum to no more than the tree's). Each tree top with 3 or more leaves gets its delta.
//  * Ops after a chain carry its error on (softmax and exp turn absolute input error into
//    relative output error), so the allowed difference at each output element is measured on
//    the graph itself: the original is run again with one element of one top moved by +delta
//    and by -delta; the larger change counts, changes add over elements and tops (first order,
//    triangle inequality), and the sum is doubled for second-order effects, plus 4 ulps of the
//    output for rounding after it.
//  * Fast mode assumes finite values, so a graph whose original run makes NaN or inf anywhere is
//    checked only for structure; so is one that makes a subnormal value, where rounding errors
//    are absolute (up to 2^-150) and the relative bound on products does not hold. Reassociation may form partial products the written order never
//    does, so an output may overflow only after it; such outputs are counted and must be rare.

/** Element e of a tensor of shape `out`, read from `t` under numpy broadcasting. */
double broadcast_at(const Tensor &t, const std::vector<int64_t> &out, int64_t e) {
    int64_t idx = 0, stride = 1;
    for (size_t k = 0; k < out.size(); ++k) {
        const int64_t i = e % out[out.size() - 1 - k];
        e /= out[out.size() - 1 - k];
        if (k < t.shape.size()) {
            const int64_t d = t.shape[t.shape.size() - 1 - k];
            idx += (d == 1 ? 0 : i) * stride;
            stride *= d;
        }
    }
    return t.data[(size_t)idx];
}

/** Every value `g` computes (results of pure, effect-free float nodes), by id. */
std::map<ValueId, Tensor> all_values(const Graph &g, const std::map<std::string, Tensor> &inputs, const RunOptions &o) {
    Graph probe = g;
    probe.outputs.clear();
    for (ValueId id : g.order())
        if (g.node(id).has_result() && is_float(g.node(id).type.dtype)) probe.outputs.push_back(id);
    InterpreterState st;
    RunResult r = interpret(probe, inputs, st, o);
    std::map<ValueId, Tensor> values;
    for (size_t i = 0; i < probe.outputs.size(); ++i) values[probe.outputs[i]] = std::move(r.outputs[i]);
    return values;
}

/** Outputs, then final state variables in name order: everything a run leaves behind. */
std::vector<Tensor> observables(const Graph &g, const std::map<std::string, Tensor> &inputs, const RunOptions &o,
                                std::string *printed = nullptr) {
    InterpreterState st;
    RunResult r = interpret(g, inputs, st, o);
    for (auto &[name, t] : st.vars) r.outputs.push_back(t);
    if (printed) *printed = r.printed;
    return r.outputs;
}

/** The per-element reassociation bound (see above) at every add/mul tree top of g with >= 3 leaves. */
std::map<ValueId, std::vector<double>> reassociation_deltas(const Graph &g, const std::map<ValueId, Tensor> &values) {
    auto in_tree = [&](ValueId child, const Node &parent) {
        const Node &c = g.node(child);
        return c.op == parent.op && same_type(g, c.type, parent.type);
    };
    std::map<ValueId, double> leaves;                // leaves of the tree below each add/mul node
    std::map<ValueId, std::vector<double>> abs_sum;  // sum of |leaf| per element (add trees)
    for (ValueId id : g.order()) {
        const Node &n = g.node(id);
        if ((n.op != Op::Add && n.op != Op::Mul) || !values.count(id)) continue;
        const Tensor &v = values.at(id);
        leaves[id] = 0;
        abs_sum[id].assign(v.data.size(), 0.0);
        for (ValueId in : n.inputs) {
            const bool inner = in_tree(in, n);
            leaves[id] += inner ? leaves.at(in) : 1;
            for (size_t e = 0; e < v.data.size(); ++e)
                abs_sum[id][e] += inner ? abs_sum.at(in)[e] : std::fabs(broadcast_at(values.at(in), v.shape, (int64_t)e));
        }
    }
    std::map<ValueId, std::vector<double>> deltas;
    for (const auto &[id, n_leaves] : leaves) {
        const Node &n = g.node(id);
        bool top = g.is_output(id);
        for (ValueId u : g.users(id)) top = top || !in_tree(id, g.node(u));
        if (!top || n_leaves < 3) continue;
        const Tensor &v = values.at(id);
        std::vector<double> &d = deltas[id];
        for (size_t e = 0; e < v.data.size(); ++e)
            d.push_back((n_leaves - 1) * 0x1p-23 * (n.op == Op::Add ? abs_sum.at(id)[e] : std::fabs(v.data[e])));
    }
    return deltas;
}

/** Per element, what eliding the down-then-up cast pairs below each cast changes: |x - value|,
 * x the first value below the chain of casts (elided pairs can chain: cast(cast(cast(cast(x))))). */
std::map<ValueId, std::vector<double>> cast_pair_deltas(const Graph &g, const std::map<ValueId, Tensor> &values) {
    std::map<ValueId, std::vector<double>> deltas;
    for (ValueId id : g.order()) {
        const Node &n = g.node(id);
        if (n.op != Op::Cast || g.node(n.inputs[0]).op != Op::Cast || !values.count(id)) continue;
        ValueId x = n.inputs[0];
        while (g.node(x).op == Op::Cast) x = g.node(x).inputs[0];
        if (!values.count(x) || values.at(x).data.size() != values.at(id).data.size()) continue;
        std::vector<double> &d = deltas[id];
        for (size_t e = 0; e < values.at(id).data.size(); ++e)
            d.push_back(std::fabs(values.at(x).data[e] - values.at(id).data[e]));
    }
    return deltas;
}

/** g with `delta` (per element, times `sign`) added to value v before any use of it. */
Graph perturbed(const Graph &g, ValueId v, const std::vector<double> &delta, double sign) {
    Graph h = g;
    Attrs a;
    for (double d : delta) a.value.push_back(sign * d);
    if (a.value.size() == 1) a.value.push_back(0), a.value.pop_back();
    const std::vector<ValueId> order = h.order();
    const size_t pos = (size_t)(std::find(order.begin(), order.end(), v) - order.begin());
    const ValueId next = pos + 1 < order.size() ? order[pos + 1] : kNoValue;
    auto place = [&](Node n) { return next == kNoValue ? h.add(std::move(n)) : h.insert_before(next, std::move(n)); };
    const ValueId c = place(Node::make(Op::Constant, {}, h.node(v).type, {}, a));
    const ValueId p = place(make_node(h, Op::Add, {v, c}));
    h.replace_all_uses(v, p);
    h.node(p).inputs[0] = v;
    return h;
}

/** Allowed |fast - original| per element of each observable (see above); +inf where a moved run overflows. */
std::vector<std::vector<double>> fast_tolerance(const Graph &g, const std::map<std::string, Tensor> &inputs, const RunOptions &o,
                                                const std::vector<Tensor> &base) {
    std::vector<std::vector<double>> tol(base.size());
    for (size_t k = 0; k < base.size(); ++k) tol[k].assign(base[k].data.size(), 0.0);
    const std::map<ValueId, Tensor> values = all_values(g, inputs, o);
    std::map<ValueId, std::vector<double>> deltas = reassociation_deltas(g, values);
    for (auto &[v, delta] : cast_pair_deltas(g, values)) deltas.emplace(v, std::move(delta));
    for (const auto &[v, delta] : deltas) {
        // One element at a time: the errors of a top's elements are independent (moving them
        // all one way would hide, e.g., everything a softmax over them sees).
        for (size_t i = 0; i < delta.size(); ++i) {
            if (delta[i] == 0) continue;
            std::vector<double> one(delta.size(), 0.0);
            one[i] = delta[i];
            std::vector<std::vector<double>> change(base.size());
            for (size_t k = 0; k < base.size(); ++k) change[k].assign(base[k].data.size(), 0.0);
            for (double sign : {1.0, -1.0}) {
                const std::vector<Tensor> moved = observables(perturbed(g, v, one, sign), inputs, o);
                for (size_t k = 0; k < base.size(); ++k)
                    for (size_t e = 0; e < base[k].data.size(); ++e) {
                        const double m = moved[k].data[e], b = base[k].data[e];
                        change[k][e] = std::max(change[k][e], std::isfinite(m) ? std::fabs(m - b) : INFINITY);
                    }
            }
            for (size_t k = 0; k < base.size(); ++k)
                for (size_t e = 0; e < base[k].data.size(); ++e) tol[k][e] += 2 * change[k][e];
        }
    }
    for (size_t k = 0; k < base.size(); ++k)
        for (size_t e = 0; e < base[k].data.size(); ++e) tol[k][e] += 4 * 0x1p-23 * std::fabs(base[k].data[e]);
    return tol;
}

/** The labels of print's lines ("p3: f32[2] [...]" -> "p3"): the values may move in fast mode. */
std::vector<std::string> print_labels(const std::string &printed) {
    std::vector<std::string> labels;
    for (size_t at = 0; at < printed.size();) {
        const size_t eol = printed.find('\n', at);
        labels.push_back(printed.substr(at, printed.find(':', at) - at));
        at = eol == std::string::npos ? printed.size() : eol + 1;
    }
    return labels;
}

}  // namespace

TEST_CASE("differential: strict pipeline preserves interpreter results bit for bit") {
    const uint64_t iters = env_or("TESSEL_FUZZ_ITERS", 2000), base = env_or("TESSEL_FUZZ_SEED", 0);
    int changed = 0;
    std::map<std::string, int> rules;
    for (uint64_t i = 0; i < iters; ++i) {
        const uint64_t seed = base + i;
        Graph g = GraphGen(seed).generate();
        std::string text = print(g);
        INFO("seed " << seed << "\n" << text);
        REQUIRE(verify(g).empty());
        REQUIRE(print(parse(text)) == text);

        RunOptions o;
        o.random_missing_inputs = true;
        o.input_seed = seed;
        o.symbol_sizes["M"] = 2;
        // Random inputs with IEEE corner values mixed in (-0, +-inf, NaN), so that rewrites that
        // are exact only for finite or positive-zero values show up as differences.
        std::map<std::string, Tensor> inputs = interpret(g, {}, o).inputs;
        std::mt19937_64 rng(seed);
        const double corner[] = {-0.0, 0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0};
        for (auto &[name, t] : inputs)
            for (double &v : t.data)
                if (rng() % 6 == 0) v = corner[rng() % 7];
        InterpreterState s0, s1;
        RunResult a = interpret(g, inputs, s0, o);

        SimplifyResult r = simplify_graph(g);
        INFO("simplified\n" << r.graph_text << r.log_text);
        CHECK(r.converged);
        REQUIRE(verify(r.graph).empty());
        REQUIRE(print(parse(r.graph_text)) == r.graph_text);
        changed += r.log.size() > 0;
        for (const auto &rec : r.log.records()) ++rules[rec.rule];

        RunResult b = interpret(r.graph, a.inputs, s1, o);
        REQUIRE(a.outputs.size() == b.outputs.size());
        for (size_t k = 0; k < a.outputs.size(); ++k) {
            INFO("output " << k << ": " << to_string(a.outputs[k]) << " vs " << to_string(b.outputs[k]));
            CHECK(bitwise_equal(a.outputs[k], b.outputs[k]));
        }
        CHECK(a.printed == b.printed);
        REQUIRE(s0.vars.size() == s1.vars.size());
        for (const auto &[name, t] : s0.vars) CHECK(bitwise_equal(t, s1.vars.at(name)));
    }
    // The generator must actually exercise the passes.
    MESSAGE("graphs changed by the pipeline: " << changed << "/" << iters);
    CHECK(changed > (int)iters / 2);
    if (iters >= 200) {
        for (const char *rule :
             {"fold-constant", "fold-dim", "transpose-pair-identity", "cse-pure", "dead-value", "mul-one", "neg-neg"})
            CHECK_MESSAGE(rules[rule] > 0, "rule never fired: " << rule);
    }
}

TEST_CASE("differential: fast pipeline moves results by no more than reassociation allows") {
    // Fast-mode graphs (finite constants, extra add/mul chains, some shared as in (x + y) + (x + y))
    // on finite random inputs; the bound is derived above fast_tolerance. A quarter as many graphs
    // as the strict run: each costs two extra interpretations per chain.
    const uint64_t iters = env_or("TESSEL_FUZZ_ITERS", 2000) / 4, base = env_or("TESSEL_FUZZ_SEED", 0);
    int compared = 0, reassociated = 0, overflowed = 0;
    double worst = 0;  // largest |difference| / tolerance seen
    for (uint64_t i = 0; i < iters; ++i) {
        const uint64_t seed = base + i;
        Graph g = GraphGen(seed, /*fast=*/true).generate();
        const std::string text = print(g);
        INFO("seed " << seed << "\n" << text);
        REQUIRE(verify(g).empty());
        REQUIRE(print(parse(text)) == text);
        const RunOptions o = fuzz_options(seed);
        const std::map<std::string, Tensor> inputs = interpret(g, {}, o).inputs;

        SimplifyResult r = simplify_graph(g);
        INFO("simplified\n" << r.graph_text << r.log_text);
        CHECK(r.converged);
        REQUIRE(verify(r.graph).empty());
        REQUIRE(print(parse(r.graph_text)) == r.graph_text);
        bool any_reassociation = false;
        for (const auto &rec : r.log.records()) any_reassociation |= rec.pass == "reassociate";
        reassociated += any_reassociation;

        bool finite = true;  // and normal or zero
        for (const auto &[id, t] : all_values(g, inputs, o))
            for (double v : t.data) finite = finite && std::isfinite(v) && (v == 0 || std::fabs(v) >= 0x1p-126);
        std::string printed_a, printed_b;
        const std::vector<Tensor> a = observables(g, inputs, o, &printed_a);
        const std::vector<Tensor> b = observables(r.graph, inputs, o, &printed_b);
        REQUIRE(a.size() == b.size());
        CHECK(print_labels(printed_a) == print_labels(printed_b));
        if (!finite) continue;  // fast mode promises nothing for NaN or inf (nor the bound for subnormals)
        ++compared;
        const auto tol = fast_tolerance(g, inputs, o, a);
        bool overflow = false;
        for (size_t k = 0; k < a.size(); ++k) {
            REQUIRE(a[k].shape == b[k].shape);
            for (size_t e = 0; e < a[k].data.size(); ++e) {
                const double want = a[k].data[e], got = b[k].data[e], d = std::fabs(got - want);
                if (!std::isfinite(got)) {  // inf, or NaN from it (inf * 0 where the written order kept 0)
                    overflow = true;
                    continue;
                }
                if (tol[k][e] > 0 && std::isfinite(tol[k][e])) worst = std::max(worst, d / tol[k][e]);
                CHECK_MESSAGE(d <= tol[k][e], "observable " << k << " element " << e << ": " << got << " vs " << want
                                                            << ", allowed " << tol[k][e]);
            }
        }
        overflowed += overflow;
    }
    MESSAGE("fast: " << compared << "/" << iters << " graphs compared, " << reassociated << " reassociated, " << overflowed
                     << " overflowed only after reassociation; worst difference / bound " << worst);
    CHECK(compared > (int)iters / 2);
    CHECK(reassociated > (int)iters / 2);
    CHECK(overflowed <= 1 + (int)iters / 50);
}
