// concat-sibling-matmuls (dsl/passes/SiblingMatmulConcat.h): Q/K/V-style projections become one
// matmul over a concatenated weight, text in and text out; activations as right operands and late
// weights are left alone; results are bit for bit the interpreter's.
#include <doctest/doctest.h>

#include "../TestUtil.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/passes/SiblingMatmulConcat.h"

using namespace tessel::dsl;
using namespace tessel::dsl::test;

namespace {
const char *kQkv = R"(graph qkv {
  %h = input : f32[T, 8]
  %wq = weight : f32[8, 6]
  %wk = weight : f32[8, 2]
  %wv = weight : f32[8, 2]
  %q = matmul(%h, %wq) : f32[T, 6]
  %k = matmul(%h, %wk) : f32[T, 2]
  %v = matmul(%h, %wv) : f32[T, 2]
  output %q, %k, %v
}
)";
}  // namespace

TEST_CASE("concat-sibling-matmuls: projections of different widths read h once") {
    const RewriteLog log = expect_rewrite(concat_sibling_matmuls, kQkv, R"(graph qkv {
  %h = input : f32[T, 8]
  %wq = weight : f32[8, 6]
  %wk = weight : f32[8, 2]
  %wv = weight : f32[8, 2]
  %7 = concat(%wq, %wk, axis=1) : f32[8, 8]
  %8 = concat(%7, %wv, axis=1) : f32[8, 10]
  %9 = matmul(%h, %8) : f32[T, 10]
  %q = slice(%9, axis=1, start=0) : f32[T, 6]
  %k = slice(%9, axis=1, start=6) : f32[T, 2]
  %v = slice(%9, axis=1, start=8) : f32[T, 2]
  output %q, %k, %v
})");
    REQUIRE(log.size() == 1);
    CHECK(log.records()[0].why.find("3 matmuls read %h with weights (widths 6 + 2 + 2)") != std::string::npos);
}

TEST_CASE("concat-sibling-matmuls: results are the interpreter's, bit for bit") {
    Graph before = parse(kQkv), after = parse(kQkv);
    REQUIRE(concat_sibling_matmuls(after));
    RunOptions ro;
    ro.random_missing_inputs = true;
    ro.symbol_sizes = {{"T", 5}};
    const RunResult a = interpret(before, {}, ro), b = interpret(after, {}, ro);
    REQUIRE(a.outputs.size() == b.outputs.size());
    for (size_t i = 0; i < a.outputs.size(); i++) CHECK(a.outputs[i].data == b.outputs[i].data);
}

TEST_CASE("concat-sibling-matmuls: gate and up projections of one width are concatenated too") {
    expect_rewrite(concat_sibling_matmuls, R"(graph g {
  %h = input : f32[T, 8]
  %wg = weight : f32[8, 4]
  %wu = weight : f32[8, 4]
  %y = mul(silu(matmul(%h, %wg)), matmul(%h, %wu)) : f32[T, 4]
  output %y
})",
                   R"(graph g {
  %h = input : f32[T, 8]
  %wg = weight : f32[8, 4]
  %wu = weight : f32[8, 4]
  %7 = concat(%wg, %wu, axis=1) : f32[8, 8]
  %8 = matmul(%h, %7) : f32[T, 8]
  %9 = slice(%8, axis=1, start=0) : f32[T, 4]
  %10 = slice(%8, axis=1, start=4) : f32[T, 4]
  %4 = silu(%9) : f32[T, 4]
  %y = mul(%4, %10) : f32[T, 4]
  output %y
})");
}

TEST_CASE("concat-sibling-matmuls: activations and late weights are left alone") {
    // Activations as right operands: a concat would copy them on every call.
    expect_no_change(concat_sibling_matmuls, R"(graph g {
  %h = input : f32[T, 8]
  %a = input : f32[8, 6]
  %b = input : f32[8, 2]
  %x = matmul(%h, %a) : f32[T, 6]
  %y = matmul(%h, %b) : f32[T, 2]
  output %x, %y
})");
    // A right operand computed after the first sibling stays apart; one sibling is left.
    expect_no_change(concat_sibling_matmuls, R"(graph g {
  %h = input : f32[T, 8]
  %a = weight : f32[8, 6]
  %b = weight : f32[2, 8]
  %x = matmul(%h, %a) : f32[T, 6]
  %y = matmul(%h, transpose(%b)) : f32[T, 2]
  output %x, %y
})");
}
