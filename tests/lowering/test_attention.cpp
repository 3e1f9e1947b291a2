// Fused attention (dsl/passes/AttentionFusion.h, lowering/Attention.cpp, schedules/AttentionSchedules.h):
// which graphs become one attention group and why others do not, and the online-softmax nest
// against the reference interpreter at awkward shapes (S = 1, 37, 1000; D = 24, 80, 128; batch
// and heads; cross attention), with additive masks (fully masked rows and blocks) and NaN / inf.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <sstream>

#include "codegen/Compile.h"
#include "dsl/Pipeline.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Parser.h"
#include "dsl/passes/AttentionFusion.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "tests/TensorCompare.h"
#include "tests/lowering/AttentionTestGraphs.h"

using namespace tessel;

namespace {

/** One attention graph: q [batch..., S, D], k [batch..., L, D], v [batch..., L, DV]. */
enum class Mask { None, Input, Causal };

std::string attention_text(const std::string &mode, const std::string &batch, int d, int dv, Mask mask,
                           const std::string &extra = "") {
    std::ostringstream s;
    s << "graph attn mode=" << mode << " {\n"
      << "  %q = input : f32[" << batch << "S, " << d << "]\n"
      << "  %k = input : f32[" << batch << "L, " << d << "]\n"
      << "  %v = input : f32[" << batch << "L, " << dv << "]\n";
    if (mask == Mask::Input) s << "  %mask = input : f32[S, L]\n";
    if (mask == Mask::Causal) s << "  %mask = causal_mask() : f32[S, L]\n";
    const int rank = 2 + (int)std::count(batch.begin(), batch.end(), ',');
    s << "  %p = softmax(matmul(%q, transpose(%k, " << testing::last_two_swapped(rank) << ")) * 0.125"
      << (mask != Mask::None ? " + %mask" : "") << ", axis=" << rank - 1 << ")\n"
      << "  %o = matmul(%p, %v)\n"
      << extra << "  output %o\n}\n";
    return s.str();
}

dsl::FusionPlan planned(dsl::Graph &g, const std::map<std::string, int64_t> &symbols) {
    dsl::default_pipeline().run(g);
    return dsl::plan_fusion(g, lower::fusion_options(parse_target("host"), symbols));
}

int attention_groups(const dsl::FusionPlan &p) {
    int n = 0;
    for (const auto &grp : p.groups) n += grp.kind == dsl::GroupKind::Attention;
    return n;
}

/** Compiles `g` (the default schedules: cpu_attention for the attention group) and compares every
 * output with the interpreter on `inputs` (random where missing). */
double error_against_interpreter(const dsl::Graph &g, const dsl::FusionPlan &plan, const std::map<std::string, int64_t> &symbols,
                                 std::map<std::string, dsl::Tensor> inputs = {}, uint64_t seed = 7) {
    dsl::RunOptions ro;
    ro.random_missing_inputs = true;
    ro.input_seed = seed;
    ro.symbol_sizes = symbols;
    const dsl::RunResult ref = dsl::interpret(g, inputs, ro);
    CompiledGraph program(g, plan, parse_target("host"));
    const auto got = program.run(ref.inputs, ref.symbols);
    return testing::max_relative_difference(got, ref.outputs);
}

}  // namespace

TEST_CASE("attention fusion: softmax(scale q k^T + mask) v is one group in fast mode, with its decision") {
    dsl::Graph g = dsl::parse(attention_text("fast", "", 64, 64, Mask::Input));
    const dsl::FusionPlan p = planned(g, {{"S", 256}, {"L", 256}});
    REQUIRE(p.groups.size() == 1);
    CHECK(p.groups[0].kind == dsl::GroupKind::Attention);
    CHECK(p.groups[0].outputs.size() == 1);
    const std::string text = p.to_string(g);
    CHECK(text.find("[fused] attention") != std::string::npos);
    CHECK(text.find("no [S, L] matrix in memory") != std::string::npos);
}

TEST_CASE("attention fusion: strict mode keeps the exact-order plan and says which mode allows it") {
    dsl::Graph g = dsl::parse(attention_text("strict", "", 64, 64, Mask::None));
    const dsl::FusionPlan p = planned(g, {{"S", 64}, {"L", 64}});
    CHECK(attention_groups(p) == 0);
    CHECK(p.groups.size() >= 2);
    const std::string text = p.to_string(g);
    CHECK(text.find("[cut] attention") != std::string::npos);
    CHECK(text.find("mode=fast") != std::string::npos);
}

TEST_CASE("attention fusion: a probability matrix read elsewhere is refused with the reader named") {
    dsl::Graph g = dsl::parse(attention_text("fast", "", 32, 32, Mask::None, "  %ps = reduce_sum(%p, axes=[0])\n  output %ps\n"));
    const dsl::FusionPlan p = planned(g, {{"S", 16}, {"L", 16}});
    CHECK(attention_groups(p) == 0);
    const std::string text = p.to_string(g);
    CHECK(text.find("is also read by %ps") != std::string::npos);
}

