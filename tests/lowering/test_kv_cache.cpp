// The cache write update_tail (docs/TSL.md): its text form and refusals, the memory plan writing
// it in place into a donated cache (and refusing, with the reason, when the old cache is read
// afterwards or the cache is not donated), compiled runs against the interpreter either way, and
// the transformer block over a KV cache: a decode step after a prefill equals the prefill of the
// longer sequence, at L = 0, 1 and 100 past positions and T = 1, 7 and 37 new tokens (hidden 48 with
// 3 query heads, and hidden 200 with 5, bf16 weights, each over one kv head).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "algorithms/TransformerBlock.h"
#include "dsl/Pipeline.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Builder.h"
#include "dsl/ir/Diagnostics.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "tests/TensorCompare.h"

using namespace tessel;

namespace {

/** New positions computed elementwise (fused into the write), and a reader of the whole cache. */
const char *kCacheText = R"(graph cache mode=fast {
  %cache = input : f32[3, S, 8]
  %x = input : f32[3, T, 8]
  %u = update_tail(%cache, %x * 2 + 1, axis=1)
  %total = reduce_sum(%u, axes=[1])
  output %u, %total
})";

struct Planned {
    dsl::Graph g;
    dsl::FusionPlan plan;
};

Planned plan_text(const std::string &text, const std::map<std::string, int64_t> &symbols) {
    Planned p{dsl::parse(text), {}};
    dsl::default_pipeline().run(p.g);
    p.plan = dsl::plan_fusion(p.g, lower::fusion_options(parse_target("host"), symbols));
    return p;
}

const dsl::AliasDecision *cache_decision(const dsl::BufferAssignment &a) {
    for (const auto &d : a.decisions)
        if (d.rule == "cache-write") return &d;
    return nullptr;
}

}  // namespace

