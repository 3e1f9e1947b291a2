// Fusion planning: text in, groups out. One case per fusion rule and per refusal.
#include <doctest/doctest.h>

#include <algorithm>

#include "../TestUtil.h"
#include "dsl/Simplify.h"
#include "dsl/analysis/MemoryTraffic.h"
#include "dsl/passes/Fusion.h"
#include "dsl/passes/FusionPolicy.h"

using namespace tessel::dsl;

namespace {

struct Planned {
    Graph g;
    FusionPlan plan;
    /** The groups as "kind: %a %b | kind: %c ...". */
    std::string groups() const {
        std::string out;
        for (const FusionGroup &grp : plan.groups) {
            out += (out.empty() ? "" : " | ") + std::string(to_string(grp.kind)) + ":";
            for (ValueId v : grp.nodes) out += " %" + g.display_name(v);
        }
        return out;
    }
    /** The decision for producer -> consumer (by display name) with this rule; fails if absent. */
    FusionDecision decision(const std::string &rule, const std::string &p, const std::string &c = "") const {
        for (const FusionDecision &d : plan.decisions)
            if (d.rule == rule && g.display_name(d.producer) == p &&
                (c.empty() ? d.consumer == kNoValue : d.consumer != kNoValue && g.display_name(d.consumer) == c))
                return d;
        FAIL("no decision " << rule << " %" << p << " -> %" << c << " in\n" << plan.to_string(g));
        return {};
    }
};

Planned plan_text(const std::string &text, const FusionOptions &opts = {}) {
    Planned p{parse(text, "<test>"), {}};
    p.plan = plan_fusion(p.g, opts);
    return p;
}

Planned plan_example(const std::string &file, const FusionOptions &opts = {}) {
    Planned p{simplify_file(std::string(TESSEL_SOURCE_DIR) + "/algorithms/" + file).graph, {}};
    p.plan = plan_fusion(p.g, opts);
    return p;
}

}  // namespace

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

TEST_CASE("fusion: softmax over rows, written out, is one reduction group") {
    Planned p = plan_example("softmax_rows.tsl");
    CHECK(p.groups() == "reduction: %m %2 %e %s %y");
    CHECK(p.decision("broadcast-back", "m", "2").fused);
    CHECK(p.decision("reduce-input", "e", "s").fused);
    FusionDecision mc = p.decision("multi-consumer", "e");
    CHECK(mc.fused);
    CHECK(mc.reason.find("recomputed") != std::string::npos);
}

TEST_CASE("fusion refuses: a reduction result broadcast along the axis it reduced") {
    // s[i] = sum_j x[i, j], then y[i, j] = x[i, j] + s[j]: numpy aligns s with the reduced axis.
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 4]
      %s = reduce_sum(%x, axes=[1])
      %y = add(%x, %s)
      output %y
    })");
    CHECK(p.groups() == "reduction: %s | elementwise: %y");
    FusionDecision d = p.decision("broadcast-back", "s", "y");
    CHECK_FALSE(d.fused);
    CHECK_MESSAGE(d.reason.find("onto axis 1 of %y, the axis %s reduced") != std::string::npos, d.reason);
}

namespace {
/** The planned decision line for p -> c in the plan text, e.g. "[cut] broadcast-back %s -> %y: ...". */
std::string decision_line(const Planned &p, const std::string &prod, const std::string &cons) {
    const std::string text = p.plan.to_string(p.g), key = " %" + prod + " -> %" + cons + ":";
    for (size_t b = 0, e; b < text.size(); b = e + 1) {
        e = text.find('\n', b);
        if (e == std::string::npos) e = text.size();
        const std::string line = text.substr(b, e - b);
        if (line.find(key) != std::string::npos) return line;
    }
    return "";
}
}  // namespace

