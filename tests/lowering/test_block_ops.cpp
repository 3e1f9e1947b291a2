// The ops a transformer block is written with (docs/TSL.md): comparisons and where, log,
// sigmoid, silu, sin, cos, slice and concat. Their text form round-trips, bad operands are
// refused with both shapes, and compiled kernels (strict and fast mode) agree with the reference
// interpreter at awkward shapes and on NaN, +-inf and -0, including a rotary embedding built
// from slices and a concat.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "dsl/Pipeline.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Builder.h"
#include "dsl/ir/Diagnostics.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "tests/TensorCompare.h"

using namespace tessel;

namespace {

/** Every new op once: masks, where, the transcendental ops, and a rotate-half. */
std::string ops_text(const std::string &mode) {
    return "graph block_ops mode=" + mode + R"( {
  %x = input : f32[M, 8]
  %y = input : f32[M, 8]
  %m = lt(%x, %y) + le(%x, 0.5) * 2 + gt(%x, %y) * 4 + ge(%y, -0.25) * 8 + eq(%x, %y) * 16 + ne(%x, %x) * 32
  %w = where(gt(%x, 0), %x, %y * 0.5)
  %s = sigmoid(%x) + silu(%y) + log(%x) + sin(%y) * cos(%x)
  %hi = slice(%x, axis=1, start=4) : f32[M, 4]
  %lo = slice(%x, axis=1, start=0) : f32[M, 4]
  %r = concat(%hi, neg(%lo), axis=1)
  output %m, %w, %s, %r
})";
}

double compiled_error(dsl::Graph g, const std::map<std::string, int64_t> &symbols,
                      const std::map<std::string, dsl::Tensor> &inputs = {}) {
    dsl::default_pipeline().run(g);
    const dsl::FusionPlan plan = dsl::plan_fusion(g, lower::fusion_options(parse_target("host"), symbols));
    dsl::RunOptions ro;
    ro.random_missing_inputs = true;
    ro.symbol_sizes = symbols;
    const dsl::RunResult ref = dsl::interpret(g, inputs, ro);
    CompiledGraph program(g, plan, parse_target("host"));
    return testing::max_relative_difference(program.run(ref.inputs, ref.symbols), ref.outputs);
}

/** x and y of shape [rows, 8] cycling through the special values and a few ordinary ones. */
std::map<std::string, dsl::Tensor> special_inputs(int64_t rows) {
    static const double kValues[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1.0, -1.0, 0.5, 1e-40, -3.0, 88.0, -104.5};
    const int n = (int)std::size(kValues);
    dsl::Tensor x = dsl::Tensor::filled(dsl::DType::F32, {rows, 8}, 0), y = x;
    for (int64_t i = 0; i < x.numel(); i++) {
        x.data[(size_t)i] = kValues[i % n];
        y.data[(size_t)i] = kValues[(i / n + 3 * i) % n];
    }
    return {{"x", x}, {"y", y}};
}

}  // namespace

TEST_CASE("block ops: the text form round-trips") {
    const dsl::Graph g = dsl::parse(ops_text("strict"));
    const std::string printed = dsl::print(g);
    CHECK(printed.find("slice(%x, axis=1, start=4) : f32[M, 4]") != std::string::npos);
    CHECK(printed.find("concat(") != std::string::npos);
    CHECK(dsl::print(dsl::parse(printed)) == printed);
}

TEST_CASE("block ops: the C++ builder writes the same graph as the text") {
    dsl::GraphBuilder b("rot");
    auto x = b.input("x", dsl::DType::F32, {"T", 8});
    auto c = b.input("c", dsl::DType::F32, {"T", 8});
    auto s = b.input("s", dsl::DType::F32, {"T", 8});
    auto half = concat(-slice(x, 1, 4, 4), slice(x, 1, 0, 4), 1);
    b.output("y", where(ge(x, 0.0), x * c + half * s, silu(x)));
    const dsl::Graph g = std::move(b).build();
    const std::string text = dsl::print(g);
    CHECK(text.find("slice(%x, axis=1, start=4) : f32[T, 4]") != std::string::npos);
    CHECK(dsl::print(dsl::parse(text)) == text);
    CHECK(compiled_error(dsl::parse(text), {{"T", 7}}) < 1e-5);
}

TEST_CASE("block ops: bad operands are refused with the op and both shapes") {
    auto refusal = [](const std::string &body) {
        try {
            dsl::parse("graph bad {\n  %x = input : f32[4, 8]\n  %d = input : f32[4, D]\n" + body + "\n}");
        } catch (const dsl::UserError &e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    CHECK(refusal("  %y = slice(%x, axis=1, start=6) : f32[4, 4]\n  output %y").find("runs past the operand's extent 8") !=
          std::string::npos);
    CHECK(refusal("  %y = slice(%x, axis=1, start=-1) : f32[4, 4]\n  output %y").find("negative") != std::string::npos);
    CHECK(refusal("  %y = slice(%x, axis=1, start=0) : f32[3, 4]\n  output %y").find("keeps dim 0") != std::string::npos);
    CHECK(refusal("  %y = concat(%x, %d, axis=1)\n  output %y").find("needs static extents there: f32[4, 8] and f32[4, D]") !=
          std::string::npos);
    CHECK(refusal("  %y = concat(%x, %d, axis=0)\n  output %y").find("needs dim 1 equal") != std::string::npos);
    CHECK(refusal("  %c = input : f32[4, 8]\n  %i = cast(%c) : bf16[4, 8]\n  %y = where(%i, %x, %x)\n  output %y")
              .find("dtype mismatch") != std::string::npos);
}

TEST_CASE("block ops: compiled kernels match the interpreter at awkward shapes, strict and fast") {
    for (const char *mode : {"strict", "fast"})
        for (int64_t m : {1, 7, 37}) {
            CAPTURE(mode);
            CAPTURE(m);
            CHECK(compiled_error(dsl::parse(ops_text(mode)), {{"M", m}}) < 1e-5);
        }
}

TEST_CASE("block ops: NaN, +-inf, -0 and subnormals give the interpreter's values") {
    for (const char *mode : {"strict", "fast"}) {
        CAPTURE(mode);
        CHECK(compiled_error(dsl::parse(ops_text(mode)), {{"M", 6}}, special_inputs(6)) < 1e-5);
    }
}

TEST_CASE("block ops: a slice whose extent is shape code checks its bounds at run time") {
    const dsl::Graph g = dsl::parse(R"(graph tail {
  %x = input : f32[N, 4]
  %n = shape_of(%x)[1]
  %y = slice(%x, axis=0, start=3) : f32[%n, 4]
  output %y
})");
    dsl::RunOptions ro;
    ro.random_missing_inputs = true;
    ro.symbol_sizes = {{"N", 6}};
    CHECK_THROWS_WITH_AS(dsl::interpret(g, {}, ro), doctest::Contains("runs past [6, 4] along axis 0"), dsl::RuntimeError);
    ro.symbol_sizes = {{"N", 7}};
    CHECK(dsl::interpret(g, {}, ro).outputs[0].shape == std::vector<int64_t>{4, 4});
}
