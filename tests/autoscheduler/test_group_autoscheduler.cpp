// The autoscheduler for elementwise and reduction groups (autoscheduler/GroupKindSpace.h): the
// space and its rules, points compiled and checked against the interpreter at awkward sizes and
// on special values, the tuner and database on such a group, and `tessel tune` measuring every
// group of a graph.
#include "autoscheduler/Coverage.h"
#include "autoscheduler/GroupKindSpace.h"
#include "autoscheduler/Tuner.h"
#include "codegen/Compile.h"
#include "compiler/ScheduleSelection.h"
#include "driver/Tune.h"
#include "dsl/Simplify.h"
#include "dsl/passes/Fusion.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/GroupSchedules.h"
#include "tests/TempDir.h"
#include "tests/TensorCompare.h"
#include "tests/autoscheduler/FakeMeasurer.h"

#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#ifndef TESSEL_SOURCE_DIR
#error "TESSEL_SOURCE_DIR must point at the repository"
#endif

using namespace tessel;
using namespace tessel::autosched;

namespace {

using Shape = std::map<std::string, int64_t>;

std::string algorithm(const std::string &name) { return std::string(TESSEL_SOURCE_DIR) + "/algorithms/" + name; }

// Column sums under a rank-1 elementwise epilogue (fusion keeps them in one group).
const char *kColumnsAndRank1 = R"(graph columns {
  %x = input : f32[M, N]
  %v = input : f32[N]
  %c = reduce_sum(%x * %x, axes=[0])
  %y = sqrt(%c) + tanh(%v)
  output %y
})";

// Softmax over the rows in exact mode: lane partial sums are not allowed.
const char *kExactSoftmax = R"(graph exact_softmax mode=exact {
  %x = input : f32[M, N]
  %y = softmax(%x, axis=1)
  output %y
})";

struct Planned {
    dsl::Graph g;
    dsl::FusionPlan plan;
};

Planned plan(const dsl::Graph &g) {
    Planned p{g, {}};
    p.plan = dsl::plan_fusion(p.g, lower::fusion_options(parse_target("host")));
    return p;
}

Planned plan_file(const std::string &name) { return plan(dsl::simplify_file(algorithm(name)).graph); }
Planned plan_text(const char *text) { return plan(dsl::simplify_text(text, "<test>").graph); }

const dsl::FusionGroup &first_of_kind(const Planned &p, dsl::GroupKind kind) {
    for (const auto &fg : p.plan.groups)
        if (fg.kind == kind) return fg;
    FAIL("no group of kind " << dsl::to_string(kind));
    return p.plan.groups.front();
}

Workload workload_of(const Planned &p, const dsl::FusionGroup &fg, const Shape &symbols) {
    auto w = group_workload(p.g, fg, symbols);
    REQUIRE(w);
    return *w;
}

/** The interpreter's run with special values planted in every input: NaN, +inf, -inf, -0 and a
 * large finite value, at spread-out positions. */
dsl::RunResult special_reference(const dsl::Graph &g, const Shape &symbols) {
    dsl::RunResult r = testing::random_reference(g, symbols, 5);
    const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 1e30f};
    for (auto &[name, t] : r.inputs)
        for (size_t i = 0; i < 5 && i * 7 < t.data.size(); i++) t.data[i * 7] = specials[i];
    dsl::RunOptions ro;
    ro.symbol_sizes = r.symbols;
    return dsl::interpret(g, r.inputs, ro);
}

}  // namespace

