// Layout assignment (dsl/passes/LayoutAssignment.h): text in, text out, with an explicit cost
// model so each decision follows from stated read rates; the weight-prepare fusion rule it
// relies on; and what the pass never touches.
#include <doctest/doctest.h>

#include "../TestUtil.h"
#include "dsl/Simplify.h"
#include "dsl/analysis/WeightDerived.h"
#include "dsl/passes/Fusion.h"
#include "dsl/passes/LayoutAssignment.h"

using namespace tessel::dsl;
using namespace tessel::dsl::test;

namespace {

const char *kLinear = R"(graph linear mode=fast {
  %x = input : f32[M, 64]
  %w = weight : f32[64, 100]
  %b = weight : f32[100]
  %m = matmul(%x, %w) : f32[M, 100]
  %y = add(%m, %b) : f32[M, 100]
  output %y
}
)";

/** Panels read at full rate by the gemm nest (which packs a row-major w per call, one extra
 * byte per byte) and at a fifth of it by gemv: panels pay for large M only. */
LayoutOptions options_at(int64_t m) {
    LayoutOptions o;
    o.model.panel_width = 16;
    o.model.mr = 4;
    o.model.decode_max_m = 16;
    for (auto &rates : o.model.rates.panel_rate) rates[0] = 0.2, rates[1] = 0.5, rates[2] = 0.9, rates[3] = 1.0;
    o.model.gemm_pack_bytes = 1.0;
    o.shapes = {{{{"M", m}}, 1.0}};
    return o;
}

struct Assigned {
    Graph g;
    LayoutPlan plan;
};

Assigned assign(const std::string &text, const LayoutOptions &o) {
    Assigned a{parse(text, "<test>"), {}};
    const FusionPlan fusion = plan_fusion(a.g);
    a.plan = assign_layouts(a.g, fusion, o);
    CHECK(verify(a.g).empty());
    return a;
}

}  // namespace

TEST_CASE("a weight read by a large-M matmul is packed in panels; at M = 1 it stays row-major") {
    Assigned big = assign(kLinear, options_at(512));
    // The caller's weight stays row-major; the matmul reads a copy in panels, prepared once.
    CHECK(print(big.g) == canon(R"TSL(graph linear mode=fast {
  %x = input : f32[M, 64]
  %w = weight : f32[64, 100]
  %b = weight : f32[100]
  %w.prepared = copy(%w, layout="panels(axis=1, width=16)") : f32[64, 100]
  %m = matmul(%x, %w.prepared) : f32[M, 100]
  %y = add(%m, %b) : f32[M, 100]
  output %y
})TSL"));
    CHECK(big.plan.conversions == 1);
    // Replanned, the copy is a group of its own, prepared from the weight alone.
    const FusionPlan replanned = plan_fusion(big.g);
    bool copy_prepared = false;
    for (const FusionGroup &fg : replanned.groups)
        for (ValueId v : fg.nodes) copy_prepared = copy_prepared || (big.g.node(v).op == Op::Copy && fg.prepared);
    CHECK(copy_prepared);
    const std::string report = big.plan.to_string(big.g);
    INFO(report);
    // The region's costs: forcing row-major (per-call packing doubles the bytes), the chosen
    // panels (padded to 112 columns), and the one-time conversion.
    CHECK(report.find("region %w : f32[64, 100], read per call by %m") != std::string::npos);
    CHECK(report.find("row_major: 51200 B per call (forcing the producer's layout)") != std::string::npos);
    CHECK(report.find("* panels(axis=1, width=16): 28672 B per call, one-time 54272 B") != std::string::npos);
    CHECK(report.find("-> panels(axis=1, width=16): cheaper per call than forcing row-major; a copy of the weight, converted "
                      "once when the weights are prepared; inserted %w.prepared") != std::string::npos);
    // The bias is read elementwise: row-major is its only candidate.
    CHECK(report.find("-> row_major: row-major only: read by %y (add)") != std::string::npos);

    Assigned one = assign(kLinear, options_at(1));
    CHECK(one.g.find("w.prepared") == kNoValue);
    CHECK(one.plan.conversions == 0);
    CHECK(one.plan.to_string(one.g).find("* row_major: 25600 B per call") != std::string::npos);
}

TEST_CASE("the expected shapes are weighed by their calls") {
    LayoutOptions o = options_at(1);
    o.shapes = {{{{"M", 1}}, 100.0}, {{{"M", 512}}, 1.0}};  // decode-heavy: row-major
    Assigned a = assign(kLinear, o);
    CHECK(a.g.find("w.prepared") == kNoValue);
    o.shapes = {{{{"M", 1}}, 1.0}, {{{"M", 512}}, 100.0}};  // prefill-heavy: panels
    Assigned b = assign(kLinear, o);
    REQUIRE(b.g.find("w.prepared") != kNoValue);
    CHECK(b.g.node(b.g.find("w.prepared")).layout == Layout::panels(1, 16));
    CHECK(b.g.node(b.g.find("w")).layout.empty());
}