TEST_CASE("update_tail: text form, interpreter semantics and refusals") {
    const dsl::Graph g = dsl::parse(kCacheText);
    CHECK(dsl::print(dsl::parse(dsl::print(g))) == dsl::print(g));
    dsl::Tensor cache = dsl::Tensor::filled(dsl::DType::F32, {3, 5, 8}, -7),
                x = dsl::Tensor::filled(dsl::DType::F32, {3, 2, 8}, 0);
    for (int64_t i = 0; i < x.numel(); i++) x.data[(size_t)i] = (double)i;
    const dsl::RunResult r = dsl::interpret(g, {{"cache", cache}, {"x", x}});
    const dsl::Tensor &u = r.outputs[0];
    for (int64_t h = 0; h < 3; h++)
        for (int64_t p = 0; p < 5; p++)
            for (int64_t d = 0; d < 8; d++) {
                const double got = u.data[(size_t)((h * 5 + p) * 8 + d)];
                CHECK(got == (p < 3 ? -7.0 : 2.0 * (double)((h * 2 + p - 3) * 8 + d) + 1));
            }
    // Bad operands name the op and both shapes.
    auto refusal = [](const std::string &body) {
        try {
            dsl::parse("graph bad {\n" + body + "\n}");
        } catch (const dsl::UserError &e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    const std::string longer =
        refusal("  %c = input : f32[2, 4]\n  %v = input : f32[2, 6]\n  %u = update_tail(%c, %v, axis=1)\n  output %u");
    CHECK(longer.find("writes 6 positions into a cache of 4") != std::string::npos);
    CHECK(longer.find("cache f32[2, 4], values f32[2, 6]") != std::string::npos);
    const std::string other =
        refusal("  %c = input : f32[2, 4]\n  %v = input : f32[3, 1]\n  %u = update_tail(%c, %v, axis=1)\n  output %u");
    CHECK(other.find("needs dim 0 equal") != std::string::npos);
    // Run time: more new positions than the cache holds.
    CHECK_THROWS_WITH_AS(dsl::interpret(g, {{"cache", dsl::Tensor::filled(dsl::DType::F32, {3, 1, 8}, 0)},
                                            {"x", dsl::Tensor::filled(dsl::DType::F32, {3, 2, 8}, 0)}}),
                         doctest::Contains("more positions than the cache"), dsl::RuntimeError);
}

TEST_CASE("update_tail: the plan writes a donated cache in place; compiled runs match the interpreter") {
    for (const auto &[S, T] : {std::pair<int64_t, int64_t>{5, 2}, {1, 1}, {37, 7}, {100, 1}}) {
        CAPTURE(S);
        CAPTURE(T);
        const std::map<std::string, int64_t> symbols{{"S", S}, {"T", T}};
        Planned p = plan_text(kCacheText, symbols);
        // The elementwise values are computed in the write's kernel.
        int writes = 0;
        for (const auto &grp : p.plan.groups)
            for (dsl::ValueId v : grp.outputs)
                if (p.g.node(v).op == dsl::Op::UpdateTail) {
                    writes++;
                    CHECK(grp.nodes.size() >= 3);
                }
        CHECK(writes == 1);
        CompiledGraph program(p.g, p.plan, parse_target("host"));
        for (bool donate : {true, false}) {
            CAPTURE(donate);
            ArenaOptions o;
            if (donate) o.donated_inputs = {"cache"};
            const dsl::BufferAssignment a = program.memory_plan(symbols, o);
            const dsl::AliasDecision *d = cache_decision(a);
            REQUIRE(d);
            CHECK(d->applied == donate);
            if (!donate) CHECK(d->reason.find("did not donate") != std::string::npos);
            dsl::RunOptions ro;
            ro.random_missing_inputs = true;
            ro.symbol_sizes = symbols;
            const dsl::RunResult ref = dsl::interpret(p.g, {}, ro);
            RunStats stats;
            CHECK(testing::max_relative_difference(program.run(ref.inputs, symbols, o, &stats), ref.outputs) < 1e-5);
            CHECK(stats.planned);
        }
    }
}

TEST_CASE("update_tail: CompiledGraph::run_buffers on the caller's buffers updates one cache buffer in place") {
    const std::map<std::string, int64_t> symbols{{"S", 37}, {"T", 7}};
    Planned p = plan_text(kCacheText, symbols);
    CompiledGraph program(p.g, p.plan, parse_target("host"));
    dsl::RunOptions ro;
    ro.random_missing_inputs = true;
    ro.symbol_sizes = symbols;
    const dsl::RunResult ref = dsl::interpret(p.g, {}, ro);
    auto buffer = [](const dsl::Tensor &t) {
        Halide::Buffer<float> b(std::vector<int>(t.shape.rbegin(), t.shape.rend()));
        for (int64_t i = 0; i < t.numel(); i++) b.data()[i] = (float)t.data[(size_t)i];
        return Halide::Buffer<>(b);
    };
    Halide::Buffer<> cache = buffer(ref.inputs.at("cache")), x = buffer(ref.inputs.at("x"));
    Halide::Buffer<> total = buffer(ref.outputs[1]);
    const float *before = static_cast<const float *>(cache.data());
    for (bool donate : {true, false}) {
        CAPTURE(donate);
        Halide::Buffer<> c = buffer(ref.inputs.at("cache"));
        ArenaOptions o;
        if (donate) o.donated_inputs = {"cache"};
        // Donated: one buffer for the cache and its update. Not donated: a separate output.
        Halide::Buffer<> u = donate ? c : buffer(ref.outputs[0]);
        if (!donate) std::fill_n(static_cast<float *>(u.data()), u.number_of_elements(), NAN);
        program.run_buffers({}, {{"cache", c}, {"x", x}, {"u", u}, {"total", total}}, o);
        dsl::Tensor got = ref.outputs[0];
        for (int64_t i = 0; i < got.numel(); i++) got.data[(size_t)i] = static_cast<const float *>(u.data())[i];
        CHECK(testing::max_relative_difference({got}, {ref.outputs[0]}) == 0);
        // The undonated cache is left as it was.
        if (!donate) CHECK(std::equal(before, before + cache.number_of_elements(), static_cast<const float *>(c.data())));
    }
}

TEST_CASE("update_tail: reading the old cache after the write refuses the in-place write") {
    const std::string text = R"(graph stale mode=fast {
  %cache = input : f32[2, S, 4]
  %x = input : f32[2, T, 4]
  %u = update_tail(%cache, %x, axis=1)
  %z = reduce_sum(%u, axes=[1], keepdims=true)
  %old = reduce_sum(%cache * %z, axes=[1])
  output %u, %old
})";
    const std::map<std::string, int64_t> symbols{{"S", 9}, {"T", 3}};
    Planned p = plan_text(text, symbols);
    CompiledGraph program(p.g, p.plan, parse_target("host"));
    ArenaOptions o;
    o.donated_inputs = {"cache"};
    const dsl::BufferAssignment a = program.memory_plan(symbols, o);
    const dsl::AliasDecision *d = cache_decision(a);
    REQUIRE(d);
    CHECK_FALSE(d->applied);
    CHECK(d->reason.find("is read again at step") != std::string::npos);
    CHECK(d->reason.find("after this group overwrites it") != std::string::npos);
    dsl::RunOptions ro;
    ro.random_missing_inputs = true;
    ro.symbol_sizes = symbols;
    const dsl::RunResult ref = dsl::interpret(p.g, {}, ro);
    CHECK(testing::max_relative_difference(program.run(ref.inputs, symbols, o), ref.outputs) < 1e-6);
}