TEST_CASE("group-kind space: shape classes, the library's point, and the pruning rules") {
    const TargetModel m = TargetModel::for_target(parse_target("host"));
    const Halide::Target host = parse_target("host");

    const Planned softmax = plan_file("softmax_rows.tsl");
    const dsl::FusionGroup &fg = first_of_kind(softmax, dsl::GroupKind::Reduction);
    const Workload w = workload_of(softmax, fg, {{"M", 512}, {"N", 1024}});
    CHECK(w.shape_class() == ShapeClass::Rows);
    CHECK(w.to_string() == "M=512,N=1024");
    CHECK(w.group.rows == 512);
    CHECK(w.group.cols == 1024);
    CHECK(w.group.bytes == 2.0 * 512 * 1024 * 4);  // x read, y written

    const auto space = enumerate_space(w, m);
    PruneReport report;
    const auto kept = prune(space, w, m, &report);
    CHECK(report.generated == space.size());
    // Softmax has row-local reductions along n: both placements and both reduction forms.
    CHECK(space.size() == 8 * 3 * 2 * 2);
    // The library's cpu_rows is a point of the space, survives the rules, and is the same nest.
    const auto lib = library_point(w, host);
    REQUIRE(lib);
    CHECK(std::find(kept.begin(), kept.end(), *lib) != kept.end());
    const sched::ScheduleSpec tuned = make_schedule(*lib, w, host);
    CHECK(tuned.steps == sched::cpu_rows(w.group.shape, host).steps);

    // A row shorter than one vector: one vector per iteration only; 7 rows: at most 4 per task.
    const Workload small = workload_of(softmax, fg, {{"M", 7}, {"N", 13}});
    for (const auto &p : prune(enumerate_space(small, m), small, m)) {
        CHECK(p.group.vectors == 1);
        CHECK((!p.group.parallel || p.group.rows_per_task <= 4));
    }

    // Exact mode: no lane partial sums for row reductions.
    const Planned exact = plan_text(kExactSoftmax);
    const Workload we = workload_of(exact, first_of_kind(exact, dsl::GroupKind::Reduction), {{"M", 64}, {"N", 256}});
    CHECK(we.ordered_reductions);
    PruneReport exact_report;
    for (const auto &p : prune(enumerate_space(we, m), we, m, &exact_report)) CHECK_FALSE(p.group.vectorize_reductions);
    CHECK(exact_report.removed_by_rule.at(0).first == "ordered-sum");
    CHECK(exact_report.removed_by_rule.at(0).second > 0);

    // Column sums fused with a rank-1 epilogue: one group of class columns, whose space offers
    // rank-1 blocks and accumulators per column-sum task.
    const Planned cols = plan_text(kColumnsAndRank1);
    REQUIRE(cols.plan.groups.size() == 1);
    const Workload wc = workload_of(cols, cols.plan.groups[0], {{"M", 300}, {"N", 70000}});
    CHECK(wc.shape_class() == ShapeClass::Columns);
    CHECK(wc.group.rows == 1);
    CHECK(wc.group.cols == 70000);
    bool blocks = false, accumulators = false;
    for (const auto &p : prune(enumerate_space(wc, m), wc, m)) {
        blocks |= p.group.block != sched::kCpuBlock;
        accumulators |= p.group.reduction_vectors > 1;
    }
    CHECK(blocks);
    CHECK(accumulators);

    // The model ranks one serial thread first for a tiny group and a parallel nest for a large one.
    AnalyticalCostModel model(m);
    auto best = [&](const Workload &x) {
        const auto k = prune(enumerate_space(x, m), x, m);
        const auto c = model.predict(x, k);
        return k[std::min_element(c.begin(), c.end(), [](auto &a, auto &b) { return a.total_s() < b.total_s(); }) - c.begin()];
    };
    CHECK_FALSE(best(small).group.parallel);
    CHECK(best(workload_of(softmax, fg, {{"M", 4096}, {"N", 4096}})).group.parallel);
}

