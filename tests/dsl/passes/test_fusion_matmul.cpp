// Fusion planning of matmul groups: epilogues, operand chains recomputed in the k-loop, sibling
// matmuls, the cuts around a matmul, and the resource limits that refuse siblings.
#include <doctest/doctest.h>

#include "FusionPlans.h"

using namespace tessel::dsl;
using namespace tessel::dsl::test;

TEST_CASE("fusion: gated MLP is one group; the second matmul joins as a sibling") {
    Planned p = plan_example("gated_mlp.tsl");
    CHECK(p.groups() == "matmul+epilogue: %3 %4 %5 %y");
    FusionDecision d = p.decision("sibling", "3", "5");
    CHECK(d.fused);
    CHECK(d.reason.find("%x") != std::string::npos);
    // The traffic after fusion reads x once.
    FusionOptions o;
    o.symbol_sizes = {{"M", 8}, {"K", 16}, {"N", 32}};
    Planned q = plan_example("gated_mlp.tsl", o);
    CHECK(q.plan.after.bytes_read == 4 * (8 * 16 + 2 * 16 * 32));
}

TEST_CASE("fusion: sibling fusion off keeps the gated MLP in two groups") {
    FusionOptions o;
    o.sibling_fusion = false;
    Planned p = plan_example("gated_mlp.tsl", o);
    CHECK(p.plan.groups.size() == 2);
    CHECK_FALSE(p.decision("merge", "5", "y").fused);
}

TEST_CASE("fusion refuses: an operand chain too long to recompute in the k-loop") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 8]
      %w = input : f32[8, 16]
      %a1 = neg(%x)
      %a2 = abs(%a1)
      %a3 = neg(%a2)
      %a4 = abs(%a3)
      %a5 = neg(%a4)
      %a6 = abs(%a5)
      %a7 = neg(%a6)
      %a8 = abs(%a7)
      %a9 = neg(%a8)
      %y = matmul(%a9, %w)
      output %y
    })");
    CHECK(p.plan.groups.size() == 2);
    FusionDecision d = p.decision("matmul-operand", "a9", "y");
    CHECK_FALSE(d.fused);
    CHECK(d.reason.find("9 ops > 8") != std::string::npos);
}

TEST_CASE("fusion refuses: an operand read through a reshape (index divisions in the k-loop)") {
    Planned p = plan_text(R"(graph g {
      %o = input : f32[4, 5, 8]
      %w = input : f32[32, 16]
      %a = reshape(transpose(%o, perm=[1, 0, 2])) : f32[5, 32]
      %y = matmul(%a, %w)
      output %y
    })");
    CHECK(p.plan.groups.size() == 2);
    FusionDecision d = p.decision("matmul-operand", "a", "y");
    CHECK_FALSE(d.fused);
    CHECK(d.reason.find("remaps its index through reshape") != std::string::npos);
}

TEST_CASE("fusion refuses: a transcendental operand chain the k-loop would recompute per column block") {
    Planned p = plan_text(R"(graph g {
      %g = input : f32[4, 8]
      %u = input : f32[4, 8]
      %w = input : f32[8, 16]
      %a = mul(silu(%g), %u)
      %y = matmul(%a, %w)
      output %y
    })");
    CHECK(p.plan.groups.size() == 2);
    FusionDecision d = p.decision("matmul-operand", "a", "y");
    CHECK_FALSE(d.fused);
    CHECK(d.reason.find("computes silu") != std::string::npos);
}

TEST_CASE("fusion: layernorm -> matmul is cut before the matmul; the matmul keeps its epilogue") {
    Planned p = plan_example("layernorm_matmul.tsl");
    REQUIRE(p.plan.groups.size() == 2);
    CHECK(p.plan.groups[0].kind == GroupKind::Reduction);
    CHECK(p.plan.groups[0].outputs == std::vector<ValueId>{p.g.find("ln")});
    CHECK(p.plan.groups[1].kind == GroupKind::MatmulEpilogue);
    CHECK(p.plan.groups[1].nodes.size() == 2);
    const ValueId mm = p.plan.groups[1].nodes[0];
    FusionDecision d = p.decision("matmul-operand", "ln", p.g.display_name(mm));
    CHECK_FALSE(d.fused);
    CHECK(d.reason.find("reduction %mean") != std::string::npos);
}

