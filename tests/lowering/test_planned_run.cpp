// The planned runner (lowering/CompiledGraph.h): intermediates at their memory-plan offsets in
// one arena, views without kernels, in-place kernels writing over their inputs. Every run is
// compared with the reference interpreter: the example graphs at awkward shapes, and random
// graphs fused and unfused (unfused plans have many views and in-place updates).
#include <doctest/doctest.h>

#include <filesystem>

#include "codegen/Compile.h"
#include "dsl/Pipeline.h"
#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Parser.h"
#include "dsl/passes/FusionPolicy.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "tests/TensorCompare.h"
#include "tests/dsl/RandomKernelGraphs.h"

using namespace tessel;

namespace {

struct Outcome {
    double error = 0;
    RunStats stats;
    dsl::BufferAssignment plan;
};

Outcome run_against_interpreter(dsl::Graph g, const std::map<std::string, int64_t> &symbols, bool fused,
                                const ArenaOptions &arena = {}, uint64_t seed = 1) {
    dsl::default_pipeline().run(g);
    const Halide::Target target = parse_target("host");
    dsl::FusionOptions fo = lower::fusion_options(target, symbols);
    if (!fused) fo.policy = &dsl::unfused_policy();
    const dsl::FusionPlan plan = dsl::plan_fusion(g, fo);
    dsl::RunOptions ro;
    ro.random_missing_inputs = true;
    ro.input_seed = seed;
    ro.symbol_sizes = symbols;
    const dsl::RunResult ref = dsl::interpret(g, {}, ro);
    CompiledGraph program(g, plan, target);
    Outcome o;
    const auto got = program.run(ref.inputs, ref.symbols, arena, &o.stats);
    o.error = testing::max_relative_difference(got, ref.outputs);
    o.plan = program.memory_plan(ref.symbols, arena);
    return o;
}

}  // namespace

TEST_CASE("planned runs: every example graph matches the interpreter at awkward shapes") {
    const std::vector<std::map<std::string, int64_t>> shapes = {
        {{"M", 1}, {"K", 7}, {"N", 5}, {"H", 3}, {"S", 1}, {"T", 1}},
        {{"M", 13}, {"K", 37}, {"N", 41}, {"H", 19}, {"S", 23}, {"T", 7}},
    };
    int graphs = 0;
    for (const auto &e : std::filesystem::directory_iterator(std::string(TESSEL_SOURCE_DIR) + "/algorithms")) {
        if (e.path().extension() != ".tsl") continue;
        const dsl::Graph g = dsl::parse_file(e.path().string());
        for (const auto &shape : shapes) {
            std::map<std::string, int64_t> symbols;
            for (const auto &[s, n] : shape) symbols[s] = n;
            for (bool fused : {true, false}) {
                INFO(e.path().filename().string() << (fused ? " fused" : " unfused") << " M=" << symbols["M"]);
                const Outcome o = run_against_interpreter(g, symbols, fused);
                CHECK(o.stats.planned);
                CHECK(o.stats.arena_bytes == o.plan.planned_peak);
                CHECK(o.error < 1e-4);
            }
        }
        graphs++;
    }
    CHECK(graphs >= 6);
}

TEST_CASE("planned runs: random graphs, fused and unfused, match the interpreter") {
    int views = 0, in_place = 0, runs = 0;
    for (uint64_t seed = 0; seed < 24; seed++) {
        const bool fused = seed % 3 != 0;
        const dsl::Graph g = dsl::test::random_kernel_graph(1000 + seed, 5 + seed % 7);
        ArenaOptions arena;
        if (seed % 4 == 1) {  // every fourth: concurrent waves on the no-concurrent-reuse plan
            arena.policy = dsl::ReusePolicy::NoConcurrentReuse;
            arena.concurrent_groups = true;
        }
        INFO("seed " << 1000 + seed << (fused ? " fused" : " unfused") << (arena.concurrent_groups ? " concurrent" : ""));
        const Outcome o = run_against_interpreter(g, {}, fused, arena, seed);
        CHECK(o.stats.planned);
        CHECK(o.error < 1e-3);
        views += o.stats.views;
        in_place += o.stats.in_place;
        runs++;
    }
    MESSAGE(runs << " random graphs: " << views << " views and " << in_place << " in-place kernels ran");
    CHECK(views > 0);
    CHECK(in_place > 0);
}

