// Fusion planning, whole plans: text in, groups out. The running example, cuts and cycles between
// groups, multi-consumer values, effects and constants, the policy hook, order, DOT output and
// traffic estimates. Matmul groups are in test_fusion_matmul.cpp, reductions in
// test_fusion_reduction.cpp.
#include <doctest/doctest.h>

#include <algorithm>

#include "dsl/analysis/MemoryTraffic.h"
#include "dsl/passes/FusionPolicy.h"

#include "FusionPlans.h"

using namespace tessel::dsl;
using namespace tessel::dsl::test;

TEST_CASE("fusion: the running example (simplified gelu_mlp.tsl) is one matmul+epilogue group") {
    Planned p = plan_example("gelu_mlp.tsl");
    REQUIRE(p.plan.groups.size() == 1);
    const FusionGroup &grp = p.plan.groups[0];
    CHECK(grp.kind == GroupKind::MatmulEpilogue);
    CHECK(grp.nodes.size() == 3);
    CHECK(grp.outputs == std::vector<ValueId>{p.g.find("y")});
    CHECK(grp.estimate.fits);
    CHECK(grp.estimate.registers_f32 > 0);
    for (const FusionDecision &d : p.plan.decisions) {
        CHECK(d.fused);
        CHECK(d.rule == "epilogue");
    }
    CHECK(p.plan.decisions.size() == 2);
    std::string text = p.plan.to_string(p.g);
    CHECK(text.find("matmul+epilogue") != std::string::npos);
    CHECK(text.find("estimate: registers") != std::string::npos);
    CHECK(text.find("saves") != std::string::npos);
}

TEST_CASE("fusion: traffic of the running example drops by the three M x N intermediates") {
    FusionOptions o;
    o.symbol_sizes = {{"M", 64}, {"K", 128}};
    Planned p = plan_example("gelu_mlp.tsl", o);
    const int64_t MN = 64 * 4096 * 4, x = 64 * 128 * 4, w = 128 * 4096 * 4, b = 4096 * 4;
    CHECK(p.plan.before.bytes_read == x + w + MN + b + MN);
    CHECK(p.plan.before.bytes_written == 3 * MN);
    CHECK(p.plan.after.bytes_read == x + w + b);
    CHECK(p.plan.after.bytes_written == MN);
    CHECK(p.plan.before.total() > p.plan.after.total());
    CHECK(p.plan.to_string(p.g).find("M=64") != std::string::npos);
}

TEST_CASE("fusion refuses: an edge cut earlier is not put back together by a later consumer") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[8, 8]
      %w = input : f32[8, 8]
      %m = matmul(%x, %w)
      %t = transpose(%m)
      %y = add(%t, %m)
      output %y
    })");
    CHECK(p.groups() == "matmul+epilogue: %m | elementwise: %t %y");
    FusionDecision d = p.decision("merge", "m", "y");
    CHECK_FALSE(d.fused);
    CHECK_MESSAGE(d.reason.find("cut earlier") != std::string::npos, d.reason);
    CHECK_FALSE(p.decision("multi-consumer", "m").fused);
}

TEST_CASE("fusion refuses: a merge that would create a cycle between groups") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[8, 8]
      %w = input : f32[8, 8]
      %m = matmul(%x, %w)
      %t = transpose(%m)
      %y = add(%m, %t)
      output %y
    })");
    CHECK(p.groups() == "matmul+epilogue: %m | elementwise: %t %y");
    FusionDecision d = p.decision("merge", "m", "y");
    CHECK_FALSE(d.fused);
    CHECK_MESSAGE(d.reason.find("cycle between groups through %t") != std::string::npos, d.reason);
}

TEST_CASE("fusion refuses: a merge whose cycle runs through another group, not through single nodes") {
    // Found by test_compiled_differential_long (seed 1001855): %9 joins the matmul's group A and
    // reads %6; %10 then joins %6's group B and reads %4 from A. No node path leaves B and comes
    // back, but A reads B and B reads A, so neither kernel could run first; the planner ordered
    // no group and the graph compiled to nothing.
    Planned p = plan_text(R"(graph g {
      %in0 = input : f32[3, 8]
      %in1 = input : f32[3, 3]
      %w0 = input : f32[8, 3]
      %4 = matmul(%in0, %w0)
      %5 = reduce_sum(%in1, axes=[1], keepdims=true)
      %6 = sub(%in1, %5)
      %8 = relu(%4)
      %9 = mul(%8, %6)
      %10 = add(%6, %4)
      %11 = reduce_max(%9, axes=[0], keepdims=true)
      %z = matmul(%11, %10)
      output %z
    })");
    // %10 is refused by B and joins A as an epilogue of %4 instead.
    CHECK(p.groups() == "reduction: %5 %6 | matmul+epilogue: %4 %8 %9 %10 | reduction: %11 | matmul+epilogue: %z");
    FusionDecision d = p.decision("merge", "6", "10");
    CHECK_FALSE(d.fused);
    CHECK_MESSAGE(d.reason.find("cycle between groups through %4") != std::string::npos, d.reason);
}

