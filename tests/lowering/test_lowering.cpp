// Lowered groups against the reference interpreter on random inputs, and checks read from the
// lowered code itself: no M x N intermediate for the running example, x loaded once per
// reduction step for a gated MLP.
#include "codegen/Compile.h"
#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/passes/FusionPolicy.h"
#include "lowering/CompiledGraph.h"
#include "tests/TempDir.h"
#include "schedules/Library.h"

#include "tests/TensorCompare.h"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

using namespace tessel;
using namespace tessel::lower;

namespace {

/** A plan of one group holding every non-input node; outputs are the graph's outputs. */
dsl::FusionPlan whole_graph_group(const dsl::Graph &g) {
    dsl::FusionGroup s;
    s.name = "all";
    s.outputs = g.outputs;
    for (dsl::ValueId v : g.order())
        if (g.node(v).op != dsl::Op::Input) s.nodes.push_back(v);
    s.kind = dsl::group_kind(g, s.nodes);
    dsl::FusionPlan p;
    p.groups = {s};
    return p;
}

/** Runs `text` through the interpreter and through Halide (one group, default or given schedule)
 * and returns the largest relative difference. */
double max_relative_difference(const std::string &text, const std::map<std::string, int64_t> &symbols,
                               const ScheduleChooser &choose = {}, std::string *schedule_note = nullptr) {
    dsl::Graph g = dsl::simplify_text(text, "<test>").graph;
    dsl::RunOptions opts;
    opts.random_missing_inputs = true;
    opts.symbol_sizes = symbols;
    const dsl::RunResult ref = dsl::interpret(g, {}, opts);
    CompiledGraph program(g, whole_graph_group(g), parse_target("host"), choose);
    const auto got = program.run(ref.inputs, ref.symbols);
    if (schedule_note) *schedule_note = program.groups()[0].schedule_note;
    return testing::max_relative_difference(got, ref.outputs);
}

const char *kGeluMlp = R"(graph gelu_mlp {
  %x = input : f32[M, K]
  %w = input : f32[K, N]
  %bias = input : f32[N]
  %y = gelu(matmul(%x, %w) + %bias)
  output %y
})";

const char *kGatedMlp = R"(graph gated {
  %x = input : f32[M, K]
  %w1 = input : f32[K, N]
  %w2 = input : f32[K, N]
  %y = gelu(matmul(%x, %w1)) * matmul(%x, %w2)
  output %y
})";

const char *kSoftmax = R"(graph softmax_rows {
  %x = input : f32[M, N]
  %y = softmax(%x, axis=1)
  output %y
})";

const char *kLayerNormLike = R"(graph layernorm_matmul {
  %x = input : f32[M, K]
  %w = input : f32[K, N]
  %mean = reduce_mean(%x, axes=[1], keepdims=true)
  %d = %x - %mean
  %var = reduce_mean(%d * %d, axes=[1], keepdims=true)
  %xn = %d * rsqrt(%var + 0.00001)
  %y = matmul(%xn, %w)
  output %y
})";

const char *kBroadcast = R"(graph bcast {
  %a = input : f32[M, 1]
  %b = input : f32[1, N]
  %c = input : f32[N]
  %y = relu(%a * %b + %c) - exp(neg(abs(%c)))
  output %y
})";

