// Weight-only int8 quantization (docs/TSL.md, "Quantized weights"): a weight stored as i8 with a
// scale per output column, prepared once, widened and scaled in registers by the matmul nests.
// The compiled path against the reference interpreter at awkward shapes (M = 1, 3, 17; K and N
// primes; N past a panel), on AVX-512 and AVX2, strict and fast mode; special values in the
// activations; all-zero and extreme columns of w.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>

#include "codegen/Compile.h"
#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "dsl/passes/FusionPolicy.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/Library.h"
#include "schedules/MatmulCpuSchedules.h"
#include "tests/TensorCompare.h"
#include "tests/lowering/BlockedProgram.h"

using namespace tessel;

namespace {

const char *const kAvx2 = "x86-64-linux-avx-avx2-f16c-fma-sse41";

/** gelu_tanh(x @ dequantized(w) + bias): w quantized to i8 per output column (axis 0 reduced). */
std::string quantized_graph(const std::string &mode) {
    return "graph q8 mode=" + mode + R"TSL( {
  %x = input : f32[M, K]
  %w = weight : f32[K, N]
  %bias = input : f32[N]
  %s = reduce_max(abs(%w), axes=[0], keepdims=true) / 127
  %q = cast(%w / %s) : i8[K, N]
  %wq = cast(%q) : f32[K, N]
  %y = gelu_tanh(matmul(%x, %wq * %s) + %bias)
  output %y
}
)TSL";
}

/** Compiled as the compiler compiles it: cpu_blocked fitted to the matmul group. */
std::unique_ptr<testing::BlockedProgram> compile(const std::string &text, const Halide::Target &target) {
    return testing::compile_blocked(dsl::parse(text, "q8.tsl"), target);
}

}  // namespace

TEST_CASE("a float converts to i8 by rounding to nearest even and saturating; NaN is 0") {
    const dsl::Graph g = dsl::parse(R"TSL(graph c {
  %x = input : f32[12]
  %q = cast(%x) : i8[12]
  %y = cast(%q) : f32[12]
  output %y
})TSL",
                                    "c.tsl");
    dsl::Tensor x = dsl::Tensor::filled(dsl::DType::F32, {12}, 0);
    x.data = {2.5, -2.5, 3.5, 0.49999997, -0.0, 127.4, 127.5, 300, -128.5, -1e30, NAN, INFINITY};
    const std::vector<double> want = {2, -2, 4, 0, 0, 127, 127, 127, -128, -128, 0, 127};
    const dsl::Tensor y = testing::interpreted(g, {{"x", x}}, {})[0];
    CHECK(y.data == want);
    CHECK(!std::signbit(y.data[4]));  // i8 has no -0
    // The kernel rounds the same way, on both targets.
    for (const char *t : {"host", kAvx2}) {
        INFO("target " << t);
        auto p = compile(
            "graph c mode=strict {\n  %x = input : f32[12]\n  %q = cast(%x) : i8[12]\n  %y = cast(%q) : f32[12]\n"
            "  output %y\n}\n",
            parse_target(t));
        const auto got = p->compiled->run({{"x", x}}, {});
        CHECK(got[0].data == want);
    }
}

TEST_CASE("i8 is a storage type: arithmetic on it is refused with the way to compute") {
    try {
        dsl::parse("graph e {\n  %x = input : i8[4]\n  %y = exp(%x)\n  output %y\n}\n", "e.tsl");
        FAIL("exp of an i8 tensor was accepted");
    } catch (const dsl::UserError &e) {
        const std::string what = e.what();
        CHECK(what.find("e.tsl:3:") != std::string::npos);
        CHECK(what.find("i8 is a storage type: cast it to f32 to compute") != std::string::npos);
    }
    // The type prints and reads back.
    const dsl::Graph g = dsl::parse("graph r {\n  %x = input : i8[4, K]\n  %y = cast(%x) : f32[4, K]\n  output %y\n}\n", "r.tsl");
    CHECK(dsl::print(g).find("i8[4, K]") != std::string::npos);
}

