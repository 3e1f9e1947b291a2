// The fused-group budget (dsl/passes/GroupSize.h, rule `size` of Fusion.h): what a group's size
// counts, and plans that split a long chain or an index-doubling pattern with the reason printed.
#include <doctest/doctest.h>

#include "dsl/passes/GroupSize.h"

#include "FusionPlans.h"

using namespace tessel::dsl;
using namespace tessel::dsl::test;

namespace {

/** `n` element-wise ops in a chain: %v0 = %x * 0.5, %v<i> = %v<i-1> + %x. */
std::string chain(int n) {
    std::string s = "graph chain {\n  %x = input : f32[M, 8]\n  %v0 = %x * 0.5\n";
    for (int i = 1; i < n; i++) s += "  %v" + std::to_string(i) + " = %v" + std::to_string(i - 1) + " + %x\n";
    return s + "  output %v" + std::to_string(n - 1) + "\n}\n";
}

/** Each step reads the previous value at two indices (two slices), so inlining doubles. */
std::string shifted_slices(int steps) {
    std::string s = "graph shifts {\n  %v0 = input : f32[" + std::to_string(steps + 4) + "]\n";
    for (int i = 1; i <= steps; i++) {
        const std::string p = "%v" + std::to_string(i - 1), n = std::to_string(steps + 4 - i);
        s += "  %a" + std::to_string(i) + " = slice(" + p + ", axis=0, start=0) : f32[" + n + "]\n";
        s += "  %b" + std::to_string(i) + " = slice(" + p + ", axis=0, start=1) : f32[" + n + "]\n";
        s += "  %v" + std::to_string(i) + " = %a" + std::to_string(i) + " + %b" + std::to_string(i) + "\n";
    }
    return s + "  output %v" + std::to_string(steps) + "\n}\n";
}

std::vector<ValueId> kernel_nodes(const Graph &g) {
    std::vector<ValueId> nodes;
    for (ValueId v : g.order())
        if (g.node(v).op != Op::Input) nodes.push_back(v);
    return nodes;
}

}  // namespace

TEST_CASE("group size: a chain counts one node per op; a matmul is built once; constants are not ops") {
    const Graph c = parse(chain(5), "<test>");
    GroupSize s = group_size(c, kernel_nodes(c));
    CHECK(s.ops == 5);
    CHECK(s.expression_nodes == 5);

    // %h is read by two same-shape element-wise readers at its own index: built once.
    const Graph d = parse(R"(graph d {
      %x = input : f32[4, 8]
      %w = input : f32[8, 8]
      %m = matmul(%x, %w)
      %h = %m * 2.0
      %y = %h + %h * %h
      output %y
    })",
                          "<test>");
    s = group_size(d, kernel_nodes(d));
    CHECK(s.ops == 4);  // matmul, *, *, +, and not the constant
    CHECK(s.expression_nodes == 4);
}

TEST_CASE("group size: a value read at two indices per step doubles per step") {
    for (int steps : {1, 4, 10}) {
        const Graph g = parse(shifted_slices(steps), "<test>");
        const GroupSize s = group_size(g, kernel_nodes(g));
        CHECK(s.ops == 3 * steps);
        CHECK(s.expression_nodes >= (int64_t(1) << steps));
    }
    const Graph g = parse(shifted_slices(80), "<test>");
    CHECK(group_size(g, kernel_nodes(g)).expression_nodes >= INT64_MAX / 4);  // saturates, no overflow
}

TEST_CASE("fusion: a long chain is split into groups within the op budget, each cut with its reason") {
    const Planned p = plan_text(chain(200));
    REQUIRE(p.plan.groups.size() == 4);  // 64 + 64 + 64 + 8
    for (const FusionGroup &grp : p.plan.groups) CHECK(group_size(p.g, grp.nodes).ops <= 64);
    const FusionDecision d = p.decision("size", "v63", "v64");
    CHECK(!d.fused);
    CHECK(d.reason ==
          "the fused group would be 65 ops, over the budget of 64 (one group's compile time grows faster than "
          "linearly in its size)");
    CHECK(p.plan.to_string(p.g).find("[cut] size %v63 -> %v64") != std::string::npos);

    FusionOptions unbounded;
    unbounded.budget.max_ops = 0;
    unbounded.budget.max_expression_nodes = 0;
    CHECK(plan_text(chain(200), unbounded).plan.groups.size() == 1);
    FusionOptions small;
    small.budget.max_ops = 10;
    CHECK(plan_text(chain(200), small).plan.groups.size() == 20);
}

TEST_CASE("fusion: an index-doubling pattern is cut by its expression estimate, not its op count") {
    const Planned p = plan_text(shifted_slices(16));  // 48 ops: within the op budget
    CHECK(p.plan.groups.size() > 1);
    bool cut_by_nodes = false;
    for (const FusionDecision &d : p.plan.decisions)
        cut_by_nodes |=
            d.rule == "size" && d.reason.find("expression nodes once inlined, over the budget of 1024") != std::string::npos;
    CHECK(cut_by_nodes);
    for (const FusionGroup &grp : p.plan.groups) CHECK(group_size(p.g, grp.nodes).expression_nodes <= 1024);
}
