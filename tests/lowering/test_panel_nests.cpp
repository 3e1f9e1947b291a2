// The panel nests (schedules/MatmulCpuSchedules.h): a matmul whose w is stored in panels of the
// register block's width is read in place, for every M, on AVX-512 and AVX2, f32 and bf16
// storage, against the reference interpreter at awkward shapes (M = 1, primes, N below, at and
// past a panel, K = 1) and on special values; the panel fact is dropped where the padding would
// be read for another operand (sibling matmuls).
#include <doctest/doctest.h>

#include <cmath>

#include "codegen/Compile.h"
#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Parser.h"
#include "dsl/passes/FusionPolicy.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/Library.h"
#include "schedules/MatmulCpuSchedules.h"
#include "tests/TensorCompare.h"

using namespace tessel;

namespace {

const char *const kAvx2 = "x86-64-linux-avx-avx2-f16c-fma-sse41";

/** gelu_tanh(x @ w + bias) with w a weight stored in panels of `width` columns, in `dtype`. */
std::string panel_graph(int width, const std::string &dtype) {
    const std::string layout = "layout=\"panels(axis=1, width=" + std::to_string(width) + ")\"";
    std::string w = dtype == "f32" ? "  %w = weight(" + layout + ") : f32[K, N]\n"
                                   : "  %ws = weight(" + layout + ") : " + dtype + "[K, N]\n  %w = cast(%ws) : f32[K, N]\n";
    return "graph panels mode=fast {\n  %x = input : f32[M, K]\n" + w +
           "  %bias = input : f32[N]\n  %y = gelu_tanh(matmul(%x, %w) + %bias)\n  output %y\n}\n";
}

struct Program {
    dsl::Graph g;
    dsl::FusionPlan plan;
    std::unique_ptr<CompiledGraph> compiled;
    std::string schedule_description;
};

/** Compiled as the compiler compiles it: cpu_blocked fitted to the group. */
std::unique_ptr<Program> compile(const std::string &text, const Halide::Target &target) {
    auto p = std::make_unique<Program>();
    p->g = dsl::simplify_graph(dsl::parse(text, "panels.tsl")).graph;
    p->plan = dsl::plan_fusion(p->g, lower::fusion_options(target));
    Program *raw = p.get();
    ScheduleChooser choose = [&, raw](const dsl::FusionGroup &fg,
                                      const lower::LoweredGroup &lg) -> std::optional<sched::ScheduleSpec> {
        if (fg.kind != dsl::GroupKind::MatmulEpilogue) return std::nullopt;
        sched::ScheduleSpec s = lower::library_schedule_for("cpu_blocked", lg, target);
        raw->schedule_description = s.description;
        return s;
    };
    p->compiled = std::make_unique<CompiledGraph>(p->g, p->plan, target, choose);
    return p;
}

}  // namespace

TEST_CASE("panel nests read a panel-stored w in place at awkward shapes, every M, AVX-512 and AVX2, f32 and bf16") {
    std::vector<std::string> targets{kAvx2};
    if (parse_target("host").has_feature(Halide::Target::AVX512)) targets.push_back("host");
    for (const std::string &t : targets) {
        const Halide::Target target = parse_target(t);
        const sched::CpuBlocking b = sched::CpuBlocking::for_target(target);
        for (const std::string dtype : {"f32", "bf16"}) {
            INFO("target " << t << " storage " << dtype << " panels of " << b.nr);
            auto p = compile(panel_graph(b.nr, dtype), target);
            // The panel nests, not the row-major ones reading through n / nr and n % nr.
            CHECK(p->schedule_description.find("panels of " + std::to_string(b.nr)) != std::string::npos);
            const std::vector<std::array<int64_t, 3>> shapes{{1, 37, 19},
                                                             {1, 1, 1},
                                                             {2, 64, b.nr},
                                                             {3, 5, b.nr + 1},
                                                             {b.mr - 1, 37, b.nr - 1},
                                                             {b.mr, 33, 2 * b.nr + 5},
                                                             {b.mr + 1, 7, 53},
                                                             {13, 100, 47},
                                                             {16, 64, 97},
                                                             {17, 3, 200},
                                                             {37, 19, 3 * b.nr}};
            testing::check_matmul_shapes(
                p->g, shapes, [&](const auto &inputs, const auto &symbols) { return p->compiled->run(inputs, symbols); });
        }
    }
}