TEST_CASE("a layout written in the text is kept and reported as forced") {
    std::string text = kLinear;
    text.replace(text.find("weight : f32[64, 100]"), 21, "weight(layout=\"[1, 0]\") : f32[64, 100]");
    Assigned a = assign(text, options_at(512));
    CHECK(a.g.node(a.g.find("w")).layout == Layout::ordered({1, 0}));
    REQUIRE(!a.plan.regions.empty());
    CHECK(a.plan.regions[0].forced);
    CHECK(a.plan.to_string(a.g).find("the layout was set in the text; kept") != std::string::npos);
}

TEST_CASE("activation inputs, graph outputs and per-call values are never given a layout") {
    Assigned a = assign(R"(graph g mode=fast {
  %x = input : f32[M, 64]
  %w = input : f32[64, 100]
  %y = matmul(%x, %w) : f32[M, 100]
  output %y
})",
                        options_at(512));
    CHECK(a.plan.regions.empty());
    for (ValueId v : a.g.order()) CHECK(a.g.node(v).layout.empty());
}

TEST_CASE("weight-prepare: values from weights alone form prepared groups; widening casts stay per call") {
    Graph g = simplify_graph(parse(R"(graph g mode=fast {
  %x = input : f32[M, 64]
  %w_nk = weight : f32[100, 64]
  %w16 = cast(transpose(%w_nk)) : bf16[64, 100]
  %wide = cast(%w16) : f32[64, 100]
  %y = matmul(%x, %wide)
  output %y
})",
                                   "<test>"))
                  .graph;
    const std::vector<char> derived = weight_derived(g);
    CHECK(derived[g.find("w_nk")]);
    CHECK(derived[g.find("w16")]);
    CHECK_FALSE(derived[g.find("wide")]);  // widened per call: the kernel reads bf16
    CHECK_FALSE(derived[g.find("y")]);
    const FusionPlan plan = plan_fusion(g);
    REQUIRE(plan.groups.size() == 2);
    CHECK(plan.groups[0].prepared);
    CHECK(plan.groups[0].outputs == std::vector<ValueId>{g.find("w16")});
    CHECK_FALSE(plan.groups[1].prepared);
    bool logged = false;
    for (const FusionDecision &d : plan.decisions)
        logged = logged || (d.rule == "weight-prepare" && !d.fused && g.display_name(d.producer) == "w16");
    CHECK(logged);
    CHECK(plan.to_string(g).find("prepared once from weights") != std::string::npos);

    // The layout pass sees the prepared bf16 value as the region, read by the matmul through the cast.
    LayoutOptions o = options_at(512);
    const LayoutPlan lp = assign_layouts(g, plan, o);
    REQUIRE(lp.regions.size() == 1);
    CHECK(g.display_name(lp.regions[0].value) == "w16");
    CHECK(g.node(g.find("w16")).layout == Layout::panels(1, 16));
}

namespace {

/** Read costs with round numbers: a strided elementwise read 4, a strided softmax 9 (three
 * passes), a copy 3; contiguous: elementwise 1, softmax 1.5. */
LayoutOptions per_call_options(LayoutOptions::Conversions c = LayoutOptions::Conversions::Chosen) {
    LayoutOptions o;
    o.model.rates.read_cost[LayoutCostModel::Elementwise][0] = 1, o.model.rates.read_cost[LayoutCostModel::Elementwise][1] = 4;
    o.model.rates.read_cost[LayoutCostModel::Reduction][0] = 0.5, o.model.rates.read_cost[LayoutCostModel::Reduction][1] = 8;
    o.model.rates.read_cost[LayoutCostModel::Softmax][0] = 1.5, o.model.rates.read_cost[LayoutCostModel::Softmax][1] = 9;
    o.model.rates.conversion_cost = 3;
    o.shapes = {{{{"M", 100}}, 1.0}};
    o.conversions = c;
    return o;
}

const char *kColumnSoftmax = R"(graph cs mode=fast {
  %x = input : f32[M, 16]
  %w = input : f32[16, 32]
  %y = matmul(%x, %w) : f32[M, 32]
  %p = softmax(transpose(%y), axis=1) : f32[32, M]
  %h = gelu(%y)
  output %p, %h
}
)";

}  // namespace

