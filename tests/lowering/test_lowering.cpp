// Lowered groups against the reference interpreter on random inputs, and checks read from the
// lowered code itself: no M x N intermediate for the running example, x loaded once per
// reduction step for a gated MLP.
#include "codegen/Compile.h"
#include "codegen/Ptxas.h"
#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Parser.h"
#include "dsl/passes/FusionPolicy.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/Library.h"
#include "tests/TempDir.h"

#include "support/ErrorStats.h"
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
        {"gelu mlp",
         kGeluMlp,
         {{{"M", 1}, {"K", 7}, {"N", 5}}, {{"M", 13}, {"K", 37}, {"N", 41}}, {{"M", 64}, {"K", 33}, {"N", 70}}}},
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

TEST_CASE("a value read twice is built once: 60 chained squarings lower as a DAG and match the interpreter") {
    // Inlined as a tree this is 2^60 nodes; before at() shared its Exprs it never finished.
    std::string text = "graph squares {\n  %v0 = input : f32[M, 19]\n";
    for (int i = 1; i <= 60; i++) {
        const std::string p = "%v" + std::to_string(i - 1);
        text += "  %v" + std::to_string(i) + " = " + p + " * " + p + " * 0.5 + 0.25\n";
    }
    text += "  output %v60\n}\n";
    for (int64_t M : {1, 7}) CHECK(max_relative_difference(text, {{"M", M}}) == 0.0);
}