TEST_CASE("int8 weight-only decode and prefill match the interpreter at awkward shapes, AVX-512 and AVX2, strict and fast") {
    std::vector<std::string> targets{kAvx2};
    if (parse_target("host").has_feature(Halide::Target::AVX512)) targets.push_back("host");
    for (const std::string &t : targets)
        for (const std::string mode : {"strict", "fast"}) {
            const Halide::Target target = parse_target(t);
            const sched::CpuBlocking b = sched::CpuBlocking::for_target(target);
            INFO("target " << t << " mode " << mode);
            auto p = compile(quantized_graph(mode), target);
            testing::check_matmul_shapes(
                p->g,
                {{1, 37, 19},
                 {1, 1, 1},
                 {1, 256, b.nr + 1},
                 {3, 100, 53},
                 {4, 64, 2 * b.nr + 5},
                 {16, 33, 97},
                 {17, 19, 3 * b.nr}},
                [&](const auto &inputs, const auto &symbols) { return p->compiled->run(inputs, symbols); });
        }
}

TEST_CASE("an int8 weight stored [N, K] as PyTorch's Linear keeps it: transposed once when prepared, still i8") {
    // The scale per output channel is [N, 1], read transposed as [1, N]; the i8 transpose is a
    // prepared data movement, not arithmetic.
    const std::string text = R"TSL(graph q8_nk mode=MODE {
  %x = input : f32[M, K]
  %w = weight : f32[N, K]
  %s = reduce_max(abs(%w), axes=[1], keepdims=true) / 127
  %q = cast(%w / %s) : i8[N, K]
  %wq = cast(transpose(%q)) : f32[K, N]
  %y = matmul(%x, %wq * transpose(%s))
  output %y
}
)TSL";
    for (const std::string mode : {"strict", "fast"}) {
        INFO("mode " << mode);
        auto p = compile(std::string(text).replace(text.find("MODE"), 4, mode), parse_target("host"));
        testing::check_matmul_shapes(p->g, {{1, 37, 19}, {3, 100, 53}, {17, 64, 33}},
                                     [&](const auto &inputs, const auto &symbols) { return p->compiled->run(inputs, symbols); });
    }
}

TEST_CASE("int8 weights: special activations, all-zero and extreme columns") {
    const Halide::Target target = parse_target("host");
    auto p = compile(quantized_graph("strict"), target);
    for (int64_t m : {1, 5}) {
        const int64_t k = 9, n = 21;
        INFO("M=" << m);
        const std::map<std::string, int64_t> symbols{{"M", m}, {"K", k}, {"N", n}};
        std::map<std::string, dsl::Tensor> inputs = testing::random_reference(p->g, symbols, 7).inputs;
        dsl::Tensor &w = inputs.at("w"), &x = inputs.at("x");
        for (int64_t r = 0; r < k; r++) {
            w.data[r * n + 0] = 0.0;                         // column 0 all zero: scale 0, values 0
            w.data[r * n + 1] = r % 2 ? FLT_MAX : -FLT_MAX;  // column 1 at the float range's ends
            w.data[r * n + 2] = r == 4 ? -0.0 : 1e-30;       // column 2 tiny, with a -0
        }
        const double specials[] = {NAN, INFINITY, -INFINITY, -0.0};
        for (size_t i = 0; i < 4 && i < x.data.size(); i++) x.data[(i * 5 + 3) % x.data.size()] = specials[i];
        const auto want = testing::interpreted(p->g, inputs, symbols);
        const auto got = p->compiled->run(inputs, symbols);
        INFO(dsl::to_string(got[0]) << "\nwant " << dsl::to_string(want[0]));
        CHECK(testing::max_relative_difference(got, want) < 1e-4);
    }
}

TEST_CASE("the dequantized weight is the matmul's view w, so every CPU schedule stages and packs it") {
    const dsl::Graph g = dsl::simplify_graph(dsl::parse(quantized_graph("fast"), "q8.tsl")).graph;
    const auto groups = testing::lowered_matmul_groups(g, parse_target("host"));
    REQUIRE(groups.size() == 1);
    CHECK(groups[0].funcs.count("w") == 1);
    // The kernel reads the i8 values and the scales, not an f32 w.
    int narrow = 0;
    for (const auto &p : groups[0].inputs) narrow += p.type() == Halide::Int(8);
    CHECK(narrow == 1);
}
