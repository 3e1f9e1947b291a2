// Fusion planning of reduction groups: softmax and reductions over rows, broadcasting a reduction
// back (along the reduced axis: refused; along the rows: fused), sibling reductions, and the
// reductions that stay out of a group.
#include <doctest/doctest.h>

#include "FusionPlans.h"

using namespace tessel::dsl;
using namespace tessel::dsl::test;

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
        CHECK_MESSAGE(
            line.find("axis 0 of %s (kept from axis 0 of %x) onto axis 1 of %y, the axis %s reduced") != std::string::npos, line);
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
        CHECK_MESSAGE(
            line.find("axis 0 of %1 (kept from axis 0 of %x) onto axis 1 of %y, the axis %1 reduced") != std::string::npos, line);
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