TEST_CASE("a library schedule with guarded variants applies to a lowered group by name") {
    // cpu_blocked addresses "matmul", "y" and the input "w"; its variants are picked by the
    // group's M, K, N at run time (M == 1, small M, blocked, fallback).
    const ScheduleChooser library = [](const dsl::FusionGroup &, const LoweredGroup &) {
        return std::optional<sched::ScheduleSpec>(sched::library_schedule("cpu_blocked", parse_target("host")));
    };
    for (auto shape : std::vector<std::map<std::string, int64_t>>{{{"M", 1}, {"K", 9}, {"N", 1030}},
                                                                  {{"M", 3}, {"K", 17}, {"N", 300}},
                                                                  {{"M", 19}, {"K", 23}, {"N", 101}},
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

// ---- Special values: NaN, +-inf and -0 through the compiled path (docs/TSL.md, "Special values").

namespace {

/** The interpreter's and the compiled graph's outputs for `inputs` (one group, as above). */
std::pair<std::vector<dsl::Tensor>, std::vector<dsl::Tensor>> run_both(const dsl::Graph &g,
                                                                       const std::map<std::string, dsl::Tensor> &inputs,
                                                                       const std::map<std::string, int64_t> &symbols,
                                                                       const ScheduleChooser &choose = {}) {
    dsl::RunOptions opts;
    opts.symbol_sizes = symbols;
    const dsl::RunResult ref = dsl::interpret(g, inputs, opts);
    CompiledGraph program(g, whole_graph_group(g), parse_target("host"), choose);
    return {program.run(ref.inputs, ref.symbols), ref.outputs};
}

/** Largest relative error under support/ErrorStats.h's rule (NaN matches only NaN, an infinity
 * only itself); also counts zeros whose sign differs, which that rule does not see. */
struct SpecialCompare {
    double max_rel = 0;
    int sign_of_zero_mismatches = 0, nans = 0, infs = 0;  ///< in the reference
    std::string first_bad;
};
SpecialCompare compare_special(const std::vector<dsl::Tensor> &got, const std::vector<dsl::Tensor> &want) {
    SpecialCompare c;
    REQUIRE(got.size() == want.size());
    for (size_t o = 0; o < got.size(); o++) {
        REQUIRE(got[o].shape == want[o].shape);
        for (size_t i = 0; i < got[o].data.size(); i++) {
            const double a = got[o].data[i], b = want[o].data[i];
            const double rel = pair_error(a, b).second;
            const bool zero_sign = a == 0 && b == 0 && std::signbit(a) != std::signbit(b);
            if ((rel > 1e-4 || zero_sign) && c.first_bad.empty())
                c.first_bad = "output " + std::to_string(o) + " element " + std::to_string(i) + ": got " + std::to_string(a) +
                              (std::signbit(a) ? " (sign set)" : "") + ", want " + std::to_string(b) +
                              (std::signbit(b) ? " (sign set)" : "");
            c.max_rel = std::max(c.max_rel, rel);
            c.sign_of_zero_mismatches += zero_sign;
            c.nans += std::isnan(b);
            c.infs += std::isinf(b);
        }
    }
    return c;
}

/** Random inputs in [-2, 2) with special values injected: every (7 * spread)th element NaN,
 * every (11 * spread)th +inf and every (13 * spread)th -inf, every 5th -0
 * (offsets keep the patterns apart). A larger spread leaves some rows of a matmul finite. */
std::map<std::string, dsl::Tensor> special_inputs(const dsl::Graph &g, const std::map<std::string, int64_t> &symbols,
                                                  size_t spread) {
    dsl::RunOptions opts;
    opts.random_missing_inputs = true;
    opts.symbol_sizes = symbols;
    auto inputs = dsl::interpret(g, {}, opts).inputs;
    for (auto &[name, t] : inputs)
        for (size_t i = 0; i < t.data.size(); i++) {
            if (i % (7 * spread) == 3)
                t.data[i] = NAN;
            else if (i % (11 * spread) == 5)
                t.data[i] = INFINITY;
            else if (i % (13 * spread) == 6)
                t.data[i] = -INFINITY;
            else if (i % 5 == 1)
                t.data[i] = -0.0;
        }
    return inputs;
}

/** `text` in `mode` (strict or fast), simplified, compiled and run on special_inputs(). */
SpecialCompare special_value_difference(std::string text, const std::map<std::string, int64_t> &symbols, size_t spread,
                                        const char *mode = "strict", const ScheduleChooser &choose = {}) {
    text.replace(text.find('{'), 1, std::string("mode=") + mode + " {");
    const dsl::Graph g = dsl::simplify_text(text, "<test>").graph;
    const auto [got, want] = run_both(g, special_inputs(g, symbols, spread), symbols, choose);
    return compare_special(got, want);
}

/** Every pair (a, b) of these values, a along the rows and b along the columns. */
const double kSpecials[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1.0, -1.0, 3.5};
constexpr int64_t kNumSpecials = 8;

ScheduleChooser library(const char *name) {
    return [name](const dsl::FusionGroup &, const LoweredGroup &lg) {
        return std::optional<sched::ScheduleSpec>(library_schedule_for(name, lg, parse_target("host")));
    };
}

}  // namespace

TEST_CASE("special values: max, min and relu follow IEEE maximum/minimum in compiled code") {
    // Every pair of {NaN, +-inf, -0, +0, finite}, tiled to 8 x 48 so vector lanes and the
    // scalar tail both see every pair: NaN wins, max(-0, +0) = +0, min(-0, +0) = -0, relu(-0) = +0.
    const int64_t rows = kNumSpecials, cols = 6 * kNumSpecials;
    dsl::Tensor a = dsl::Tensor::filled(dsl::DType::F32, {rows, cols}, 0), b = a;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            a.data[(size_t)(i * cols + j)] = kSpecials[i];
            b.data[(size_t)(i * cols + j)] = kSpecials[j % kNumSpecials];
        }
    const std::map<std::string, int64_t> symbols{{"M", rows}, {"N", cols}};
    for (const char *mode : {"strict", "fast"}) {
        for (const char *expr : {"max(%a, %b)", "max(%b, %a)", "min(%a, %b)", "min(%b, %a)", "relu(%a)", "relu(%b)", "max(%a, 0)",
                                 "min(0, %b)", "relu(%a * %b) + min(%a, %b)"}) {
            INFO(std::string(mode) << ": " << std::string(expr));
            const std::string text = std::string("graph m mode=") + mode +
                                     " {\n %a = input : f32[M, N]\n %b = input : f32[M, N]\n %y = " + expr + "\n output %y\n}";
            const dsl::Graph g = dsl::simplify_text(text, "<test>").graph;
            for (const char *schedule : {"cpu_elementwise", "cpu_rows"}) {
                if (std::string(mode) == "fast" && std::string(schedule) == "cpu_elementwise") continue;  // time
                INFO("schedule " << std::string(schedule));
                const auto [got, want] = run_both(g, {{"a", a}, {"b", b}}, symbols, library(schedule));
                const SpecialCompare c = compare_special(got, want);
                INFO(c.first_bad);
                CHECK(c.max_rel == 0);
                CHECK(c.sign_of_zero_mismatches == 0);
            }
        }
    }
}

TEST_CASE("special values: reduce_max and softmax rows propagate NaN in compiled code") {
    // Rows: finite; a NaN (first, middle, last, in the vector tail); +inf; all -inf (softmax:
    // NaN, as -inf - -inf); a -inf among finite values (softmax: exactly 0 there); -0 and +0.
    const int64_t n = 37;
    std::vector<std::vector<double>> rows;
    auto row = [&](auto f) {
        std::vector<double> r((size_t)n);
        for (int64_t j = 0; j < n; j++) r[(size_t)j] = f(j);
        rows.push_back(r);
    };
    row([](int64_t j) { return std::sin((double)j); });
    for (int64_t at : {0, 17, 31, 36}) row([at](int64_t j) { return j == at ? NAN : std::cos((double)j); });
    row([](int64_t j) { return j == 20 ? INFINITY : (double)j; });
    row([](int64_t) { return -INFINITY; });
    row([](int64_t j) { return j == 3 ? -INFINITY : 0.25 * (double)j; });
    row([](int64_t j) { return j % 2 ? -0.0 : 0.0; });
    row([](int64_t) { return -0.0; });
    row([](int64_t j) { return j == 9 ? NAN : (j == 10 ? INFINITY : -INFINITY); });
    dsl::Tensor x = dsl::Tensor::filled(dsl::DType::F32, {(int64_t)rows.size(), n}, 0);
    for (size_t i = 0; i < rows.size(); i++)
        for (int64_t j = 0; j < n; j++) x.data[i * (size_t)n + (size_t)j] = rows[i][(size_t)j];
    const std::map<std::string, int64_t> symbols{{"M", (int64_t)rows.size()}, {"N", n}};
    const char *bodies[] = {"%y = reduce_max(%x, axes=[1])", "%y = reduce_max(%x, axes=[1], keepdims=true)",
                            "%y = softmax(%x, axis=1)",      "%y = reduce_max(%x, axes=[0])",
                            "%y = softmax(%x, axis=0)",      "%y = %x - reduce_max(%x, axes=[1], keepdims=true)"};
    for (const char *mode : {"strict", "fast"}) {
        for (const char *body : bodies) {
            INFO(std::string(mode) << ": " << std::string(body));
            const std::string text =
                std::string("graph r mode=") + mode + " {\n %x = input : f32[M, N]\n " + body + "\n output %y\n}";
            const dsl::Graph g = dsl::simplify_text(text, "<test>").graph;
            for (const char *schedule : {"cpu_elementwise", "cpu_rows"}) {
                if (std::string(mode) == "fast" && std::string(schedule) == "cpu_elementwise") continue;  // time
                INFO("schedule " << std::string(schedule));
                const auto [got, want] = run_both(g, {{"x", x}}, symbols, library(schedule));
                const SpecialCompare c = compare_special(got, want);
                INFO(c.first_bad);
                CHECK(c.nans > 0);
                CHECK(c.max_rel < 1e-5);
                CHECK(c.sign_of_zero_mismatches == 0);
            }
        }
    }
}

TEST_CASE("special values: fused groups and the running example on inputs with NaN, inf and -0") {
    // The differential test above with special values injected into its random inputs.
    const char *kReluMlp = R"(graph relu_mlp {
  %x = input : f32[M, K]
  %w = input : f32[K, N]
  %bias = input : f32[N]
  %y = relu(matmul(%x, %w) + %bias)
  output %y
})";
    const char *kMaxMinGroup = R"(graph maxmin {
  %a = input : f32[M, N]
  %b = input : f32[M, N]
  %y = max(%a, %b) * 2 - min(%a, relu(%b)) + exp(neg(abs(%a)))
  output %y
})";
    const char *kReluMaxMin = R"(graph relumaxmin {
  %a = input : f32[M, N]
  %b = input : f32[M, N]
  %y = relu(max(%a, %b) - min(%a, %b * 0.5)) + max(%a + %b, 1)
  output %y
})";
    struct Row {
        const char *name, *text;
        std::map<std::string, int64_t> shape;
        size_t spread;
    };
    const Row rows[] = {
        {"gelu mlp", kGeluMlp, {{"M", 13}, {"K", 37}, {"N", 41}}, 16},
        {"relu mlp", kReluMlp, {{"M", 9}, {"K", 16}, {"N", 45}}, 8},
        {"softmax", kSoftmax, {{"M", 9}, {"N", 37}}, 4},
        {"broadcasting", kBroadcast, {{"M", 7}, {"N", 19}}, 1},
        {"max/min group", kMaxMinGroup, {{"M", 6}, {"N", 29}}, 1},
        {"relu/max/min, no exp", kReluMaxMin, {{"M", 6}, {"N", 29}}, 1},
    };
    for (const char *mode : {"strict", "fast"}) {
        for (const auto &r : rows) {
            INFO(std::string(mode) << ": " << std::string(r.name));
            const SpecialCompare c = special_value_difference(r.text, r.shape, r.spread, mode);
            INFO(c.first_bad);
            CHECK(c.nans > 0);
            CHECK(c.max_rel < 1e-4);
        }
    }
    // A library matmul schedule (blocked, guarded variants) on the same inputs.
    const ScheduleChooser blocked = [](const dsl::FusionGroup &, const LoweredGroup &) {
        return std::optional<sched::ScheduleSpec>(sched::library_schedule("cpu_blocked", parse_target("host")));
    };
    for (const char *text : {kGeluMlp, kReluMlp}) {
        const SpecialCompare c = special_value_difference(text, {{"M", 19}, {"K", 23}, {"N", 101}}, 16, "strict", blocked);
        INFO(c.first_bad);
        CHECK(c.max_rel < 1e-4);
    }
}