namespace {

struct BlockRun {
    std::vector<dsl::Tensor> outputs;  ///< y, k_cache_out, v_cache_out
};

/** Tokens [first, first + tokens) of `x` through the cached block, whose caches hold `past`
 * positions before this call (their first `first` rows), the new rows NaN until written. */
std::vector<dsl::Tensor> run_cached(const CompiledGraph &program, const dsl::Graph &g, const TransformerBlockShape &s,
                                    const std::map<std::string, dsl::Tensor> &weights, const dsl::Tensor &x, int64_t first,
                                    int64_t tokens, const dsl::Tensor &k_past, const dsl::Tensor &v_past, bool interpret) {
    const int64_t positions = first + tokens;
    std::map<std::string, dsl::Tensor> in = weights;
    dsl::Tensor xs = dsl::Tensor::filled(dsl::DType::F32, {tokens, s.hidden}, 0);
    for (int64_t i = 0; i < xs.numel(); i++) xs.data[(size_t)i] = x.data[(size_t)(first * s.hidden + i)];
    in["x"] = xs;
    dsl::Tensor c = dsl::Tensor::filled(dsl::DType::F32, {tokens, s.head_dim}, 0), sn = c;
    rotary_tables(first, tokens, s.head_dim, &c.data, &sn.data);
    in["cos"] = c;
    in["sin"] = sn;
    for (const auto &[name, past] : {std::pair<const char *, const dsl::Tensor *>{"k_cache", &k_past}, {"v_cache", &v_past}}) {
        // Positions outermost: the past is a prefix.
        dsl::Tensor cache = dsl::Tensor::filled(dsl::DType::F32, {positions, s.kv_heads, s.head_dim}, NAN);
        std::copy_n(past->data.begin(), first * s.kv_heads * s.head_dim, cache.data.begin());
        in[name] = cache;
    }
    const std::map<std::string, int64_t> symbols{{"T", tokens}, {"S", positions}};
    if (interpret) {
        dsl::RunOptions ro;
        ro.symbol_sizes = symbols;
        return dsl::interpret(g, in, ro).outputs;
    }
    ArenaOptions o;
    o.donated_inputs = {"k_cache", "v_cache"};
    return program.run(in, symbols, o);
}

/** Rows [from, from + count) of a [rows, width] tensor. */
dsl::Tensor rows(const dsl::Tensor &t, int64_t from, int64_t count) {
    const int64_t w = t.shape.back();
    dsl::Tensor r = dsl::Tensor::filled(t.dtype, {count, w}, 0);
    std::copy_n(t.data.begin() + from * w, count * w, r.data.begin());
    return r;
}

}  // namespace

