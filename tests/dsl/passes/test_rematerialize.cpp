// Rematerialization (dsl/passes/Rematerialize.h): the decision with its numbers, with and without
// a memory budget, results unchanged, and the phase order (CSE after it would undo it).
#include <doctest/doctest.h>

#include "algorithms/MemoryExamples.h"
#include "dsl/Pipeline.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Builder.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/Verifier.h"
#include "dsl/passes/CSE.h"
#include "dsl/passes/DCE.h"
#include "dsl/passes/Rematerialize.h"
#include "tests/dsl/RandomKernelGraphs.h"

#include <cmath>

using namespace tessel::dsl;

namespace {

const std::map<std::string, int64_t> kMlp = {{"M", 64}, {"K", 96}, {"H", 128}};

RematOptions options(const std::map<std::string, int64_t> &symbols) {
    RematOptions o;
    o.symbols = symbols;
    return o;
}

/** Outputs of a and b on the same random inputs are bit for bit equal. */
void check_same_results(const Graph &a, const Graph &b, const std::map<std::string, int64_t> &symbols) {
    RunOptions ro;
    ro.random_missing_inputs = true;
    ro.symbol_sizes = symbols;
    const RunResult ra = interpret(a, {}, ro), rb = interpret(b, ra.inputs, ro);
    REQUIRE(ra.outputs.size() == rb.outputs.size());
    for (size_t i = 0; i < ra.outputs.size(); i++) CHECK(bitwise_equal(ra.outputs[i], rb.outputs[i]));
}

}  // namespace

TEST_CASE("rematerialize: the MLP's residual is recomputed in the last layer's epilogue") {
    Graph g = tessel::mlp_residual();
    default_pipeline().run(g);
    const Graph before = g;
    RematResult r = rematerialize(g, options(kMlp));
    INFO(r.to_string() << print(g));
    REQUIRE(r.changed);
    const RematDecision &d = r.decisions.front();
    CHECK(d.applied);
    CHECK(d.value_name == "xn");
    CHECK(d.bytes == 64 * 96 * 4);
    CHECK(d.net_seconds <= 0);  // the store and reload of xn cost more than x * g
    CHECK(d.traffic_delta < 0);
    CHECK(d.byte_steps_after < d.byte_steps_before);
    CHECK(r.peak_after <= r.peak_before - d.bytes);
    CHECK(g.find("xn.remat") != kNoValue);
    CHECK(verify(g).empty());
    // The recompute fuses into its reader's group: the last layer's epilogue reads x and g.
    const FusionPlan plan = plan_fusion(g, {});
    CHECK(plan.groups.size() == 3);
    CHECK(plan.group_of(g.find("xn.remat")) == plan.group_of(g.outputs[0]));
    check_same_results(before, g, kMlp);
    CHECK(r.to_string().find("[recompute] %xn") != std::string::npos);
}

TEST_CASE("rematerialize: phase order — CSE after it merges the clone back, so it runs after the last CSE") {
    Graph g = tessel::mlp_residual();
    default_pipeline().run(g);
    const std::string simplified = print(g);
    REQUIRE(rematerialize(g, options(kMlp)).changed);
    const std::string rematerialized = print(g);
    CHECK(rematerialized != simplified);
    // The reason for the order: CSE sees two equal `mul(%x, %g)` and keeps the first.
    Graph undone = g;
    CHECK(eliminate_common_subexpressions(undone));
    eliminate_dead_code(undone);
    CHECK(print(undone) == simplified);
    // Running the simplifier first and rematerializing last keeps the clone.
    Graph ordered = tessel::mlp_residual();
    default_pipeline().run(ordered);
    rematerialize(ordered, options(kMlp));
    CHECK(print(ordered) == rematerialized);
}

TEST_CASE("rematerialize: attention keeps P unless forced; forced, results are unchanged") {
    const std::map<std::string, int64_t> s = {{"S", 48}};
    Graph g = tessel::attention_fwd_bwd();
    default_pipeline().run(g);
    const Graph before = g;
    RematResult kept = rematerialize(g, options(s));
    INFO(kept.to_string());
    for (const auto &d : kept.decisions)
        if (d.value_name == "p") CHECK_FALSE(d.applied);

    Graph forced = before;
    RematOptions o = options(s);
    o.force = {"p"};
    RematResult r = rematerialize(forced, o);
    INFO(r.to_string() << print(forced));
    REQUIRE(r.changed);
    CHECK(r.decisions.front().value_name == "p");
    CHECK(r.decisions.front().extra_flops >= 2.0 * 48 * 48 * 64);  // Q K^T again
    CHECK(forced.find("p.remat") != kNoValue);
    // It does not fuse into the matmul reading it (dv = transpose(p) @ do): the recomputed P is
    // materialized again; only the elementwise dS joins the recomputed softmax's group.
    const FusionPlan plan = plan_fusion(forced, {});
    const ValueId pr = forced.find("p.remat");
    bool materialized = false;
    for (ValueId v : forced.users(pr)) materialized |= plan.group_of(v) != plan.group_of(pr);
    CHECK(materialized);
    CHECK(plan.groups.size() > 8);
    check_same_results(before, forced, s);
}

