// Attention backward (dsl/passes/AttentionBackward.h, lowering/AttentionBackward.cpp,
// cpu_attention_backward): the rewrite that gives the backward its own probabilities, which
// graphs become an attention-backward group and why others do not, the memory plan without an
// [S, L] buffer, and dQ, dK, dV against the reference interpreter at awkward shapes (S = 1, 37,
// 1000; D = 24, 80, 128; batch and heads, grouped-query heads, cross attention; random graphs), with masks,
// fully masked rows, NaN and ±inf.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "codegen/Compile.h"
#include "dsl/Pipeline.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "dsl/passes/AttentionBackward.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "tests/TensorCompare.h"
#include "tests/lowering/AttentionTestGraphs.h"

using namespace tessel;

namespace {

enum class Mask { None, Input, Causal };

struct Shape {
    std::string q_batch, kv_batch;  ///< "2, 3, " and the like; k and v may broadcast (grouped-query)
    int d = 64;
    Mask mask = Mask::None;
    std::string mode = "fast";
    std::string extra;  ///< statements appended before the outputs
    std::string outputs = "%o, %dq, %dk, %dv";
};

/** The forward and backward of one attention, as algorithms/attention_fwd_bwd.tsl writes it. */
std::string fwd_bwd_text(const Shape &s) {
    const int rank = 2 + (int)std::count(s.q_batch.begin(), s.q_batch.end(), ',');
    const std::string perm = testing::last_two_swapped(rank), last = std::to_string(rank - 1), d = std::to_string(s.d);
    std::ostringstream t;
    t << "graph afb mode=" << s.mode << " {\n"
      << "  %q = input : f32[" << s.q_batch << "S, " << d << "]\n"
      << "  %k = input : f32[" << s.kv_batch << "L, " << d << "]\n"
      << "  %v = input : f32[" << s.kv_batch << "L, " << d << "]\n"
      << "  %do = input : f32[" << s.q_batch << "S, " << d << "]\n";
    if (s.mask == Mask::Input) t << "  %mask = input : f32[S, L]\n";
    if (s.mask == Mask::Causal) t << "  %mask = causal_mask() : f32[S, L]\n";
    t << "  %p = softmax(matmul(%q, transpose(%k, " << perm << ")) * 0.125" << (s.mask != Mask::None ? " + %mask" : "")
      << ", axis=" << last << ")\n"
      << "  %o = matmul(%p, %v)\n"
      << "  %dv = matmul(transpose(%p, " << perm << "), %do)\n"
      << "  %dp = matmul(%do, transpose(%v, " << perm << "))\n"
      << "  %r = reduce_sum(%do * %o, axes=[" << last << "], keepdims=true)\n"
      << "  %ds = %p * (%dp - %r)\n"
      << "  %dq = matmul(%ds, %k) * 0.125\n"
      << "  %dk = matmul(transpose(%ds, " << perm << "), %q) / 8.0\n"
      << s.extra << "  output " << s.outputs << "\n}\n";
    return t.str();
}

dsl::FusionPlan planned(dsl::Graph &g, const std::map<std::string, int64_t> &symbols) {
    dsl::default_pipeline().run(g);
    return dsl::plan_fusion(g, lower::fusion_options(parse_target("host"), symbols));
}

int groups_of(const dsl::FusionPlan &p, dsl::GroupKind kind) {
    return (int)std::count_if(p.groups.begin(), p.groups.end(), [&](const dsl::FusionGroup &g) { return g.kind == kind; });
}

/** Compiles `g` with the default schedules and compares every output with the interpreter on
 * the graph as written (`as_written`, before any pass) on `inputs` (random where missing). */
double error_against_interpreter(const dsl::Graph &as_written, const dsl::Graph &g, const dsl::FusionPlan &plan,
                                 const std::map<std::string, int64_t> &symbols, std::map<std::string, dsl::Tensor> inputs = {}) {
    dsl::RunOptions ro;
    ro.random_missing_inputs = true;
    ro.input_seed = 11;
    ro.symbol_sizes = symbols;
    const dsl::RunResult ref = dsl::interpret(as_written, inputs, ro);
    CompiledGraph program(g, plan, parse_target("host"));
    return testing::max_relative_difference(program.run(ref.inputs, ref.symbols), ref.outputs);
}

}  // namespace