TEST_CASE("transformer block over a KV cache: a decode step after a prefill equals the longer prefill") {
    struct Case {
        TransformerBlockShape shape;
        std::vector<std::pair<int64_t, int64_t>> steps;  ///< (past positions, new tokens)
    };
    const Case cases[] = {
        {{.hidden = 48, .heads = 3, .kv_heads = 1, .head_dim = 16, .ffn = 80, .kv_cache = true},
         {{0, 7}, {1, 1}, {100, 7}, {100, 1}, {1, 7}}},
        // Weights stored in bf16 (widened per call), 5 query heads over one kv head, T = 37.
        {{.hidden = 200, .heads = 5, .kv_heads = 1, .head_dim = 40, .ffn = 72, .bf16_weights = true, .kv_cache = true},
         {{0, 37}, {100, 1}, {1, 37}}},
    };
    for (const Case &c : cases) {
        const TransformerBlockShape &s = c.shape;
        CAPTURE(s.hidden);
        dsl::Graph g = transformer_block_graph(s);
        dsl::default_pipeline().run(g);
        const dsl::FusionPlan plan = dsl::plan_fusion(g, lower::fusion_options(parse_target("host"), {{"T", 7}, {"S", 107}}));
        CompiledGraph program(g, plan, parse_target("host"));
        // Weights: the interpreter's random ones, drawn once.
        dsl::RunOptions ro;
        ro.random_missing_inputs = true;
        ro.symbol_sizes = {{"T", 1}, {"S", 1}};
        std::map<std::string, dsl::Tensor> weights;
        for (const auto &[name, t] : dsl::interpret(g, {}, ro).inputs)
            if (name != "x" && name != "cos" && name != "sin" && name != "k_cache" && name != "v_cache") weights[name] = t;
        dsl::Tensor x = dsl::Tensor::filled(dsl::DType::F32, {137, s.hidden}, 0);
        for (int64_t i = 0; i < x.numel(); i++) x.data[(size_t)i] = std::sin(0.37 * (double)i) * 1.5;
        const dsl::Tensor none = dsl::Tensor::filled(dsl::DType::F32, {1, s.kv_heads, s.head_dim}, 0);
        for (const auto &[past, tokens] : c.steps) {
            CAPTURE(past);
            CAPTURE(tokens);
            const int64_t all = past + tokens;
            // The whole sequence as one prefill (S = T), interpreted: the reference.
            const auto full = run_cached(program, g, s, weights, x, 0, all, none, none, true);
            // The past as a prefill, compiled, then this call's tokens as a decode step over its cache.
            std::vector<dsl::Tensor> head;
            if (past > 0) head = run_cached(program, g, s, weights, x, 0, past, none, none, false);
            const dsl::Tensor &kp = past > 0 ? head[1] : none, &vp = past > 0 ? head[2] : none;
            const auto step = run_cached(program, g, s, weights, x, past, tokens, kp, vp, false);
            CHECK(testing::max_relative_difference({step[0]}, {rows(full[0], past, tokens)}) < 1e-4);
            CHECK(testing::max_relative_difference({step[1]}, {full[1]}) < 1e-4);
            CHECK(testing::max_relative_difference({step[2]}, {full[2]}) < 1e-4);
            // And the step's own interpretation agrees with its compiled run.
            const auto step_ref = run_cached(program, g, s, weights, x, past, tokens, kp, vp, true);
            CHECK(testing::max_relative_difference(step, step_ref) < 1e-5);
        }
        // Both caches are written in place.
        ArenaOptions o;
        o.donated_inputs = {"k_cache", "v_cache"};
        int in_place = 0;
        for (const auto &d : program.memory_plan({{"T", 7}, {"S", 107}}, o).decisions)
            if (d.rule == "cache-write") in_place += d.applied;
        CHECK(in_place == 2);
    }
}