TEST_CASE("rematerialize: a memory budget — fit by the cheapest recompute, or say by how much it cannot") {
    Graph g = tessel::mlp_residual();
    default_pipeline().run(g);
    Graph probe = g;
    const int64_t peak = rematerialize(probe, options(kMlp)).peak_before;
    SUBCASE("a budget the residual's recompute meets") {
        RematOptions o = options(kMlp);
        o.memory_budget = peak - 64 * 96 * 4;
        RematResult r = rematerialize(g, o);
        INFO(r.to_string());
        CHECK(r.fits);
        CHECK(r.peak_after <= *o.memory_budget);
    }
    SUBCASE("a budget nothing can meet") {
        RematOptions o = options(kMlp);
        o.memory_budget = 1024;
        RematResult r = rematerialize(g, o);
        INFO(r.to_string());
        CHECK_FALSE(r.fits);
        CHECK(r.to_string().find("does not fit: over by") != std::string::npos);
        CHECK(verify(g).empty());
    }
}

TEST_CASE("rematerialize: a graph without long-lived values is left alone") {
    Graph g = parse(R"(
graph chain {
  %x = input : f32[M, 32]
  %w = input : f32[32, 32]
  %a = matmul(%x, %w)
  %y = matmul(%a, %w)
  output %y
})",
                    "<chain>");
    const std::string text = print(g);
    RematResult r = rematerialize(g, options({{"M", 8}}));
    CHECK_FALSE(r.changed);
    CHECK(print(g) == text);
}

TEST_CASE("memory examples: the C++ builders print as their .tsl files") {
    for (const auto &[built, file] : {std::pair{tessel::attention_fwd_bwd(), "attention_fwd_bwd.tsl"},
                                      std::pair{tessel::mlp_residual(), "mlp_residual.tsl"}}) {
        INFO(file);
        CHECK(print(built) == print(parse_file(std::string(TESSEL_SOURCE_DIR) + "/algorithms/" + file)));
    }
}

TEST_CASE("rematerialize: random graphs under tight budgets keep every result bit for bit, special values included") {
    int changed = 0;
    for (uint64_t seed = 0; seed < 300; seed++) {
        Graph g = tessel::dsl::test::random_kernel_graph(5000 + seed, 8 + seed % 10);
        default_pipeline().run(g);
        const Graph before = g;
        RematOptions o;
        o.memory_budget = 64;  // below every plan: recompute whatever lowers the peak
        o.max_rounds = 6;
        const RematResult r = rematerialize(g, o);
        INFO("seed " << 5000 + seed << "\n" << r.to_string() << print(g));
        REQUIRE(verify(g).empty());
        changed += r.changed;
        RunOptions ro;
        ro.random_missing_inputs = true;
        ro.input_seed = seed;
        RunResult ra = interpret(before, {}, ro);
        // Special values in the first input: NaN, +-inf, -0.
        auto &first = ra.inputs.begin()->second;
        const double special[] = {NAN, INFINITY, -INFINITY, -0.0};
        for (size_t i = 0; i < first.data.size() && i < 4; i++) first.data[i * 7 % first.data.size()] = special[i];
        ra = interpret(before, ra.inputs, ro);
        const RunResult rb = interpret(g, ra.inputs, ro);
        for (size_t i = 0; i < ra.outputs.size(); i++) CHECK(bitwise_equal(ra.outputs[i], rb.outputs[i]));
    }
    MESSAGE(changed << " of 300 random graphs rematerialized under the budget");
    CHECK(changed > 0);
}

TEST_CASE("rematerialize: graphs above the size limit are left alone, and the result says why") {
    tessel::dsl::GraphBuilder b("big");
    Value w = b.input("w", DType::F32, {4, 4});
    Value x = b.input("x", DType::F32, {4, 4});
    for (size_t i = 0; i <= kMaxRematKernelOps; i++) x = matmul(x, w);
    b.output("y", x);
    Graph g = std::move(b).build();
    const std::string text = print(g);
    const RematResult r = rematerialize(g, {});
    CHECK_FALSE(r.changed);
    CHECK(r.to_string().find("skipped") != std::string::npos);
    CHECK(print(g) == text);
}
