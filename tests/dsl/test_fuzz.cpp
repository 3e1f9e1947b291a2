// Differential fuzz test: random graphs in strict mode must give bit-identical interpreter results
// (outputs, printed text, final state) before and after the default pipeline, and must print and
// parse back identically. TESSEL_FUZZ_ITERS (default 2000) and TESSEL_FUZZ_SEED select the run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
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
    explicit GraphGen(uint64_t seed) : rng_(seed) {}

    Graph generate() {
        g_.name = "fuzz";
        int n_inputs = 1 + pick(3);
        for (int i = 0; i < n_inputs; ++i) {
            TensorType t{DType::F32, {}};
            int rank = 1 + pick(3);
            for (int d = 0; d < rank; ++d)
                t.dims.push_back(d == 0 && pick(4) == 0 ? Dim::sym("M") : Dim::fixed(1 + pick(3)));
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
    ValueId keep(ValueId v) { pool_.push_back(v); return v; }

    double special() {
        static const double vals[] = {0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.25, -7.0, NAN, INFINITY, -INFINITY, 1e-40, 65504.0};
        return vals[pick(13)];
    }
    ValueId constant(const TensorType &t) {
        Attrs a;
        if (t.all_static() && pick(2)) {
            for (int64_t i = 0; i < t.static_numel(); ++i) a.value.push_back(pick(3) ? (double)(float)(pick(200) / 16.0 - 6) : special());
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
            for (ValueId p : pool_) if (same_type(g_, type(p), type(v))) same.push_back(p);
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

    void step() {
        ValueId v = any();
        int r = type(v).rank();
        static const Op unary[] = {Op::Gelu, Op::GeluTanh, Op::Tanh, Op::Exp, Op::Relu, Op::Neg, Op::Abs, Op::Sqrt, Op::Rsqrt};
        static const Op binary[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Max, Op::Min};
        switch (pick(14)) {
        case 0: keep(add(unary[pick(9)], {v})); break;
        case 1: case 2: {
            ValueId w = partner(v);
            keep(pick(2) ? add(binary[pick(6)], {v, w}) : add(binary[pick(6)], {w, v}));
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
            } else b.perm = random_perm(r);
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
            for (int i = 0; i < r; ++i) if (pick(2)) a.axes.push_back(i);
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
                    if (same_type(g_, type(p), it->second)) { add(Op::StateWrite, {p}, a); break; }
                break;
            case 2: a.text = "p" + std::to_string(pick(9)); add(Op::Print, {v}, a); break;
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
    Graph g_;
    std::vector<ValueId> pool_;
    std::map<std::string, TensorType> state_types_;
};

uint64_t env_or(const char *name, uint64_t dflt) {
    const char *s = std::getenv(name);
    return s ? std::strtoull(s, nullptr, 10) : dflt;
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
        for (const char *rule : {"fold-constant", "fold-dim", "transpose-pair-identity", "cse-pure", "dead-value", "mul-one", "neg-neg"})
            CHECK_MESSAGE(rules[rule] > 0, "rule never fired: " << rule);
    }
}
