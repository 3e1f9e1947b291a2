// The autoscheduler for attention groups (autoscheduler/AttentionSpace.h): the workload and its
// classes, the pruning rules, the cost terms' orderings that matter, sampled points compiled and
// checked against the interpreter at awkward sizes, and the tuner storing a winner then hitting it.
#include "autoscheduler/AttentionSpace.h"
#include "autoscheduler/Coverage.h"
#include "autoscheduler/Tuner.h"
#include "codegen/Compile.h"
#include "compiler/ScheduleSelection.h"
#include "dsl/Simplify.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "tests/TensorCompare.h"
#include "tests/autoscheduler/FakeMeasurer.h"

#include <doctest/doctest.h>

#ifndef TESSEL_SOURCE_DIR
#error "TESSEL_SOURCE_DIR must point at the repository"
#endif

using namespace tessel;
using namespace tessel::autosched;

namespace {

using Shape = std::map<std::string, int64_t>;

struct Planned {
    dsl::Graph g;
    dsl::FusionPlan plan;
};

Planned heads() {
    Planned p{dsl::simplify_file(std::string(TESSEL_SOURCE_DIR) + "/algorithms/attention_heads.tsl").graph, {}};
    p.plan = dsl::plan_fusion(p.g, lower::fusion_options(parse_target("host")));
    REQUIRE(p.plan.groups.size() == 1);
    REQUIRE(p.plan.groups[0].kind == dsl::GroupKind::Attention);
    return p;
}

Workload workload_at(const Planned &p, int64_t s) {
    auto w = group_workload(p.g, p.plan.groups[0], {{"S", s}});
    REQUIRE(w);
    return *w;
}

// Cross attention: S queries against L keys (decode when S is small).
const char *kCross = R"(graph cross mode=fast {
  %q = input : f32[8, S, 128]
  %k = input : f32[8, L, 128]
  %v = input : f32[8, L, 128]
  %o = matmul(softmax(matmul(%q, transpose(%k, perm=[0, 2, 1])) * 0.088, axis=2), %v)
  output %o
})";

CandidateParams point(int qb, int rows, int vectors, bool once) {
    CandidateParams p;
    p.nest = NestFamily::Attention;
    p.attention = {qb, rows, vectors, once};
    return p;
}

}  // namespace

TEST_CASE("attention space: workload, classes, the library's point and the pruning rules") {
    const Halide::Target host = parse_target("host");
    const TargetModel m = TargetModel::for_target(host);
    const Planned p = heads();
    const Workload prefill = workload_at(p, 2048), decode = workload_at(p, 1);
    CHECK(prefill.attention.batch == 8);
    CHECK(prefill.attention.queries == 2048);
    CHECK(prefill.attention.keys == 2048);
    CHECK(prefill.attention.depth == 64);
    CHECK(prefill.attention.masked);
    CHECK(prefill.shape_class() == ShapeClass::AttentionPrefill);
    CHECK(decode.shape_class() == ShapeClass::AttentionDecode);
    CHECK(prefill.to_string() == "S=2048");
    CHECK(library_point(prefill, host)->attention == sched::CpuAttentionParams::library(host));
    CHECK(library_point(decode, host)->attention == sched::CpuAttentionParams::decode(host));

    PruneReport report;
    const auto kept = prune(enumerate_space(prefill, m), prefill, m, &report);
    CHECK(!kept.empty());
    CHECK(kept.size() < report.generated);
    for (const auto &c : kept) {
        CHECK(c.attention.query_block % c.attention.row_tile == 0);
        CHECK(c.attention.row_tile * c.attention.col_vectors + c.attention.col_vectors + 1 <= m.cpu.vector_registers);
    }
    // Decode: no task of 128 query rows for one query.
    for (const auto &c : prune(enumerate_space(decode, m), decode, m)) CHECK(c.attention.query_block <= 16);
}

