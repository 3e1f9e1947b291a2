// The group-generic library schedules (cpu_elementwise, cpu_rows, cuda_elementwise, cuda_rows)
// applied to real fusion groups: CPU ones JIT-run against the reference interpreter at awkward
// sizes, CUDA ones assembled by ptxas for sm_90 without spills, all round-tripped through JSON.
#include "codegen/Compile.h"
#include "codegen/Ptxas.h"
#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/passes/Fusion.h"
#include "dsl/passes/FusionPolicy.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/Library.h"
#include "schedules/ScheduleJson.h"

#include "tests/TensorCompare.h"

#include <doctest/doctest.h>

#include <cmath>
#include <iostream>

#ifndef TESSEL_SOURCE_DIR
#error "TESSEL_SOURCE_DIR must point at the repository"
#endif

using namespace tessel;
using namespace tessel::lower;

namespace {

using Shape = std::map<std::string, int64_t>;

struct Case {
    const char *name;
    std::string file;       ///< algorithms/<file>, planned into groups by the fusion planner
    const char *text = "";  ///< else this graph, as one group of every node
};

dsl::Graph load(const Case &c) {
    if (!c.file.empty()) return dsl::simplify_file(std::string(TESSEL_SOURCE_DIR) + "/algorithms/" + c.file).graph;
    return dsl::simplify_text(c.text, c.name).graph;
}

dsl::FusionPlan groups_of(const dsl::Graph &g, const Case &c) {
    if (!c.file.empty()) return dsl::plan_fusion(g, {});
    dsl::FusionGroup all;
    all.name = "all";
    all.outputs = g.outputs;
    for (dsl::ValueId v : g.order())
        if (g.node(v).op != dsl::Op::Input) all.nodes.push_back(v);
    all.kind = dsl::group_kind(g, all.nodes);
    dsl::FusionPlan p;
    p.groups = {all};
    return p;
}

/** Applies library schedule `name` to every group, whatever its kind (these schedules are legal
 * for any group). */
ScheduleChooser force(const std::string &name, const Halide::Target &t) {
    return [name, t](const dsl::FusionGroup &, const LoweredGroup &g) {
        return std::optional<sched::ScheduleSpec>(library_schedule_for(name, g, t));
    };
}

const char *kElementwise = R"(graph ew {
  %x = input : f32[M, N]
  %b = input : f32[N]
  %y = tanh(%x * %b) + exp(neg(abs(%x)))
  output %y
})";

// Rank 1 and rank 3 outputs of one group (several outputs: reductions, if any, go to root).
const char *kElementwiseRanks = R"(graph ew_ranks {
  %v = input : f32[N]
  %t = input : f32[M, K, N]
  %y0 = relu(%v) - %v * 0.5
  %y1 = exp(neg(abs(%t))) + %v
  output %y0, %y1
})";

// A column reduction (kept axis n: vectorized along n), a multi-axis reduction and a softmax
// op, in one group.
const char *kReductions = R"(graph reductions {
  %x = input : f32[M, N]
  %col = reduce_sum(%x, axes=[0], keepdims=true)
  %all = reduce_mean(%x, axes=[0, 1], keepdims=true)
  %s = softmax(%x, axis=1)
  %y = %s * (%x / (abs(%col) + 1.0)) + %all
  output %y
})";

// Row sums without keepdims: a rank-1 output whose n is the row.
const char *kRowSums = R"(graph row_sums {
  %x = input : f32[M, N]
  %y = reduce_sum(exp(%x), axes=[1])
  output %y
})";

// Two outputs that read reductions: every reduction at root, in parallel.
const char *kReductionsTwoOutputs = R"(graph reductions2 {
  %x = input : f32[M, N]
  %m = reduce_mean(%x, axes=[1], keepdims=true)
  %c = reduce_max(%x, axes=[0], keepdims=true)
  %y0 = %x - %m
  %y1 = %x * %c
  output %y0, %y1
})";

std::vector<Case> cases() {
    return {{"softmax_rows", "softmax_rows.tsl"},
            {"layernorm_matmul", "layernorm_matmul.tsl"},
            {"mlp2", "mlp2.tsl"},
            {"elementwise", "", kElementwise},
            {"elementwise ranks 1 and 3", "", kElementwiseRanks},
            {"reductions", "", kReductions},
            {"row sums", "", kRowSums},
            {"reductions, two outputs", "", kReductionsTwoOutputs}};
}