TEST_CASE("special values: exp and the tanh GELU follow their formulas on NaN, infinities and overflow") {
    // Halide's exp is a polynomial with a float-to-int exponent conversion (exp(NaN) = exp(+inf)
    // = exp(1e30) = 0 unguarded); the lowering selects the IEEE results on the float's bits
    // (IeeeMath.cpp, ieee_exp), so NaN stays NaN, exp(+inf) = exp(1e30) = inf, and the fast
    // tanh-GELU v / (1 + exp(-2u)) gives gelu_tanh(-inf) = NaN as its formula does.
    dsl::Tensor a = dsl::Tensor::filled(dsl::DType::F32, {1, kNumSpecials + 1}, 1e30);
    for (int64_t i = 0; i < kNumSpecials; i++) a.data[(size_t)i] = kSpecials[i];
    for (const char *e : {"exp(%a)", "gelu_tanh(%a)"}) {
        for (const char *mode : {"strict", "fast"}) {
            INFO(std::string(mode) << ": " << std::string(e));
            const std::string text =
                std::string("graph k mode=") + mode + " {\n %a = input : f32[M, N]\n %y = " + e + "\n output %y\n}";
            const dsl::Graph g = dsl::simplify_text(text, "<test>").graph;
            const auto [got, want] = run_both(g, {{"a", a}}, {{"M", 1}, {"N", kNumSpecials + 1}});
            const SpecialCompare c = compare_special(got, want);
            INFO(c.first_bad);
            CHECK(c.max_rel < 1e-4);
        }
    }
}
TEST_CASE("special values: the erf GELU follows its formula on NaN, infinities and huge values") {
    // Halide's erf divides infinities (erf(+inf) = erf(1e30) = NaN); ieee_erf selects +-1 from
    // |x| >= 4 on the bits (IeeeMath.cpp), so gelu(+inf) = inf, gelu(1e30) = 1e30 and
    // gelu(-inf) = NaN as the formula (and the interpreter) give.
    dsl::Tensor a = dsl::Tensor::filled(dsl::DType::F32, {1, kNumSpecials + 3}, 1e30);
    for (int64_t i = 0; i < kNumSpecials; i++) a.data[(size_t)i] = kSpecials[i];
    a.data[kNumSpecials] = -1e30;
    a.data[kNumSpecials + 1] = 3.99;  // just below the saturation point: the polynomial
    for (const char *mode : {"strict", "fast"}) {
        INFO(std::string(mode));
        const std::string text =
            std::string("graph k mode=") + mode + " {\n %a = input : f32[M, N]\n %y = gelu(%a)\n output %y\n}";
        const dsl::Graph g = dsl::simplify_text(text, "<test>").graph;
        const auto [got, want] = run_both(g, {{"a", a}}, {{"M", 1}, {"N", kNumSpecials + 3}});
        const SpecialCompare c = compare_special(got, want);
        INFO(c.first_bad);
        CHECK(c.max_rel < 1e-4);
        CHECK(c.nans > 0);
    }
}
TEST_CASE("special values: the NaN-propagating max stays a vector integer max, with no library call") {
    // max/min/relu/reduce_max/softmax_max run on order keys (IeeeMath.cpp): the loops hold
    // vector int32 max/min (vpmaxsd on x86), and a reduction's vector partial results (rfactor
    // in cpu_rows) still apply, since Halide sees an integer max.
    const char *bodies[] = {"%y = relu(%a)", "%y = max(%a, %a * 2)", "%y = min(%a, 1)", "%y = reduce_max(%a, axes=[1])",
                            "%y = softmax(%a, axis=1)"};
    for (const char *body : bodies) {
        INFO(std::string(body));
        const std::string stmt =
            lowered_stmt(std::string("graph v {\n %a = input : f32[M, N]\n ") + body + "\n output %y\n}", {});
        CHECK(std::regex_search(stmt, std::regex(R"((max|min)\([^\n]*int32x(4|8|16)\))")));
        CHECK(std::regex_search(stmt, std::regex(R"(fmax|fmin|max_f32|min_f32|is_nan_f32)")) == false);
        if (std::string(body).find("reduce") != std::string::npos || std::string(body).find("softmax") != std::string::npos)
            CHECK(std::regex_search(stmt, std::regex(R"(_intm(\$\d+)?\[ramp\()")));  // rfactor'd vector partial maxima
    }
}