std::string lowered_stmt(const std::string &text, const std::map<std::string, int64_t> &) {
    dsl::Graph g = dsl::simplify_text(text, "<test>").graph;
    CompiledGraph program(g, whole_graph_group(g), parse_target("host"));
    const auto &lg = program.groups()[0].kernel->variants().back().lowered;
    const tessel::testing::TempDir dir;
    const auto path = dir.dir / "group.stmt";
    lg.pipeline().compile_to_lowered_stmt(path.string(), lg.arguments(), Halide::Text, parse_target("host"));
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

TEST_CASE("fused groups match the interpreter on awkward shapes") {
    struct Row {
        const char *name, *text;
        std::vector<std::map<std::string, int64_t>> shapes;
    };
    const Row rows[] = {
        {"gelu mlp", kGeluMlp, {{{"M", 1}, {"K", 7}, {"N", 5}}, {{"M", 13}, {"K", 37}, {"N", 41}}, {{"M", 64}, {"K", 33}, {"N", 70}}}},
        {"gated mlp", kGatedMlp, {{{"M", 1}, {"K", 16}, {"N", 3}}, {{"M", 9}, {"K", 31}, {"N", 47}}}},
        {"softmax", kSoftmax, {{{"M", 1}, {"N", 1}}, {{"M", 5}, {"N", 37}}}},
        {"layernorm then matmul", kLayerNormLike, {{{"M", 3}, {"K", 29}, {"N", 17}}}},
        {"broadcasting", kBroadcast, {{{"M", 1}, {"N", 1}}, {{"M", 7}, {"N", 19}}}},
    };
    for (const auto &r : rows) {
        SUBCASE(r.name) {
            for (const auto &shape : r.shapes) {
                CAPTURE(shape.size());
                CHECK(max_relative_difference(r.text, shape) < 1e-4);
            }
        }
    }
}

TEST_CASE("a library schedule with guarded variants applies to a lowered group by name") {
    // cpu_blocked addresses "matmul", "y" and the input "w"; its variants are picked by the
    // group's M, K, N at run time (M == 1, small M, blocked, fallback).
    const ScheduleChooser library = [](const dsl::FusionGroup &, const LoweredGroup &) {
        return std::optional<sched::ScheduleSpec>(sched::library_schedule("cpu_blocked", parse_target("host")));
    };
    for (auto shape : std::vector<std::map<std::string, int64_t>>{
             {{"M", 1}, {"K", 9}, {"N", 1030}}, {{"M", 3}, {"K", 17}, {"N", 300}}, {{"M", 19}, {"K", 23}, {"N", 101}},
             {{"M", 5}, {"K", 7}, {"N", 3}}}) {
        CAPTURE(shape.at("M"));
        std::string note;
        CHECK(max_relative_difference(kGeluMlp, shape, library, &note) < 1e-4);
        CHECK(note == "schedule 'cpu_blocked'");
    }
}

TEST_CASE("the running example's fused kernel allocates no M x N intermediate") {
    // With the default schedule, matmul is computed per row of y: its only allocation is one
    // row (sized by y's extent along n, dimension 0), never rows x columns; the bias add and
    // GELU allocate nothing at all (they are inline in y).
    const std::string stmt = lowered_stmt(kGeluMlp, {});
    INFO(stmt);
    std::smatch m;
    const std::regex alloc(R"(allocate (\S+)\[float32 \* ([^\]]*)\])");
    std::vector<std::string> allocations;
    for (auto it = std::sregex_iterator(stmt.begin(), stmt.end(), alloc); it != std::sregex_iterator(); ++it) {
        allocations.push_back((*it)[1]);
        const std::string extent = (*it)[2];
        CHECK(extent.find("extent.1") == std::string::npos);  // does not scale with M
    }
    REQUIRE(allocations.size() == 1);
    CHECK(allocations[0].rfind("matmul", 0) == 0);  // Halide suffixes repeated names ($N) within a process
}

TEST_CASE("the gated MLP's sibling matmuls read x once per reduction step") {
    const std::string stmt = lowered_stmt(kGatedMlp, {});
    INFO(stmt);
    // One Tuple-valued matmul Func computes both contractions in one loop over k (a vectorized
    // schedule has a second copy of that loop for the tail of n), and every copy reads one
    // element of x per iteration for both (one traversal of x).
    CHECK(std::regex_search(stmt, std::regex(R"(allocate matmul(\$\d+)?\.0\[)")));
    CHECK(std::regex_search(stmt, std::regex(R"(allocate matmul(\$\d+)?\.1\[)")));
    const std::regex k_loop(R"(\n( *)for \(matmul(\$\d+)?\.s1\.k\$x,[^\n]*\n)");
    const std::regex x_load(R"(x\[([^\]]*)\])");
    int loops = 0;
    for (auto it = std::sregex_iterator(stmt.begin(), stmt.end(), k_loop); it != std::sregex_iterator(); ++it) {
        const size_t begin = it->position() + it->length();
        const size_t end = stmt.find("\n" + (*it)[1].str() + "}", begin);
        const std::string body = stmt.substr(begin, end - begin);
        std::set<std::string> x_indices;
        for (auto x = std::sregex_iterator(body.begin(), body.end(), x_load); x != std::sregex_iterator(); ++x)
            x_indices.insert((*x)[1]);
        CHECK(x_indices.size() == 1);
        CHECK(body.find(".0[") != std::string::npos);
        CHECK(body.find(".1[") != std::string::npos);
        loops++;
    }
    CHECK(loops >= 1);
}