/** Largest relative difference between `program` and the interpreter on random inputs. */
double max_relative_difference(const dsl::Graph &g, const CompiledGraph &program, const Shape &symbols) {
    dsl::RunOptions opts;
    opts.random_missing_inputs = true;
    opts.symbol_sizes = symbols;
    const dsl::RunResult ref = dsl::interpret(g, {}, opts);
    return testing::max_relative_difference(program.run(ref.inputs, ref.symbols), ref.outputs);
}

}  // namespace

TEST_CASE("every CPU group schedule matches the interpreter at awkward sizes") {
    const Halide::Target host = parse_target("host");
    const int64_t L = std::max(4, host.natural_vector_size<float>());
    const std::vector<Shape> shapes = {
        {{"M", 1}, {"N", 1}, {"K", 1}, {"H", 1}},                     // one row, one element
        {{"M", 13}, {"N", 37}, {"K", 37}, {"H", 29}},                 // primes
        {{"M", 2}, {"N", L - 1}, {"K", 5}, {"H", 3}},                 // a row shorter than one vector
        {{"M", 3}, {"N", 2 * L + 1}, {"K", L + 1}, {"H", L - 1}},     // one past a vector multiple
        {{"M", 1}, {"N", sched::kCpuBlock + 3}, {"K", 2}, {"H", 3}},  // rank 1: a block and a tail
    };
    for (const Case &c : cases()) {
        for (const char *name : {"cpu_elementwise", "cpu_rows"}) {
            SUBCASE((std::string(c.name) + " / " + name).c_str()) {
                const dsl::Graph g = load(c);
                CompiledGraph program(g, groups_of(g, c), host, force(name, host));
                for (const auto &cg : program.groups()) {
                    const sched::ScheduleSpec &schedule = cg.kernel->schedule();
                    INFO(cg.kernel->group().name << ": " << sched::to_string(schedule));
                    CHECK(cg.schedule_note == "schedule '" + std::string(name) + "'");
                    CHECK(sched::schedule_from_json(nlohmann::json::parse(sched::to_json(schedule).dump())) == schedule);
                }
                for (const Shape &shape : shapes) {
                    CAPTURE(shape.at("M"));
                    CAPTURE(shape.at("N"));
                    CHECK(max_relative_difference(g, program, shape) < 1e-4);
                }
            }
        }
    }
}