TEST_CASE("special values: the interpreter follows the documented rules") {
    // docs/TSL.md "Special values", checked against values written out here, so the compiled
    // path is compared with the documented semantics and not only with the interpreter.
    auto run = [](const std::string &body, const std::vector<double> &a, const std::vector<double> &b) {
        const std::string text = "graph t {\n %a = input : f32[N]\n %b = input : f32[N]\n %y = " + body + "\n output %y\n}";
        const dsl::Graph g = dsl::parse(text);
        dsl::Tensor ta = dsl::Tensor::filled(dsl::DType::F32, {(int64_t)a.size()}, 0), tb = ta;
        ta.data = a;
        tb.data = b;
        return dsl::interpret(g, {{"a", ta}, {"b", tb}}).outputs[0].data;
    };
    auto same = [](double got, double want) {
        return std::isnan(want) ? std::isnan(got) : got == want && std::signbit(got) == std::signbit(want);
    };
    const std::vector<double> a{NAN, 1, NAN, -0.0, 0.0, -0.0, INFINITY, -INFINITY, 2};
    const std::vector<double> b{1, NAN, NAN, 0.0, -0.0, -0.0, NAN, -1, 3};
    const std::vector<double> max_ab{NAN, NAN, NAN, 0.0, 0.0, -0.0, NAN, -1, 3};
    const std::vector<double> min_ab{NAN, NAN, NAN, -0.0, -0.0, -0.0, NAN, -INFINITY, 2};
    const std::vector<double> relu_a{NAN, 1, NAN, 0.0, 0.0, 0.0, INFINITY, 0.0, 2};
    const auto mx = run("max(%a, %b)", a, b), mn = run("min(%a, %b)", a, b), r = run("relu(%a)", a, b);
    for (size_t i = 0; i < a.size(); i++) {
        CAPTURE(i);
        CHECK(same(mx[i], max_ab[i]));
        CHECK(same(mn[i], min_ab[i]));
        CHECK(same(r[i], relu_a[i]));
    }
    // Rows: reduce_max is NaN if the row has a NaN, -inf for a row of -inf; softmax is NaN
    // throughout a row whose maximum is NaN or +-inf, and exactly 0 at a -inf among finite values.
    auto rows = [](const std::string &body, const std::vector<double> &x) {
        const std::string text = "graph t {\n %x = input : f32[1, N]\n %y = " + body + "\n output %y\n}";
        dsl::Tensor t = dsl::Tensor::filled(dsl::DType::F32, {1, (int64_t)x.size()}, 0);
        t.data = x;
        return dsl::interpret(dsl::parse(text), {{"x", t}}).outputs[0].data;
    };
    CHECK(std::isnan(rows("reduce_max(%x, axes=[1])", {1, NAN, 3})[0]));
    CHECK(rows("reduce_max(%x, axes=[1])", {-INFINITY, -INFINITY})[0] == -INFINITY);
    CHECK(!std::signbit(rows("reduce_max(%x, axes=[1])", {-0.0, 0.0, -0.0})[0]));
    for (const auto &x : std::vector<std::vector<double>>{{1, NAN, 3}, {1, INFINITY, 3}, {-INFINITY, -INFINITY}})
        for (double v : rows("softmax(%x, axis=1)", x)) CHECK(std::isnan(v));
    const auto s = rows("softmax(%x, axis=1)", {0, -INFINITY, 0});
    CHECK(s[0] == 0.5);
    CHECK(s[1] == 0.0);
}