TEST_CASE("attention fusion: the hand-made scale forms (c * s, s / c) and no scale are the pattern") {
    for (const std::string scores :
         {"0.125 * matmul(%q, transpose(%k))", "matmul(%q, transpose(%k)) / 8.0", "matmul(%q, transpose(%k))"}) {
        INFO(scores);
        dsl::Graph g = dsl::parse(
            "graph a mode=fast {\n  %q = input : f32[S, 16]\n  %k = input : f32[S, 16]\n"
            "  %v = input : f32[S, 16]\n  %o = matmul(softmax(" +
            scores + ", axis=1), %v)\n  output %o\n}\n");
        const dsl::FusionPlan p = planned(g, {{"S", 37}});
        CHECK(attention_groups(p) == 1);
        CHECK(error_against_interpreter(g, p, {{"S", 37}}) < 1e-4);
    }
}

TEST_CASE("fused attention matches the interpreter at awkward shapes") {
    struct Case {
        std::string batch;
        int64_t s, l;
        int d, dv;
    };
    const std::vector<Case> cases = {
        {"", 1, 1, 24, 24},         {"", 37, 37, 80, 80},         {"", 1, 300, 64, 64},           {"", 37, 129, 24, 40},
        {"2, 3, ", 37, 37, 24, 24}, {"2, 3, ", 5, 257, 128, 128}, {"1, 1, ", 1000, 1000, 24, 24},
    };
    for (const Case &c : cases) {
        INFO("batch [" << c.batch << "] S=" << c.s << " L=" << c.l << " D=" << c.d << " Dv=" << c.dv);
        dsl::Graph g = dsl::parse(attention_text("fast", c.batch, c.d, c.dv, Mask::None));
        const std::map<std::string, int64_t> sym = {{"S", c.s}, {"L", c.l}};
        const dsl::FusionPlan p = planned(g, sym);
        REQUIRE(attention_groups(p) == 1);
        CHECK(error_against_interpreter(g, p, sym) < 1e-4);
    }
}

TEST_CASE("fused attention: grouped-query heads (k and v broadcast over each kv head's query heads)") {
    // q [kv heads, group, S, D] against k, v [kv heads, 1, L, D]: the batch axis of size 1 broadcasts.
    for (const auto &[kv, group, s, d] : std::vector<std::array<int, 4>>{{1, 3, 37, 24}, {2, 5, 1, 80}, {3, 2, 129, 128}}) {
        INFO("kv " << kv << " group " << group << " S=L=" << s << " D=" << d);
        std::ostringstream t;
        t << "graph gqa mode=fast {\n"
          << "  %q = input : f32[" << kv << ", " << group << ", S, " << d << "]\n"
          << "  %k = input : f32[" << kv << ", 1, S, " << d << "]\n"
          << "  %v = input : f32[" << kv << ", 1, S, " << d << "]\n"
          << "  %mask = causal_mask() : f32[S, S]\n"
          << "  %p = softmax(matmul(%q, transpose(%k, perm=[0, 1, 3, 2])) * 0.125 + %mask, axis=3)\n"
          << "  %o = matmul(%p, %v)\n  output %o\n}\n";
        dsl::Graph g = dsl::parse(t.str());
        const std::map<std::string, int64_t> sym = {{"S", s}};
        const dsl::FusionPlan p = planned(g, sym);
        REQUIRE(attention_groups(p) == 1);
        CHECK(error_against_interpreter(g, p, sym) < 1e-4);
    }
}

TEST_CASE("fused attention: masks, fully masked rows and blocks, NaN and inf as the interpreter computes them") {
    dsl::Graph g = dsl::parse(attention_text("fast", "", 16, 16, Mask::Input));
    const int64_t s = 9, l = 300;  // three key blocks, the last one partial
    const std::map<std::string, int64_t> sym = {{"S", s}, {"L", l}};
    const dsl::FusionPlan p = planned(g, sym);
    REQUIRE(attention_groups(p) == 1);
    std::map<std::string, dsl::Tensor> in = testing::random_inputs(g, sym, 3);
    dsl::Tensor &mask = in.at("mask");
    for (double &x : mask.data) x = 0;
    auto at = [&](int64_t i, int64_t j) -> double & { return mask.data[(size_t)(i * l + j)]; };
    for (int64_t j = 0; j < l; j++) at(1, j) = -INFINITY;                // row 1: fully masked (NaN)
    for (int64_t j = 0; j < 200; j++) at(2, j) = -INFINITY;              // row 2: the first block and more
    for (int64_t j = 0; j < l; j++) at(3, j) = j > 3 ? -INFINITY : 0.0;  // row 3: causal-like, 4 keys
    for (int64_t j = 128; j < l; j++) at(4, j) = -INFINITY;              // row 4: later blocks masked
    at(5, 7) = NAN;                                                      // row 5: NaN throughout
    at(6, 250) = INFINITY;                                               // row 6: +inf -> NaN
    in.at("q").data[7 * 16 + 3] = NAN;                                   // row 7: NaN from q
    in.at("q").data[8 * 16] = -0.0;
    in.at("v").data[10 * 16 + 2] = INFINITY;  // column 2: inf * p
    const double err = error_against_interpreter(g, p, sym, in);
    CHECK(err < 1e-4);
}