TEST_CASE("planned runs: both reuse policies and a caller's workspace give the same results") {
    const dsl::Graph g = dsl::parse_file(std::string(TESSEL_SOURCE_DIR) + "/algorithms/mlp2.tsl");
    const std::map<std::string, int64_t> symbols = {{"M", 5}, {"K", 11}, {"H", 17}, {"N", 3}};
    ArenaOptions separate;
    separate.policy = dsl::ReusePolicy::NoConcurrentReuse;
    CHECK(run_against_interpreter(g, symbols, false, separate).error < 1e-4);

    const Outcome planned = run_against_interpreter(g, symbols, false);
    REQUIRE(planned.plan.planned_peak > 0);
    std::vector<std::byte> bytes(planned.plan.planned_peak + 128);
    std::byte *aligned = bytes.data() + (64 - reinterpret_cast<uintptr_t>(bytes.data()) % 64) % 64;
    ArenaOptions workspace;
    workspace.workspace = aligned;
    workspace.workspace_bytes = planned.plan.planned_peak;
    CHECK(run_against_interpreter(g, symbols, false, workspace).error < 1e-4);
    workspace.workspace_bytes = planned.plan.planned_peak - 1;
    CHECK_THROWS_WITH_AS(run_against_interpreter(g, symbols, false, workspace), doctest::Contains("the memory plan needs"),
                         lower::LoweringError);
}

TEST_CASE("planned runs: graphs with effects are interpreter-driven, and say why") {
    const dsl::Graph g = dsl::parse(R"(
graph noisy {
  %x = input : f32[4, 4]
  %y = exp(%x)
  print(%y, label="y")
  output %y
})",
                                    "<noisy>");
    const Outcome o = run_against_interpreter(g, {}, true);
    CHECK_FALSE(o.stats.planned);
    CHECK(o.stats.interpreted_because.find("print") != std::string::npos);
    CHECK(o.error < 1e-6);
}

TEST_CASE("planned runs: independent groups run concurrently in waves, with the no-concurrent-reuse plan") {
    const dsl::Graph g = dsl::parse(R"(
graph branches {
  %x = input : f32[M, 24]
  %v = input : f32[M, 24]
  %w = input : f32[24, 24]
  %a = matmul(%x, %w)
  %b = exp(matmul(%a, %w) * 0.01)
  %c = matmul(%v, %w)
  %d = matmul(%c, %w)
  %y = %b * %d
  output %y
})",
                                    "<branches>");
    ArenaOptions concurrent;
    concurrent.policy = dsl::ReusePolicy::NoConcurrentReuse;
    concurrent.concurrent_groups = true;
    for (bool fused : {true, false}) {
        const Outcome o = run_against_interpreter(g, {{"M", 19}}, fused, concurrent);
        CHECK(o.error < 1e-4);
        CHECK(o.stats.waves < o.stats.kernels_run);  // some wave held two groups
    }
    ArenaOptions serial_plan;
    serial_plan.concurrent_groups = true;
    CHECK_THROWS_WITH_AS(run_against_interpreter(g, {{"M", 19}}, true, serial_plan), doctest::Contains("no-concurrent-reuse"),
                         lower::LoweringError);
}

TEST_CASE("planned runs: values whose names hold '.', as rematerialized clones do, lower and run") {
    const dsl::Graph g = dsl::parse(R"(
graph dotted {
  %x.in = input : f32[5, 7]
  %w = input : f32[7, 3]
  %a.b = matmul(%x.in, %w)
  %a_b = exp(%a.b * 0.1)
  %y = matmul(transpose(%a.b), %a_b)
  output %y
})",
                                    "<dotted>");
    for (bool fused : {true, false}) CHECK(run_against_interpreter(g, {}, fused).error < 1e-5);
}

TEST_CASE("planned runs: calls counted per shape on request, written as a shape profile") {
    const dsl::Graph g = dsl::simplify_text(R"(
graph counted {
  %x = input : f32[M, 8]
  %w = input : f32[8, 4]
  %y = relu(matmul(%x, %w))
  output %y
})",
                                            "<counted>")
                             .graph;
    const Halide::Target target = parse_target("host");
    CompiledGraph program(g, dsl::plan_fusion(g, lower::fusion_options(target, {})), target);
    auto inputs = [](int64_t m) {
        return std::map<std::string, dsl::Tensor>{{"x", dsl::Tensor::filled(dsl::DType::F32, {m, 8}, 0.5)},
                                                  {"w", dsl::Tensor::filled(dsl::DType::F32, {8, 4}, 0.25)}};
    };
    program.run(inputs(3), {});  // not recorded yet
    program.record_shapes();
    program.run(inputs(5), {});
    program.run(inputs(5), {});
    program.run(inputs(7), {});
    const std::string profile = program.shape_profile();
    CHECK(profile.find("M=5 calls=2\n") != std::string::npos);
    CHECK(profile.find("M=7 calls=1\n") != std::string::npos);
    CHECK(profile.find("M=3") == std::string::npos);
}