TEST_CASE(
    "recompute-attention-probabilities: the backward reads exp(t - lse) with the forward's logsumexp, logged; the pipeline is "
    "idempotent") {
    dsl::Graph g = dsl::parse(fwd_bwd_text({}));
    dsl::RewriteLog first;
    dsl::default_pipeline().run(g, {}, &first);
    const auto rewrites = first.with_rule("attention-backward");
    REQUIRE(rewrites.size() == 1);
    CHECK(rewrites[0].before.find("softmax") != std::string::npos);
    CHECK(rewrites[0].after.find("exp(") != std::string::npos);
    CHECK(rewrites[0].why.find("the rows' logsumexp, which the forward's group writes") != std::string::npos);
    CHECK(rewrites[0].why.find("no [S, L] matrix lives from one to the other") != std::string::npos);
    // The forward keeps its softmax and gains the logsumexp (named after p); the backward reads
    // exp(t' - p_lse) of its own copy t' of the scores.
    int softmaxes = 0;
    for (dsl::ValueId v : g.order()) softmaxes += g.node(v).op == dsl::Op::Softmax;
    CHECK(softmaxes == 1);
    const dsl::ValueId lse = g.find("p_lse");
    REQUIRE(lse != dsl::kNoValue);
    REQUIRE(g.users(lse).size() == 1);
    const dsl::ValueId centered = g.users(lse)[0];
    CHECK(g.node(centered).op == dsl::Op::Sub);
    CHECK(g.node(g.users(centered)[0]).op == dsl::Op::Exp);
    // Run twice: CSE merges t's copy back and the rewrite copies it again, so the same graph
    // (up to the copies' value numbers).
    dsl::RewriteLog log;
    dsl::Graph again = g;
    dsl::default_pipeline().run(again, {}, &log);
    auto ops = [](const dsl::Graph &x) {
        std::multiset<std::string> m;
        for (dsl::ValueId v : x.order()) m.insert(dsl::to_string(x.node(v).op));
        return m;
    };
    CHECK(again.size() == g.size());
    CHECK(ops(again) == ops(g));
    const auto records = log.with_rule("attention-backward");
    REQUIRE(records.size() == 1);
    CHECK(records[0].why.find("gets its own copy of t's chain") != std::string::npos);
}

TEST_CASE("attention backward: fast mode plans the forward, rowsum(dO * O) and one attention-backward group, with decisions") {
    dsl::Graph g = dsl::parse(fwd_bwd_text({}));
    const dsl::FusionPlan p = planned(g, {{"S", 256}, {"L", 256}});
    CHECK(p.groups.size() == 3);
    CHECK(groups_of(p, dsl::GroupKind::Attention) == 1);
    REQUIRE(groups_of(p, dsl::GroupKind::AttentionBackward) == 1);
    const auto bwd = std::find_if(p.groups.begin(), p.groups.end(),
                                  [](const dsl::FusionGroup &x) { return x.kind == dsl::GroupKind::AttentionBackward; });
    CHECK(bwd->outputs.size() == 3);
    const std::string text = p.to_string(g);
    CHECK(text.find("[fused] attention-backward") != std::string::npos);
    CHECK(text.find("no [S, L] matrix in memory") != std::string::npos);
}