TEST_CASE("fusion: a multi-consumer value read by two groups is materialized, and the choice is logged") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 8]
      %w = input : f32[8, 16]
      %h = relu(%x)
      %y = matmul(%h, %w)
      %s = reduce_sum(%h, axes=[1])
      output %y, %s
    })");
    CHECK(p.groups() == "matmul+epilogue: %h %y | reduction: %s");
    CHECK_FALSE(p.decision("reduce-input", "h", "s").fused);
    FusionDecision d = p.decision("multi-consumer", "h");
    CHECK_FALSE(d.fused);
    CHECK(d.reason.find("materialized") != std::string::npos);
    CHECK(p.plan.groups[0].outputs == std::vector<ValueId>{p.g.find("h"), p.g.find("y")});
}

TEST_CASE("fusion: effects and shape code run outside kernels") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 8]
      %r = random_uniform(seed=1) : f32[4, 8]
      %k = shape_of(%x, axis=1) : i64[]
      %a = add(%x, %r)
      %y = relu(%a)
      print(%y, label="y")
      output %y, %k
    })");
    CHECK(p.groups() == "elementwise: %a %y");
    CHECK(p.plan.outside_kernels.size() == 3);
    CHECK(p.plan.groups[0].outputs == std::vector<ValueId>{p.g.find("y")});
    CHECK(p.plan.to_string(p.g).find("runs outside kernels") != std::string::npos);
    CHECK(p.plan.group_of(p.g.find("r")) == -1);
}

TEST_CASE("fusion: constants are cloned into each group that reads them") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 8]
      %w = input : f32[8, 16]
      %c = 2 : f32[]
      %a = mul(%x, %c)
      %m = matmul(%x, %w)
      %t = transpose(%m)
      %y = mul(%t, %c)
      output %a, %y
    })");
    for (const FusionGroup &grp : p.plan.groups) {
        for (ValueId v : grp.outputs) CHECK(v != p.g.find("c"));
    }
    int with_c = 0;
    for (const FusionGroup &grp : p.plan.groups) with_c += std::count(grp.nodes.begin(), grp.nodes.end(), p.g.find("c"));
    CHECK(with_c == 2);
}

TEST_CASE("fusion: a policy behind the hook can refuse everything") {
    struct NoFusion : FusionPolicy {
        FusionDecision producer_consumer(const Graph &, ValueId, ValueId, const std::vector<ValueId> &) const override {
            return FusionDecision::no("never", "test policy");
        }
        std::optional<FusionDecision> sibling(const Graph &, ValueId, ValueId) const override { return std::nullopt; }
        FusionDecision merge(const Graph &g, const std::vector<ValueId> &a, const std::vector<ValueId> &b) const override {
            return default_fusion_policy().merge(g, a, b);
        }
        ResourceEstimate estimate(const Graph &g, const std::vector<ValueId> &n, const FusionOptions &o) const override {
            return default_fusion_policy().estimate(g, n, o);
        }
    } none;
    FusionOptions o;
    o.policy = &none;
    Planned p = plan_example("gelu_mlp.tsl", o);
    CHECK(p.plan.groups.size() == 3);
    CHECK(p.plan.after.total() == p.plan.before.total());
}

TEST_CASE("fusion: groups are in topological order and every kernel op is in exactly one") {
    for (const char *f : {"gelu_mlp.tsl", "gated_mlp.tsl", "mlp2.tsl", "softmax_rows.tsl", "layernorm_matmul.tsl"}) {
        CAPTURE(f);
        Planned p = plan_example(f);
        std::map<ValueId, int> where;
        for (const FusionGroup &grp : p.plan.groups)
            for (ValueId v : grp.nodes) {
                CHECK(p.g.node(v).op != Op::Input);
                if (p.g.node(v).op != Op::Constant) CHECK(where.emplace(v, grp.id).second);
            }
        for (ValueId v : p.g.order())
            if (is_kernel_op(p.g, v) && p.g.node(v).op != Op::Constant) CHECK(where.count(v));
        for (const FusionGroup &grp : p.plan.groups)
            for (ValueId v : grp.nodes)
                for (ValueId in : p.g.node(v).inputs)
                    if (where.count(in)) CHECK(where[in] <= grp.id);
        CHECK(p.plan.before.total() > p.plan.after.total());
    }
}

TEST_CASE("fusion: DOT output has one cluster per group and labels cut edges") {
    Planned p = plan_example("layernorm_matmul.tsl");
    std::string dot = fusion_plan_to_dot(p.g, p.plan);
    size_t clusters = 0;
    for (size_t i = dot.find("subgraph cluster_"); i != std::string::npos; i = dot.find("subgraph cluster_", i + 1)) clusters++;
    CHECK(clusters == p.plan.groups.size());
    CHECK(dot.rfind("digraph", 0) == 0);
    CHECK(dot.find("matmul-operand: operand %ln") != std::string::npos);
    CHECK(dot.find("style=dashed, color=red") != std::string::npos);
}

TEST_CASE("traffic estimates saturate at kMaxEstimate instead of overflowing (found by fuzz_lower)") {
    Graph g = parse("graph t {\n  %x = input : f32[M, N, A, B]\n  %y = relu(%x)\n  %z = neg(%y)\n  output %z\n}\n");
    FusionOptions opts;
    for (const char *s : {"M", "N", "A", "B"}) opts.symbol_sizes[s] = int64_t(1) << 31;
    const FusionPlan p = plan_fusion(g, opts);
    CHECK(value_numel(g, g.find("x"), opts.symbol_sizes) == kMaxEstimate);
    CHECK(p.before.bytes_read == kMaxEstimate);
    CHECK(p.before.total() == 2 * kMaxEstimate);
    CHECK(p.after.bytes_written == kMaxEstimate);
}