TEST_CASE("attention cost terms: copies once for many query blocks, per block for one; fuller tiles issue better") {
    const TargetModel m = TargetModel::for_target(parse_target("host"));
    const AnalyticalCostModel model(m);
    const Planned p = heads();
    const Workload prefill = workload_at(p, 2048);
    // Decode: one query against a cache of 4096 keys.
    Planned cross{dsl::simplify_text(kCross, "<cross>").graph, {}};
    cross.plan = dsl::plan_fusion(cross.g, lower::fusion_options(parse_target("host")));
    const auto dw = group_workload(cross.g, cross.plan.groups[0], {{"S", 1}, {"L", 4096}});
    REQUIRE(dw);
    const Workload decode = *dw;
    CHECK(decode.shape_class() == ShapeClass::AttentionDecode);
    auto cost = [&](const Workload &w, const CandidateParams &c) { return model.predict(w, std::vector<CandidateParams>{c})[0]; };
    CHECK(cost(prefill, point(64, 4, 2, true)).total_s() < cost(prefill, point(64, 4, 2, false)).total_s());
    CHECK(cost(decode, point(8, 1, 2, false)).total_s() < cost(decode, point(8, 1, 2, true)).total_s());
    CHECK(cost(prefill, point(64, 4, 2, true)).pipe_efficiency > cost(prefill, point(64, 1, 1, true)).pipe_efficiency);
    // Too few accumulators to hide the FMA latency: a 2 x 2 tile issues at half the rate of 4 x 2.
    CHECK(cost(prefill, point(64, 2, 2, true)).pipe_efficiency < cost(prefill, point(64, 4, 2, true)).pipe_efficiency);
    // A decode query in a task of 8 rows with 8-row tiles computes 8 rows: the tails count.
    CHECK(cost(decode, point(8, 8, 2, false)).flops > cost(decode, point(8, 1, 2, false)).flops);
}

TEST_CASE("points of the attention space match the interpreter at awkward sizes") {
    const Halide::Target host = parse_target("host");
    const TargetModel m = TargetModel::for_target(host);
    Planned p = heads();
    const Workload w = workload_at(p, 512);
    const auto kept = prune(enumerate_space(w, m), w, m);
    REQUIRE(kept.size() > 4);
    int checked = 0;
    for (size_t pick = 0; pick < kept.size(); pick += kept.size() / 4) {
        const ScheduleChooser choose = [&](const dsl::FusionGroup &,
                                           const lower::LoweredGroup &) -> std::optional<sched::ScheduleSpec> {
            return make_schedule(kept[pick], w, host);
        };
        const CompiledGraph program(p.g, p.plan, host, choose);
        for (const auto &cg : program.groups()) CHECK(cg.refused.empty());
        for (int64_t s : {1, 37, 130}) {
            INFO(kept[pick].to_string() << " S=" << s);
            const dsl::RunResult ref = testing::random_reference(p.g, {{"S", s}}, 9);
            CHECK(testing::max_relative_difference(program.run(ref.inputs, ref.symbols), ref.outputs) < 1e-4);
            checked++;
        }
    }
    CHECK(checked >= 12);
}

TEST_CASE("tuner on an attention group: the measured winner is stored under its class, then a database hit") {
    const Planned p = heads();
    TuneRequest r;
    r.graph = &p.g;
    r.group = p.plan.groups[0];
    r.target = parse_target("host");
    r.symbols = {{"S", 512}};
    r.workload = workload_at(p, 512);
    AnalyticalCostModel model(TargetModel::for_target(r.target));
    MemoryTuningCache cache;
    FakeMeasurer fake;
    fake.time_ms = [](const sched::ScheduleSpec &s) { return s.name == "candidate_2" ? 1.0 : 2.0; };
    TunerParams params;
    params.budget = 3;
    Tuner tuner(model, &fake, &cache, params);
    const TuneResult first = tuner.tune(r);
    CHECK(first.source == ScheduleProvenance::Measured);
    CHECK(first.key.shape_class == "attention_prefill");
    CHECK(first.key.shapes == "S=512");
    CHECK(first.params.nest == NestFamily::Attention);
    CHECK(first.schedule.group == dsl::GroupKind::Attention);
    const TuneResult second = tuner.tune(r);
    CHECK(second.source == ScheduleProvenance::Database);
    CHECK(second.schedule == first.schedule);
    const auto cov = coverage_by_class({first});
    REQUIRE(cov.size() == 1);
    CHECK(cov[0].shape_class == "attention_prefill");
}