TEST_CASE("special values: CUDA row reductions on order keys assemble, with integer max in the PTX" *
          doctest::skip(find_ptxas().empty())) {
    // cuda_rows keeps each row's maximum and its per-thread partials in shared memory; on order
    // keys they are int32 and the merge is max.s32. Checked without a device (ptxas only).
    for (const char *body :
         {"%y = softmax(%a, axis=1)", "%y = reduce_max(%a, axes=[1], keepdims=true) + %a", "%y = relu(max(%a, %a * 2))"}) {
        INFO(std::string(body));
        const dsl::Graph g =
            dsl::simplify_text(std::string("graph c {\n %a = input : f32[M, N]\n ") + body + "\n output %y\n}", "<test>").graph;
        CompiledGraph program(g, whole_graph_group(g), parse_target("host-cuda"), {}, KernelBackend::AheadOfTime);
        const CompiledKernel &k = *program.groups()[0].kernel;
        CHECK(k.ptx(k.variants().size() - 1).find("max.s32") != std::string::npos);
        const PtxScheduleReport r = k.ptx_report("sm_90");
        INFO(r.to_string());
        CHECK(r.within_limits());
    }
}

TEST_CASE("the PTX check assembles for the target's CUDA capability, not a fixed architecture" *
          doctest::skip(find_ptxas().empty())) {
    const dsl::Graph g = dsl::simplify_text("graph c {\n %a = input : f32[M, N]\n %y = relu(%a)\n output %y\n}", "<test>").graph;
    for (const auto &[target, arch] : {std::pair<const char *, const char *>{"host-cuda", "sm_86"},
                                       {"x86-64-linux-avx2-fma-cuda-cuda_capability_80", "sm_80"}}) {
        INFO(target);
        CompiledGraph program(g, whole_graph_group(g), parse_target(target), {}, KernelBackend::AheadOfTime);
        const CompiledKernel &k = *program.groups()[0].kernel;
        const PtxScheduleReport r = k.ptx_report();
        INFO(r.to_string());
        CHECK(r.arch == arch);
        CHECK(r.within_limits(k.ptx_limits()));
    }
}