TEST_CASE("fusion refuses: a reduction broadcast back along its reduced axis through elementwise ops") {
    // s = 2 * (row sums of x), then y[i, j] = x[i, j] + s[j]: s aligns at the last axis, so its
    // axis 0 (rows) lands on y's axis 1. Fused, every y element would recompute a row sum: O(M^3).
    SUBCASE("the reduction feeds the broadcast directly") {
        Planned p = plan_text(R"(graph g {
          %x = input : f32[M, M]
          %s = reduce_sum(%x, axes=[1])
          %y = %x + %s
          output %y
        })");
        CHECK(p.groups() == "reduction: %s | elementwise: %y");
        const std::string line = decision_line(p, "s", "y");
        CHECK_MESSAGE(line.find("[cut] broadcast-back") == 2, line);
        CHECK_MESSAGE(line.find("axis 0 of %s (kept from axis 0 of %x) onto axis 1 of %y, the axis %s reduced") !=
                          std::string::npos, line);
    }
    SUBCASE("through one elementwise op (reduce_sum(...) * 2)") {
        Planned p = plan_text(R"(graph g {
          %x = input : f32[M, M]
          %s = reduce_sum(%x, axes=[1]) * 2
          %y = %x + %s
          output %y
        })");
        CHECK(p.groups() == "reduction: %1 %2 %s | elementwise: %y");
        const std::string line = decision_line(p, "s", "y");
        CHECK_MESSAGE(line.find("[cut] broadcast-back") == 2, line);
        CHECK_MESSAGE(line.find("axis 0 of %1 (kept from axis 0 of %x) onto axis 1 of %y, the axis %1 reduced") !=
                          std::string::npos, line);
        CHECK_MESSAGE(line.find("through %s") != std::string::npos, line);
    }
    SUBCASE("through a chain of elementwise and broadcast ops") {
        Planned p = plan_text(R"(graph g {
          %x = input : f32[M, M]
          %b = input : f32[M]
          %r = reduce_max(%x, axes=[1])
          %t = exp(%r * 2) + %b
          %u = relu(%t)
          %y = %x * %u
          output %y
        })");
        CHECK(p.plan.group_of(p.g.find("y")) != p.plan.group_of(p.g.find("r")));
        FusionDecision d = p.decision("broadcast-back", "u", "y");
        CHECK_FALSE(d.fused);
        CHECK_MESSAGE(d.reason.find("onto axis 1 of %y, the axis %r reduced") != std::string::npos, d.reason);
        CHECK_MESSAGE(d.reason.find("through %") != std::string::npos, d.reason);
    }
    SUBCASE("the chain reaches the reduction through the consumer's other operand") {
        // y joins e's group first (e is elementwise); the reduction comes in through t.
        Planned p = plan_text(R"(graph g {
          %x = input : f32[M, M]
          %e = exp(%x)
          %s = reduce_sum(%e, axes=[1])
          %t = %s * 2
          %y = %e + %t
          output %y
        })");
        CHECK(p.plan.group_of(p.g.find("y")) != p.plan.group_of(p.g.find("s")));
        CHECK_FALSE(p.decision("broadcast-back", "t", "y").fused);
        for (const FusionDecision &d : p.plan.decisions)
            if (d.consumer == p.g.find("y")) CHECK_MESSAGE(!d.fused, p.plan.to_string(p.g));
    }
}

TEST_CASE("fusion: a reduction broadcast back along the right axis through elementwise ops still fuses") {
    SUBCASE("keepdims, then scaled: softmax-style") {
        Planned p = plan_text(R"(graph g {
          %x = input : f32[M, N]
          %s = reduce_sum(%x, axes=[1], keepdims=true) * 2
          %y = %x / %s
          output %y
        })");
        CHECK(p.groups() == "reduction: %1 %2 %s %y");
        FusionDecision d = p.decision("broadcast-back", "s", "y");
        CHECK(d.fused);
        CHECK_MESSAGE(d.reason.find("reduced axes [1]") != std::string::npos, d.reason);
    }
    SUBCASE("a column reduction without keepdims lands on the axis it kept") {
        Planned p = plan_text(R"(graph g {
          %x = input : f32[M, N]
          %s = reduce_max(%x, axes=[0])
          %t = exp(%s * 2)
          %y = %x - %t
          output %y
        })");
        CHECK(p.plan.groups.size() == 1);
        CHECK(p.decision("broadcast-back", "t", "y").fused);
    }
    SUBCASE("a chain over the reduction's own output space") {
        Planned p = plan_text(R"(graph g {
          %x = input : f32[M, N]
          %b = input : f32[M]
          %s = reduce_sum(%x, axes=[1])
          %t = exp(%s) + %b
          output %t
        })");
        CHECK(p.plan.groups.size() == 1);
    }
    SUBCASE("a second reduction over the same rows, then its epilogue (variance)") {
        Planned p = plan_text(R"(graph g {
          %x = input : f32[M, N]
          %m = reduce_mean(%x, axes=[1], keepdims=true)
          %d = %x - %m
          %v = reduce_mean(%d * %d, axes=[1])
          %y = sqrt(%v + 0.5)
          output %y
        })");
        CHECK(p.plan.groups.size() == 1);
    }
    SUBCASE("the written-out softmax example") {
        Planned p = plan_example("softmax_rows.tsl");
        CHECK(p.groups() == "reduction: %m %2 %e %s %y");
        CHECK(p.decision("broadcast-back", "e", "y").fused);
    }
}