TEST_CASE("the lowering describes reductions for the schedules") {
    const Halide::Target host = parse_target("host");
    SUBCASE("softmax written out: two row reductions along n") {
        const Case c{"softmax_rows", "softmax_rows.tsl"};
        const dsl::Graph g = load(c);
        const auto groups = groups_of(g, c);
        REQUIRE(groups.groups.size() == 1);
        const sched::GroupShape shape = group_shape(lower_group(g, groups.groups[0]));
        CHECK(shape.kind == dsl::GroupKind::Reduction);
        CHECK(shape.outputs == std::vector<std::pair<std::string, int>>{{"y", 2}});
        REQUIRE(shape.reductions.size() == 2);
        for (const auto &r : shape.reductions) {
            CHECK(r.rank == 2);
            CHECK(r.rvars == std::vector<std::string>{"r"});
            CHECK(r.along_n);
            CHECK_FALSE(r.n_is_data);
            CHECK(r.row_local);
        }
        // cpu_rows vectorizes both through a vector of partial results; cuda_rows uses one
        // block per row.
        const auto cpu = sched::cpu_rows(shape, host);
        CHECK(std::count_if(cpu.steps.begin(), cpu.steps.end(),
                            [](const sched::Directive &d) { return std::holds_alternative<sched::RFactor>(d); }) == 2);
        CHECK(sched::cuda_rows_applies(shape));
    }
    SUBCASE("column and whole-tensor reductions and a softmax op") {
        const Case c{"reductions", "", kReductions};
        const dsl::Graph g = load(c);
        const sched::GroupShape shape = group_shape(lower_group(g, groups_of(g, c).groups[0]));
        REQUIRE(shape.reductions.size() == 4);  // col, all, softmax_max, softmax_sum
        int along_n = 0, n_data = 0, two_rvars = 0, row_local = 0;
        for (const auto &r : shape.reductions) {
            along_n += r.along_n;
            n_data += r.n_is_data;
            two_rvars += r.rvars.size() == 2;
            row_local += r.row_local;
        }
        CHECK(along_n == 2);    // the softmax's two
        CHECK(n_data == 1);     // the column sum keeps n
        CHECK(two_rvars == 1);  // the whole-tensor mean
        CHECK(row_local == 2);  // the softmax's two; the column sum and the mean reduce rows
        CHECK_FALSE(sched::cuda_rows_applies(shape));
        // Reductions over rows are computed once at root, not once per output row.
        const auto cpu = sched::cpu_rows(shape, host);
        CHECK(std::count_if(cpu.steps.begin(), cpu.steps.end(),
                            [](const sched::Directive &d) { return std::holds_alternative<sched::ComputeRoot>(d); }) == 2);
    }
    SUBCASE("row sums without keepdims") {
        const Case c{"row sums", "", kRowSums};
        const dsl::Graph g = load(c);
        const sched::GroupShape shape = group_shape(lower_group(g, groups_of(g, c).groups[0]));
        REQUIRE(shape.reductions.size() == 1);
        CHECK(shape.reductions[0].rank == 1);
        CHECK(shape.reductions[0].along_n);
        CHECK(shape.reductions[0].n_is_data);
        CHECK(shape.reductions[0].row_local);
    }
}

TEST_CASE("group-generic library entries need a group") {
    const Halide::Target host = parse_target("host");
    CHECK_THROWS_WITH_AS(sched::library_schedule("cpu_rows", host), doctest::Contains("generated for each reduction group"),
                         std::invalid_argument);
    CHECK(sched::library_schedule("cpu_rows", sched::example_group_shape(dsl::GroupKind::Reduction), host).name == "cpu_rows");
    CHECK(sched::default_library_schedule(dsl::GroupKind::Reduction, sched::Device::Cpu) == "cpu_rows");
    CHECK(sched::default_library_schedule(dsl::GroupKind::Elementwise, sched::Device::Cpu) == "cpu_elementwise");
    CHECK(sched::default_library_schedule(dsl::GroupKind::Reduction, sched::Device::Cuda) == "cuda_rows");
    CHECK(sched::default_library_schedule(dsl::GroupKind::Elementwise, sched::Device::Cuda) == "cuda_elementwise");
    for (const auto &e : sched::schedule_library()) {
        CAPTURE(e.name);
        CHECK(e.group_generic() == (e.group != dsl::GroupKind::MatmulEpilogue));
        CHECK(e.group_generic() != (bool)e.make);
    }
}

TEST_SUITE("cuda") {
    // Skipped (and counted as skipped) without the CUDA toolkit.
    TEST_CASE("every CUDA group schedule assembles for sm_90 without spills" * doctest::skip(find_ptxas().empty())) {
        const Halide::Target cuda = parse_target("host-cuda");
        for (const Case &c : cases()) {
            for (const char *name : {"cuda_elementwise", "cuda_rows"}) {
                SUBCASE((std::string(c.name) + " / " + name).c_str()) {
                    const dsl::Graph g = load(c);
                    CompiledGraph program(g, groups_of(g, c), cuda, force(name, cuda), KernelBackend::AheadOfTime);
                    for (const auto &cg : program.groups()) {
                        const sched::ScheduleSpec &schedule = cg.kernel->schedule();
                        INFO(cg.kernel->group().name << ": " << sched::to_string(schedule));
                        CHECK(cg.schedule_note == "schedule '" + std::string(name) + "'");
                        CHECK(sched::schedule_from_json(sched::to_json(schedule)) == schedule);
                        const PtxScheduleReport r = cg.kernel->ptx_report("sm_90");
                        INFO(r.to_string());
                        for (const auto &v : r.violations()) INFO(v);
                        CHECK(r.within_limits());
                    }
                }
            }
        }
    }

}  // TEST_SUITE