TEST_CASE("panel nests keep NaN, infinities and -0 as the interpreter does") {
    const Halide::Target target = parse_target("host");
    const sched::CpuBlocking b = sched::CpuBlocking::for_target(target);
    auto p = compile(panel_graph(b.nr, "f32"), target);
    for (int64_t m : {1, 3, b.mr + 1}) {
        const int64_t k = 5, n = b.nr + 3;
        INFO("M=" << m);
        const std::map<std::string, int64_t> symbols{{"M", m}, {"K", k}, {"N", n}};
        dsl::RunResult ref = testing::random_reference(p->g, symbols, 5);
        std::map<std::string, dsl::Tensor> inputs = ref.inputs;
        const double specials[] = {NAN, INFINITY, -INFINITY, -0.0, 1e30, -1e30};
        for (size_t i = 0; i < 6; i++) {
            inputs.at("x").data[(i * 7) % inputs.at("x").data.size()] = specials[i];
            inputs.at("w").data[(i * 11 + 2) % inputs.at("w").data.size()] = specials[(i + 3) % 6];
        }
        inputs.at("bias").data[0] = -0.0;
        dsl::RunOptions ro;
        ro.symbol_sizes = symbols;
        const dsl::RunResult want = dsl::interpret(p->g, inputs, ro);
        const auto got = p->compiled->run(inputs, symbols);
        INFO(dsl::to_string(got[0]) << "\nwant " << dsl::to_string(want.outputs[0]));
        CHECK(testing::max_relative_difference(got, want.outputs) < 1e-4);
    }
}

TEST_CASE("the panel fact holds for a group's single contraction only") {
    const Halide::Target target = parse_target("host");
    const auto lowered = [&](const std::string &text) {
        const dsl::Graph g = dsl::simplify_graph(dsl::parse(text, "p.tsl")).graph;
        const dsl::FusionPlan plan = dsl::plan_fusion(g, lower::fusion_options(target));
        for (const auto &fg : plan.groups)
            if (fg.kind == dsl::GroupKind::MatmulEpilogue) return lower::lower_group(g, fg).rhs_panel_width;
        return int64_t(-1);
    };
    CHECK(lowered(panel_graph(48, "f32")) == 48);
    CHECK(lowered(panel_graph(48, "bf16")) == 48);
    // Siblings share x: the second w is row-major, and its columns past N are not padding.
    CHECK(lowered(R"TSL(graph s mode=fast {
  %x = input : f32[M, K]
  %w = weight(layout="panels(axis=1, width=48)") : f32[K, N]
  %v = weight : f32[K, N]
  %y = matmul(%x, %w) * matmul(%x, %v)
  output %y
})TSL") == 0);
    // Read through a transpose, the panel axis is not the matmul's n.
    CHECK(lowered(R"TSL(graph t mode=fast {
  %x = input : f32[M, K]
  %w = weight(layout="panels(axis=1, width=48)") : f32[N, K]
  %y = matmul(%x, transpose(%w))
  output %y
})TSL") == 0);
}

TEST_CASE("panel nests serve a batched matmul (x of rank 3, w in panels)") {
    const Halide::Target target = parse_target("host");
    const sched::CpuBlocking b = sched::CpuBlocking::for_target(target);
    auto p = compile("graph batched mode=fast {\n  %x = input : f32[B, M, K]\n  %w = weight(layout=\"panels(axis=1, width=" +
                         std::to_string(b.nr) + ")\") : f32[K, N]\n  %y = gelu_tanh(matmul(%x, %w))\n  output %y\n}\n",
                     target);
    CHECK(p->schedule_description.find("panels of " + std::to_string(b.nr)) != std::string::npos);
    for (const auto &symbols : std::vector<std::map<std::string, int64_t>>{{{"B", 3}, {"M", 5}, {"K", 37}, {"N", 53}},
                                                                           {{"B", 2}, {"M", 9}, {"K", 16}, {"N", 100}}}) {
        INFO("M=" << symbols.at("M") << " N=" << symbols.at("N"));
        const dsl::RunResult ref = testing::random_reference(p->g, symbols, 3);
        CHECK(testing::max_relative_difference(p->compiled->run(ref.inputs, ref.symbols), ref.outputs) < 1e-4);
    }
}