TEST_CASE("fusion: a two-layer MLP is two groups; the hidden activation is materialized") {
    Planned p = plan_example("mlp2.tsl");
    REQUIRE(p.plan.groups.size() == 2);
    CHECK(p.plan.groups[0].outputs == std::vector<ValueId>{p.g.find("h")});
    const ValueId mm2 = p.plan.groups[1].nodes[0];
    FusionDecision d = p.decision("matmul-operand", "h", p.g.display_name(mm2));
    CHECK_FALSE(d.fused);
    CHECK(d.reason.find("contraction") != std::string::npos);
}

TEST_CASE("fusion: a cheap elementwise operand chain is recomputed inside the matmul") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 8]
      %w = input : f32[16, 8]
      %r = relu(%x)
      %wt = transpose(%w)
      %y = matmul(%r, %wt)
      output %y
    })");
    CHECK(p.groups() == "matmul+epilogue: %r %wt %y");
    CHECK(p.decision("matmul-operand", "r", "y").fused);
    CHECK(p.decision("matmul-operand", "wt", "y").fused);
}

TEST_CASE("fusion refuses: a transpose of a matmul result is cut") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 8]
      %w = input : f32[8, 16]
      %m = matmul(%x, %w)
      %t = transpose(%m)
      output %t
    })");
    CHECK(p.groups() == "matmul+epilogue: %m | elementwise: %t");
    FusionDecision d = p.decision("transpose", "m", "t");
    CHECK_FALSE(d.fused);
    CHECK(d.reason.find("index order") != std::string::npos);
}

TEST_CASE("fusion refuses: matmuls with different left operands do not merge through an add") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 8]
      %z = input : f32[4, 8]
      %w = input : f32[8, 16]
      %a = matmul(%x, %w)
      %b = matmul(%z, %w)
      %y = add(%a, %b)
      output %y
    })");
    CHECK(p.groups() == "matmul+epilogue: %b | matmul+epilogue: %a %y");
    FusionDecision d = p.decision("merge", "b", "y");
    CHECK_FALSE(d.fused);
    CHECK(d.reason.find("one contraction traversal") != std::string::npos);
}

TEST_CASE("fusion refuses on resources: sibling accumulators exceed a tiny register file") {
    FusionOptions o;
    o.target = {"tiny", 8, 4, 0, 0};  // 32 f32 registers
    Planned p = plan_example("gated_mlp.tsl", o);
    CHECK(p.plan.groups.size() == 2);
    FusionDecision d = p.decision("resources", "3", "5");
    CHECK_FALSE(d.fused);
    CHECK(d.reason.find("registers") != std::string::npos);
    CHECK(d.reason.find("> 32") != std::string::npos);
    // The running example still fits with a smaller tile.
    Planned r = plan_example("gelu_mlp.tsl", o);
    REQUIRE(r.plan.groups.size() == 1);
    CHECK(r.plan.groups[0].estimate.fits);
    CHECK(r.plan.groups[0].estimate.detail.find("tile 2x8") != std::string::npos);
}

TEST_CASE("fusion refuses on resources: staged sibling tiles exceed shared memory") {
    FusionOptions o;
    o.target = TargetResources{};
    o.target.shared_memory_bytes = 20 * 1024;
    Planned p = plan_example("gated_mlp.tsl", o);
    CHECK(p.plan.groups.size() == 2);
    FusionDecision d = p.decision("resources", "3", "5");
    CHECK(d.reason.find("shared") != std::string::npos);
    CHECK(d.reason.find("24.0 KiB > 20.0 KiB") != std::string::npos);
    CHECK(plan_example("gelu_mlp.tsl", o).plan.groups.size() == 1);
}