TEST_CASE("attention backward: a logsumexp of the graph's own, read as given, special values included") {
    // p = exp(t - %lse) with %lse an input: the group reads it instead of computing the rows'
    // statistics, and exp(s - l) keeps IEEE special values for any l (NaN, +-inf, -0).
    const std::string text = R"(graph bwd mode=fast {
  %q = input : f32[2, S, 24]
  %k = input : f32[2, L, 24]
  %v = input : f32[2, L, 24]
  %do = input : f32[2, S, 24]
  %r = input : f32[2, S, 1]
  %lse = input : f32[2, S, 1]
  %p = exp(matmul(%q, transpose(%k, perm=[0, 2, 1])) * 0.2 - %lse)
  %dv = matmul(transpose(%p, perm=[0, 2, 1]), %do)
  %ds = %p * (matmul(%do, transpose(%v, perm=[0, 2, 1])) - %r)
  %dq = matmul(%ds, %k) * 0.2
  %dk = matmul(transpose(%ds, perm=[0, 2, 1]), %q) * 0.2
  output %dq, %dk, %dv
}
)";
    const dsl::Graph as_written = dsl::parse(text);
    for (const auto &[s, l] : std::vector<std::pair<int64_t, int64_t>>{{1, 7}, {37, 70}}) {
        CAPTURE(s);
        const std::map<std::string, int64_t> sym = {{"S", s}, {"L", l}};
        dsl::Graph g = as_written;
        const dsl::FusionPlan p = planned(g, sym);
        REQUIRE(groups_of(p, dsl::GroupKind::AttentionBackward) == 1);
        CHECK(p.to_string(g).find("the saved logsumexp %lse") != std::string::npos);
        std::mt19937_64 rng(7 + s);
        auto in = testing::random_inputs(as_written, sym, 5);
        CHECK(error_against_interpreter(as_written, g, p, sym, in) < 1e-4);
        // Rows whose lse is NaN, +inf, -inf and -0 (each batch entry's first rows) ...
        const double corner[] = {NAN, INFINITY, -INFINITY, -0.0};
        auto &lse = in.at("lse").data;
        for (size_t e = 0; e < lse.size(); e++)
            if (e % (size_t)s < 4) lse[e] = corner[(e / (size_t)s + e % (size_t)s) % 4];
        CHECK(error_against_interpreter(as_written, g, p, sym, in) < 1e-4);
        // ... then special values among q's and lse's elements at random too.
        testing::plant_special_values(in, rng, [](const std::string &n) { return n == "lse" || n == "q"; });
        CHECK(error_against_interpreter(as_written, g, p, sym, in) < 1e-4);
    }
}

TEST_CASE("attention backward: strict mode keeps the exact-order plan, and an extra reader of dS is named") {
    Shape strict;
    strict.mode = "strict";
    dsl::Graph g = dsl::parse(fwd_bwd_text(strict));
    dsl::FusionPlan p = planned(g, {{"S", 64}, {"L", 64}});
    CHECK(groups_of(p, dsl::GroupKind::AttentionBackward) == 0);
    CHECK(groups_of(p, dsl::GroupKind::Attention) == 0);
    CHECK(p.to_string(g).find("mode=fast") != std::string::npos);

    Shape exported;
    exported.extra = "  %dsum = reduce_sum(%ds, axes=[0])\n";
    exported.outputs = "%o, %dq, %dk, %dv, %dsum";
    g = dsl::parse(fwd_bwd_text(exported));
    p = planned(g, {{"S", 64}, {"L", 64}});
    CHECK(groups_of(p, dsl::GroupKind::AttentionBackward) == 0);
    // dS has a third reader, so this is no backward the nest computes: P stays shared, unfused.
    CHECK(groups_of(p, dsl::GroupKind::Attention) == 0);
}

TEST_CASE("attention backward matches the interpreter at awkward shapes, batched, grouped-query and masked") {
    struct Case {
        Shape shape;
        int64_t s, l;
    };
    const std::vector<Case> cases = {
        {{"", "", 24}, 1, 1},
        {{"", "", 80, Mask::Input}, 37, 37},
        {{"", "", 128}, 37, 129},  // cross attention, a partial key block
        {{"2, 3, ", "2, 3, ", 24, Mask::Causal}, 37, 37},
        {{"2, 3, ", "2, 1, ", 24}, 5, 70},  // grouped-query: 3 query heads per kv head
        {{"", "", 24, Mask::Causal}, 1000, 1000},
    };
    for (const Case &c : cases) {
        INFO(fwd_bwd_text(c.shape) << "S=" << c.s << " L=" << c.l);
        const dsl::Graph as_written = dsl::parse(fwd_bwd_text(c.shape));
        dsl::Graph g = as_written;
        const std::map<std::string, int64_t> sym = {{"S", c.s}, {"L", c.l}};
        const dsl::FusionPlan p = planned(g, sym);
        REQUIRE(groups_of(p, dsl::GroupKind::AttentionBackward) == 1);
        CHECK(error_against_interpreter(as_written, g, p, sym) < 1e-4);
    }
}