TEST_CASE("per-call values: a softmax down the columns of a matmul's output gets a converted copy") {
    Assigned a = assign(kColumnSoftmax, per_call_options());
    // The copy stores y with axis 0 innermost; the transpose the softmax reads is inline in the
    // softmax's group and now reads the copy contiguously.
    CHECK(print(a.g) == canon(R"TSL(graph cs mode=fast {
  %x = input : f32[M, 16]
  %w = input : f32[16, 32]
  %y = matmul(%x, %w) : f32[M, 32]
  %y.axis0_inner = copy(%y, layout="[1, 0]") : f32[M, 32]
  %3 = transpose(%y.axis0_inner, perm=[1, 0]) : f32[32, M]
  %p = softmax(%3, axis=1) : f32[32, M]
  %h = gelu(%y) : f32[M, 32]
  output %p, %h
})TSL"));
    const std::string report = a.plan.to_string(a.g);
    INFO(report);
    // 100 x 32 f32 = 12800 B: forcing 9 x 12800; the copy 3 x 12800 plus the softmax 1.5 x 12800.
    CHECK(a.plan.conversions == 1);
    CHECK(report.find("region %y : f32[M, 32] (per call, stored row_major), read per call by %3") != std::string::npos);
    CHECK(report.find("no copy: 115200 B per call (forcing the producer's layout)") != std::string::npos);
    CHECK(report.find("%3 softmax along axis 0") != std::string::npos);
    CHECK(report.find("* copy to [1, 0]: 57600 B per call") != std::string::npos);
    CHECK(report.find("inserted %y.axis0_inner") != std::string::npos);
    // Planned again, the copy is a group of its own and the softmax's group reads it.
    const FusionPlan replanned = plan_fusion(a.g);
    bool cut = false;
    for (const FusionDecision &d : replanned.decisions) cut = cut || (d.rule == "layout-conversion" && !d.fused);
    CHECK(cut);
    CHECK(replanned.groups.size() == 3);
}

TEST_CASE("per-call values: one elementwise pass reads strided rather than pay for a copy") {
    std::string text = kColumnSoftmax;
    text.replace(text.find("softmax(transpose(%y), axis=1)"), 30, "exp(transpose(%y))");
    Assigned a = assign(text, per_call_options());
    CHECK(a.plan.conversions == 0);
    const std::string report = a.plan.to_string(a.g);
    INFO(report);
    // Forcing 4 x 12800 = 51200; the copy 3 + 1 = 4 x 12800 as well: within 2%, so forcing.
    CHECK(report.find("* no copy: 51200 B per call") != std::string::npos);
    CHECK(report.find("-> no copy: forcing the stored layout is within 2% of the cheapest conversion or cheaper") !=
          std::string::npos);
}

TEST_CASE("per-call values: the alternatives benchmarks compare (never a copy, a copy per reader)") {
    // Two readers walk y's axis 0 in two groups (a softmax and a matmul's epilogue that cannot
    // share a group with it): the choice shares one copy, EachReader makes two.
    const char *two = R"(graph two mode=fast {
  %x = input : f32[M, 16]
  %w = input : f32[16, 32]
  %v = input : f32[M, 8]
  %y = matmul(%x, %w) : f32[M, 32]
  %p = softmax(transpose(%y), axis=1) : f32[32, M]
  %o = matmul(transpose(%y), %v) : f32[32, 8]
  %q = %o + reduce_sum(transpose(%y), axes=[1], keepdims=true)
  output %p, %q
}
)";
    Assigned never = assign(two, per_call_options(LayoutOptions::Conversions::Never));
    CHECK(never.plan.conversions == 0);
    CHECK(never.plan.to_string(never.g).find("conversions are off") != std::string::npos);
    Assigned chosen = assign(two, per_call_options());
    Assigned each = assign(two, per_call_options(LayoutOptions::Conversions::EachReader));
    INFO(chosen.plan.to_string(chosen.g) << each.plan.to_string(each.g));
    CHECK(chosen.plan.conversions == 1);
    CHECK(each.plan.conversions >= chosen.plan.conversions);
    for (const Assigned *a : {&never, &chosen, &each}) CHECK(verify(a->g).empty());
}

TEST_CASE("per-call values: readers walking the stored innermost axis, or broadcasting, make no region") {
    Assigned a = assign(R"(graph rows mode=fast {
  %x = input : f32[M, 16]
  %w = input : f32[16, 32]
  %b = input : f32[M, 1]
  %y = matmul(%x, %w) : f32[M, 32]
  %p = softmax(%y, axis=1)
  %c = reduce_sum(%y, axes=[0])
  %t = transpose(%b) : f32[1, M]
  %s = reduce_sum(%t * 2.0, axes=[0])
  output %p, %c, %s
}
)",
                        per_call_options());
    INFO(a.plan.to_string(a.g));
    CHECK(a.plan.regions.empty());
    CHECK(a.plan.conversions == 0);
}