TEST_CASE("fused attention: no buffer of S x L elements in the memory plan") {
    dsl::Graph g = dsl::parse(attention_text("fast", "2, 4, ", 64, 64, Mask::None));
    const std::map<std::string, int64_t> sym = {{"S", 1024}, {"L", 1024}};
    const dsl::FusionPlan p = planned(g, sym);
    REQUIRE(attention_groups(p) == 1);
    CompiledGraph program(g, p, parse_target("host"));
    const dsl::BufferAssignment plan = program.memory_plan(sym);
    for (const auto &b : plan.buffers) CHECK(b.bytes < 1024 * 1024 * 4);
    // Unfused (strict), the scores of every head exist: 2 * 4 * 1024 * 1024 floats.
    dsl::Graph strict = dsl::parse(attention_text("strict", "2, 4, ", 64, 64, Mask::None));
    const dsl::FusionPlan ps = planned(strict, sym);
    CompiledGraph unfused(strict, ps, parse_target("host"));
    int64_t largest = 0;
    for (const auto &b : unfused.memory_plan(sym).buffers) largest = std::max(largest, b.bytes);
    CHECK(largest >= int64_t(2) * 4 * 1024 * 1024 * 4);
}

TEST_CASE("causal_mask: an index function the interpreter and the fused nest agree on, prefill and decode") {
    // S = L (prefill), S < L (the queries are the last S positions: decode against a cache).
    for (const auto &[sq, l] : std::vector<std::pair<int64_t, int64_t>>{{37, 37}, {1, 300}, {7, 200}, {130, 130}}) {
        INFO("S=" << sq << " L=" << l);
        dsl::Graph g = dsl::parse(attention_text("fast", "2, ", 24, 24, Mask::Causal));
        const std::map<std::string, int64_t> sym = {{"S", sq}, {"L", l}};
        const dsl::FusionPlan p = planned(g, sym);
        REQUIRE(attention_groups(p) == 1);
        CHECK(error_against_interpreter(g, p, sym) < 1e-4);
    }
    dsl::Graph g = dsl::parse("graph m {\n  %m = causal_mask() : f32[3, 4]\n  output %m\n}\n");
    const dsl::Tensor m = dsl::interpret(g).outputs[0];
    const std::vector<double> want = {0, 0, -INFINITY, -INFINITY, 0, 0, 0, -INFINITY, 0, 0, 0, 0};
    CHECK(m.data == want);
}

TEST_CASE("attention fusion: softmax written out as exp(s - max) / sum is the same pattern") {
    dsl::Graph g = dsl::parse(
        "graph a mode=fast {\n  %q = input : f32[2, S, 16]\n  %k = input : f32[2, L, 16]\n"
        "  %v = input : f32[2, L, 8]\n  %s = matmul(%q, transpose(%k, perm=[0, 2, 1])) * 0.25\n"
        "  %e = exp(%s - reduce_max(%s, axes=[2], keepdims=true))\n"
        "  %p = %e / reduce_sum(%e, axes=[2], keepdims=true)\n  %o = matmul(%p, %v)\n  output %o\n}\n");
    const std::map<std::string, int64_t> sym = {{"S", 37}, {"L", 150}};
    const dsl::FusionPlan p = planned(g, sym);
    REQUIRE(attention_groups(p) == 1);
    CHECK(p.groups.size() == 1);
    CHECK(error_against_interpreter(g, p, sym) < 1e-4);
}

TEST_CASE("random attention graphs: shapes, scales, masks and softmax forms, special values, against the interpreter") {
    std::mt19937_64 rng(33);
    for (int trial = 0; trial < 8; trial++) {
        const auto r =
            testing::RandomAttention::draw(rng, {1, 5, 16, 24}, {1, 7, 16, 33}, {1, 3, 8, 17}, {1, 5, 17, 130, 257}, false);
        INFO(r.text(false));
        dsl::Graph g = dsl::parse(r.text(false));
        const std::map<std::string, int64_t> sym = r.symbols();
        const dsl::FusionPlan plan = planned(g, sym);
        REQUIRE(attention_groups(plan) == 1);
        std::map<std::string, dsl::Tensor> in = testing::random_inputs(g, sym, 500 + (uint64_t)trial);
        // Under a causal mask, fast mode never reads the key blocks it hides (docs/TSL.md): NaN
        // or inf planted there would reach the interpreter's output only (NaN + -inf, 0 * NaN).
        if (trial % 2)
            testing::plant_special_values(in, rng, [&](const std::string &name) { return r.mask != 2 || name == "q"; });
        CHECK(error_against_interpreter(g, plan, sym, in) < 1e-4);
    }
}