TEST_CASE("points of the group-kind space match the interpreter at awkward sizes and on special values") {
    const Halide::Target host = parse_target("host");
    const TargetModel m = TargetModel::for_target(host);
    const int64_t L = m.cpu.lanes;
    const std::vector<Shape> shapes = {
        {{"M", 1}, {"N", 1}, {"K", 1}},                   // one element
        {{"M", 13}, {"N", 37}, {"K", 37}},                // primes
        {{"M", 2}, {"N", L - 1}, {"K", L - 1}},           // a row shorter than one vector
        {{"M", 67}, {"N", 4 * L + 3}, {"K", 4 * L + 3}},  // past four vectors, rows not a task multiple
        {{"M", 3}, {"N", 70001}, {"K", 5}},               // rank 1: several blocks and a tail
    };
    struct Case {
        const char *name;
        Planned p;
    };
    std::vector<Case> cases;
    cases.push_back({"softmax_rows", plan_file("softmax_rows.tsl")});
    cases.push_back({"layernorm_matmul", plan_file("layernorm_matmul.tsl")});
    cases.push_back({"columns and rank 1", plan_text(kColumnsAndRank1)});
    cases.push_back({"exact softmax", plan_text(kExactSoftmax)});
    int checked = 0;
    for (const auto &c : cases) {
        // Every third surviving point of each group at a mid-sized workload, then the library's
        // point once a group has run out: every knob value is compiled, and a nest is the same
        // for every size, so each runs at every shape below.
        for (size_t pick = 0;; pick += 3) {
            bool any = false;
            const ScheduleChooser choose = [&](const dsl::FusionGroup &fg,
                                               const lower::LoweredGroup &) -> std::optional<sched::ScheduleSpec> {
                if (fg.kind == dsl::GroupKind::MatmulEpilogue) return std::nullopt;
                const Workload w = workload_of(c.p, fg, {{"M", 256}, {"N", 4096}, {"K", 4096}});
                const auto kept = prune(enumerate_space(w, m), w, m);
                if (pick >= kept.size()) return make_schedule(*library_point(w, host), w, host);
                any = true;
                return make_schedule(kept[pick], w, host);
            };
            const CompiledGraph program(c.p.g, c.p.plan, host, choose);
            if (!any) break;
            for (const auto &cg : program.groups()) CHECK(cg.refused.empty());
            for (const auto &s : shapes) {
                INFO(c.name << " point " << pick << " M=" << s.at("M") << " N=" << s.at("N"));
                const dsl::RunResult ref = testing::random_reference(c.p.g, s, 3);
                CHECK(testing::max_relative_difference(program.run(ref.inputs, ref.symbols), ref.outputs) < 1e-4);
                const dsl::RunResult special = special_reference(c.p.g, s);
                CHECK(testing::max_relative_difference(program.run(special.inputs, special.symbols), special.outputs) < 1e-4);
                checked++;
            }
        }
    }
    CHECK(checked > 40);
}

TEST_CASE("tuner on a reduction group: the measured winner is stored under its class, then a database hit") {
    const Planned softmax = plan_file("softmax_rows.tsl");
    const dsl::FusionGroup &fg = first_of_kind(softmax, dsl::GroupKind::Reduction);
    TuneRequest r;
    r.graph = &softmax.g;
    r.group = fg;
    r.target = parse_target("host");
    r.symbols = {{"M", 512}, {"N", 1024}};
    r.workload = workload_of(softmax, fg, r.symbols);
    AnalyticalCostModel model(TargetModel::for_target(r.target));
    MemoryTuningCache cache;
    FakeMeasurer fake;
    fake.time_ms = [](const sched::ScheduleSpec &s) { return s.name == "candidate_2" ? 1.0 : 2.0; };
    TunerParams params;
    params.budget = 3;
    Tuner tuner(model, &fake, &cache, params);
    const TuneResult first = tuner.tune(r);
    CHECK(first.source == ScheduleProvenance::Measured);
    CHECK(first.key.shape_class == "rows");
    CHECK(first.key.shapes == "M=512,N=1024");
    CHECK(first.params == first.ranked[1].params);
    CHECK(first.schedule.group == dsl::GroupKind::Reduction);
    const TuneResult second = tuner.tune(r);
    CHECK(second.source == ScheduleProvenance::Database);
    CHECK(second.schedule == first.schedule);
    const auto cov = coverage_by_class({first});
    REQUIRE(cov.size() == 1);
    CHECK(cov[0].shape_class == "rows");
    CHECK(cov[0].measured >= 3);
}

TEST_CASE("tessel tune measures every group of a graph and reports coverage per class") {
    testing::TempDir dir;
    TuneOptions o;
    o.file = algorithm("layernorm_matmul.tsl");
    o.shapes = {"8x64x48"};
    o.db = dir.file("t.db");
    o.params.budget = 2;
    o.params.repeats = 2;
    o.params.finalists = 0;
    std::ostringstream out;
    CHECK(run_tune(o, out) == 0);
    const std::string text = out.str();
    INFO(text);
    CHECK(text.find("[reduction] shape 8x64x48 (K=64,M=8, rows)") != std::string::npos);
    CHECK(text.find("[matmul+epilogue]") != std::string::npos);
    CHECK(text.find("(measured)") != std::string::npos);
    CHECK(text.find("\nrows ") != std::string::npos);  // the coverage table's row for the class

    // A second run finds every group in the database.
    std::ostringstream again;
    o.params.budget = 1;
    CHECK(run_tune(o, again) == 0);
    CHECK(again.str().find("database hit") != std::string::npos);
}