TEST_CASE("fusion: a reduction over axis 0 without keepdims broadcasts back onto its rows") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 8]
      %s = reduce_max(%x, axes=[0])
      %y = sub(%x, %s)
      output %y
    })");
    CHECK(p.groups() == "reduction: %s %y");
}

TEST_CASE("fusion refuses: an operand chain too long to recompute in the k-loop") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 8]
      %w = input : f32[8, 16]
      %a1 = exp(%x)
      %a2 = exp(%a1)
      %a3 = exp(%a2)
      %a4 = exp(%a3)
      %a5 = exp(%a4)
      %a6 = exp(%a5)
      %a7 = exp(%a6)
      %a8 = exp(%a7)
      %a9 = exp(%a8)
      %y = matmul(%a9, %w)
      output %y
    })");
    CHECK(p.plan.groups.size() == 2);
    FusionDecision d = p.decision("matmul-operand", "a9", "y");
    CHECK_FALSE(d.fused);
    CHECK(d.reason.find("9 ops > 8") != std::string::npos);
}

TEST_CASE("fusion: the softmax op takes an elementwise prologue and epilogue") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 8]
      %a = exp(%x)
      %s = softmax(%a, axis=1)
      %y = mul(%s, 2)
      output %y
    })");
    CHECK(p.groups() == "reduction: %a %s %3 %y");
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

TEST_CASE("fusion refuses: a reduction over other axes than the group's rows") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 8]
      %r1 = reduce_sum(%x, axes=[1], keepdims=true)
      %d = sub(%x, %r1)
      %r2 = reduce_sum(%d, axes=[0])
      output %r2
    })");
    CHECK(p.groups() == "reduction: %r1 %d | reduction: %r2");
    FusionDecision d = p.decision("reduce-input", "d", "r2");
    CHECK_FALSE(d.fused);
    CHECK(d.reason.find("incompatible") != std::string::npos);
}

TEST_CASE("fusion refuses: a reduction of a matmul result") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 8]
      %w = input : f32[8, 16]
      %m = matmul(%x, %w)
      %s = reduce_max(%m, axes=[1])
      output %s
    })");
    CHECK(p.plan.groups.size() == 2);
    CHECK_FALSE(p.decision("reduce-input", "m", "s").fused);
}

TEST_CASE("fusion: two reductions over the same rows of x share one pass (sibling)") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 8]
      %s1 = reduce_sum(%x, axes=[1])
      %sq = mul(%x, %x)
      %s2 = reduce_sum(%sq, axes=[1])
      output %s1, %s2
    })");
    CHECK(p.groups() == "reduction: %s1 %sq %s2");
    CHECK(p.decision("sibling", "s1", "s2").fused);
    CHECK(p.plan.groups[0].outputs.size() == 2);
}

TEST_CASE("fusion refuses: reductions of x over different axes are not siblings") {
    Planned p = plan_text(R"(graph g {
      %x = input : f32[4, 8]
      %s1 = reduce_sum(%x, axes=[1])
      %s2 = reduce_sum(%x, axes=[0])
      output %s1, %s2
    })");
    CHECK(p.plan.groups.size() == 2);
    CHECK_FALSE(p.decision("sibling", "s1", "s2").fused);
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
    for (const FusionGroup &grp : p.plan.groups)
        with_c += std::count(grp.nodes.begin(), grp.nodes.end(), p.g.find("c"));
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
    for (size_t i = dot.find("subgraph cluster_"); i != std::string::npos; i = dot.find("subgraph cluster_", i + 1))
        clusters++;
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