TEST_CASE("attention backward: fully masked rows, NaN, ±inf and -0 as the interpreter computes them") {
    Shape shape{"", "", 16, Mask::Input};
    const dsl::Graph as_written = dsl::parse(fwd_bwd_text(shape));
    dsl::Graph g = as_written;
    const int64_t s = 9, l = 150;
    const std::map<std::string, int64_t> sym = {{"S", s}, {"L", l}};
    const dsl::FusionPlan p = planned(g, sym);
    REQUIRE(groups_of(p, dsl::GroupKind::AttentionBackward) == 1);
    std::map<std::string, dsl::Tensor> in = testing::random_inputs(as_written, sym, 5);
    dsl::Tensor &mask = in.at("mask");
    for (double &x : mask.data) x = 0;
    auto at = [&](int64_t i, int64_t j) -> double & { return mask.data[(size_t)(i * l + j)]; };
    for (int64_t j = 0; j < 100; j++) at(2, j) = -INFINITY;              // row 2: the first blocks masked
    for (int64_t j = 0; j < l; j++) at(3, j) = j > 3 ? -INFINITY : 0.0;  // row 3: 4 keys
    in.at("q").data[8 * 16] = -0.0;
    in.at("do").data[4 * 16 + 5] = INFINITY;  // dO's inf reaches dV's column 5 and dP's row 4
    CHECK(error_against_interpreter(as_written, g, p, sym, in) < 1e-4);

    // A fully masked row and a NaN score make their rows of P NaN, and every sum over rows NaN.
    for (int64_t j = 0; j < l; j++) at(1, j) = -INFINITY;
    at(5, 7) = NAN;
    in.at("k").data[20 * 16 + 2] = -INFINITY;
    CHECK(error_against_interpreter(as_written, g, p, sym, in) < 1e-4);
}

TEST_CASE("attention backward: no buffer of S x L elements in the memory plan, forward and backward") {
    const std::map<std::string, int64_t> sym = {{"S", 1024}, {"L", 1024}};
    dsl::Graph g = dsl::parse(fwd_bwd_text({"2, ", "2, ", 64}));
    const dsl::FusionPlan p = planned(g, sym);
    REQUIRE(groups_of(p, dsl::GroupKind::AttentionBackward) == 1);
    CompiledGraph program(g, p, parse_target("host"));
    const dsl::BufferAssignment fused = program.memory_plan(sym);
    for (const auto &b : fused.buffers) CHECK(b.bytes < 1024 * 1024 * 4);
    // Unfused (strict), P and dS of both heads exist: 2 * 1024 * 1024 floats each.
    Shape strict{"2, ", "2, ", 64};
    strict.mode = "strict";
    dsl::Graph s = dsl::parse(fwd_bwd_text(strict));
    const dsl::FusionPlan ps = planned(s, sym);
    CompiledGraph unfused(s, ps, parse_target("host"));
    const dsl::BufferAssignment kept = unfused.memory_plan(sym);
    int64_t largest = 0;
    for (const auto &b : kept.buffers) largest = std::max(largest, b.bytes);
    CHECK(largest >= int64_t(2) * 1024 * 1024 * 4);
    // The arena holds rowsum(dO * O) and the rows' logsumexp: S floats per head each.
    CHECK(fused.planned_peak <= 2 * 2 * 1024 * 4);
    CHECK(fused.planned_peak * 1000 < kept.planned_peak);
}

TEST_CASE("random attention backward graphs: shapes, scales, masks, softmax forms and special values, against the interpreter") {
    std::mt19937_64 rng(34);
    for (int trial = 0; trial < 4; trial++) {
        const auto r = testing::RandomAttention::draw(rng, {1, 5, 16, 24}, {}, {1, 3, 17, 70}, {1, 5, 17, 130}, true);
        INFO(r.text(true) << "S=" << r.s << " L=" << r.l);
        const dsl::Graph as_written = dsl::parse(r.text(true));
        dsl::Graph g = as_written;
        const std::map<std::string, int64_t> sym = r.symbols();
        const dsl::FusionPlan plan = planned(g, sym);
        REQUIRE(groups_of(plan, dsl::GroupKind::AttentionBackward) == 1);
        std::map<std::string, dsl::Tensor> in = testing::random_inputs(as_written, sym, 700 + (uint64_t)trial);
        // Under a causal mask fast mode skips the blocks a row cannot see (docs/TSL.md): a special
        // value there would reach the interpreter's sums only (0 * NaN), so none is planted.
        if (trial % 2 && r.mask != 2) testing::plant_special_values(in, rng, [](const std::string &) { return true; });
        CHECK(error_against_interpreter(as_written, g, plan, sym, in) < 1e-4);
    }
}
