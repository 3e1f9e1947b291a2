#include <doctest/doctest.h>

#include <cmath>

#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Numerics.h"
#include "dsl/ir/Parser.h"

using namespace tessel::dsl;

namespace {
Tensor tensor(std::vector<int64_t> shape, std::vector<double> data, DType dt = DType::F32) {
    Tensor t;
    t.dtype = dt;
    t.shape = std::move(shape);
    t.data = std::move(data);
    return t;
}
}  // namespace

TEST_CASE("matmul, broadcast add, relu on known values; symbols bound from inputs") {
    Graph g = parse(R"(graph g {
      %x = input : f32[M, 2]
      %w = input : f32[2, 3]
      %b = input : f32[3]
      %y = relu(matmul(%x, %w) + %b)
      output %y
    })");
    auto r = interpret(
        g, {{"x", tensor({2, 2}, {1, 2, 3, 4})}, {"w", tensor({2, 3}, {1, 0, -1, 0, 1, -1})}, {"b", tensor({3}, {0.5, -10, 0})}});
    REQUIRE(r.outputs.size() == 1);
    CHECK(r.outputs[0].shape == std::vector<int64_t>{2, 3});
    CHECK(r.outputs[0].data == std::vector<double>{1.5, 0, 0, 3.5, 0, 0});
    CHECK(r.symbols.at("M") == 2);
}

TEST_CASE("batched matmul broadcasts a 2-D right operand") {
    Graph g = parse(R"(graph g {
      %a = input : f32[2, 1, 2]
      %b = input : f32[2, 2]
      %c = matmul(%a, %b)
      output %c
    })");
    auto r = interpret(g, {{"a", tensor({2, 1, 2}, {1, 2, 3, 4})}, {"b", tensor({2, 2}, {1, 1, 0, 1})}});
    CHECK(r.outputs[0].shape == std::vector<int64_t>{2, 1, 2});
    CHECK(r.outputs[0].data == std::vector<double>{1, 3, 3, 7});
}

TEST_CASE("reductions, softmax, transpose and shape code") {
    Graph g = parse(R"(graph g {
      %x = input : f32[2, 3]
      %s = reduce_sum(%x, axes=[1])
      %m = reduce_max(%x, axes=[0], keepdims=true)
      %a = reduce_mean(%x, axes=[0, 1])
      %t = transpose(%x)
      %sm = softmax(%x, axis=1)
      %q = (0 - 7) / 2
      %md = shape.mod(0 - 7, 2)
      output %s, %m, %a, %t, %sm, %q, %md
    })");
    auto r = interpret(g, {{"x", tensor({2, 3}, {1, 2, 3, 4, 5, 6})}});
    CHECK(r.outputs[0].data == std::vector<double>{6, 15});
    CHECK(r.outputs[1].shape == std::vector<int64_t>{1, 3});
    CHECK(r.outputs[1].data == std::vector<double>{4, 5, 6});
    CHECK(r.outputs[2].data == std::vector<double>{3.5});
    CHECK(r.outputs[3].data == std::vector<double>{1, 4, 2, 5, 3, 6});
    double z = std::exp(-2.0) + std::exp(-1.0) + 1.0;
    CHECK(r.outputs[4].data[2] == (double)(float)(1.0 / z));
    CHECK(r.outputs[5].data == std::vector<double>{-4});  // floor division
    CHECK(r.outputs[6].data == std::vector<double>{1});   // floor modulo
}

TEST_CASE("f16 and bf16 are emulated by rounding to nearest even") {
    CHECK(round_to(DType::F16, 1.0 + std::ldexp(1.0, -11)) == 1.0);  // tie -> even
    CHECK(round_to(DType::F16, 1.0 + 3 * std::ldexp(1.0, -11)) == 1.0 + std::ldexp(1.0, -9));
    CHECK(round_to(DType::F16, 65520.0) == INFINITY);                           // overflow
    CHECK(round_to(DType::F16, std::ldexp(1.0, -24)) == std::ldexp(1.0, -24));  // subnormal
    CHECK(std::signbit(round_to(DType::F16, -1e-30)));                          // underflow keeps sign
    CHECK(round_to(DType::BF16, 1.0 + std::ldexp(1.0, -8)) == 1.0);             // tie -> even
    CHECK(round_to(DType::BF16, 1.0 + 3 * std::ldexp(1.0, -8)) == 1.0 + std::ldexp(1.0, -6));
    CHECK(std::isnan(round_to(DType::BF16, NAN)));
    CHECK(round_to(DType::I32, -2.7) == -2.0);
    Graph g = parse(R"(graph g {
      %x = input : f32[2]
      %h = cast(%x) : f16[2]
      %y = %h + %h
      output %y
    })");
    auto r = interpret(g, {{"x", tensor({2}, {0.1, 70000})}});
    CHECK(r.outputs[0].dtype == DType::F16);
    CHECK(r.outputs[0].data[0] == 0.199951171875);
    CHECK(r.outputs[0].data[1] == INFINITY);
}

TEST_CASE("random draws are deterministic from the seed") {
    Graph g = parse(R"(graph g {
      %a = random_uniform(seed=3) : f32[64]
      %b = random_uniform(seed=3) : f32[64]
      %c = random_uniform(seed=4) : f32[64]
      %n = random_normal(seed=3) : f32[4096]
      output %a, %b, %c, %n
    })");
    auto r1 = interpret(g), r2 = interpret(g);
    CHECK(bitwise_equal(r1.outputs[0], r2.outputs[0]));
    CHECK(bitwise_equal(r1.outputs[0], r1.outputs[1]));
    CHECK_FALSE(bitwise_equal(r1.outputs[0], r1.outputs[2]));
    for (double v : r1.outputs[0].data) CHECK((v >= 0 && v < 1));
    CHECK(r1.outputs[0].data[0] == random_element(Op::RandomUniform, 3, 0));
    double mean = 0, var = 0;
    for (double v : r1.outputs[3].data) mean += v;
    mean /= 4096;
    for (double v : r1.outputs[3].data) var += (v - mean) * (v - mean);
    var /= 4096;
    CHECK(std::fabs(mean) < 0.1);
    CHECK(std::fabs(var - 1) < 0.1);
}

TEST_CASE("state variables, print and assert") {
    Graph g = parse(R"(graph g {
      %x = input : f32[2]
      %old = state_read(var="acc") : f32[2]
      %new = %old + %x
      state_write(%new, var="acc")
      %seen = state_read(var="acc") : f32[2]
      print(%seen, label="acc")
      assert(%x, msg="x must be non-zero")
      output %old, %seen
    })");
    InterpreterState st;
    auto r1 = interpret(g, {{"x", tensor({2}, {1, 2})}}, st);
    CHECK(r1.outputs[0].data == std::vector<double>{0, 0});  // never written: zeros
    CHECK(r1.outputs[1].data == std::vector<double>{1, 2});
    CHECK(r1.printed == "acc: f32[2] [1, 2]\n");
    auto r2 = interpret(g, {{"x", tensor({2}, {1, 2})}}, st);
    CHECK(r2.outputs[1].data == std::vector<double>{2, 4});
    CHECK(st.vars.at("acc").data == std::vector<double>{2, 4});
    try {
        interpret(g, {{"x", tensor({2}, {1, 0})}});
        FAIL("assert should fail");
    } catch (const AssertionFailure &e) {
        CHECK(std::string(e.what()).find("x must be non-zero") != std::string::npos);
    }
}

TEST_CASE("run-time shape errors and missing inputs are reported") {
    Graph g = parse(R"(graph g {
      %x = input : f32[M, 4]
      %y = input : f32[M]
      %z = reduce_sum(%x, axes=[1]) + %y
      output %z
    })");
    CHECK_THROWS_AS(interpret(g, {{"x", tensor({2, 4}, std::vector<double>(8, 1))}}), RuntimeError);
    try {
        interpret(g, {{"x", tensor({2, 4}, std::vector<double>(8, 1))}, {"y", tensor({3}, {1, 2, 3})}});
        FAIL("expected a shape error");
    } catch (const RuntimeError &e) {
        CHECK(std::string(e.what()).find("%y (input)") != std::string::npos);
    }
    RunOptions o;
    o.random_missing_inputs = true;
    o.symbol_sizes["M"] = 5;
    auto r = interpret(g, {}, o);
    CHECK(r.inputs.at("x").shape == std::vector<int64_t>{5, 4});
    CHECK(r.outputs[0].shape == std::vector<int64_t>{5});
    auto r2 = interpret(g, {}, o);
    CHECK(bitwise_equal(r.outputs[0], r2.outputs[0]));
}

TEST_CASE("IEEE corner cases: max/min of signed zeros and NaN, relu") {
    Graph g = parse(R"(graph g {
      %a = constant(value=[-0.0, 0.0, nan, -1]) : f32[4]
      %b = constant(value=[0.0, -0.0, 1, -0.0]) : f32[4]
      %mx = max(%a, %b)
      %mn = min(%a, %b)
      %r = relu(%a)
      output %mx, %mn, %r
    })");
    auto r = interpret(g);
    CHECK_FALSE(std::signbit(r.outputs[0].data[0]));
    CHECK_FALSE(std::signbit(r.outputs[0].data[1]));
    CHECK(std::isnan(r.outputs[0].data[2]));
    CHECK(std::signbit(r.outputs[1].data[0]));
    CHECK(std::signbit(r.outputs[1].data[1]));
    CHECK(std::isnan(r.outputs[2].data[2]));
    CHECK_FALSE(std::signbit(r.outputs[2].data[0]));
}

TEST_CASE("run-time extents must be positive: shape code, inputs and symbol sizes of 0") {
    // Used to crash with "cannot create std::vector larger than max_size()".
    Graph g = parse(R"(graph g {
      %x = input : f32[M]
      %h = shape_of(%x)[0] - 5
      %r = random_uniform(seed=1) : f32[%h]
      output %r
    })");
    RunOptions o;
    o.random_missing_inputs = true;
    o.symbol_sizes["M"] = 4;
    try {
        interpret(g, {}, o);
        FAIL("expected a RuntimeError");
    } catch (const RuntimeError &e) {
        CHECK(
            std::string(e.what()) ==
            "%r (random_uniform): dimension %h is -1 at run time; extents must be positive (zero-size tensors are not supported)");
    }
    o.symbol_sizes["M"] = 6;
    CHECK(interpret(g, {}, o).outputs[0].shape == std::vector<int64_t>{1});
    o.symbol_sizes["M"] = 0;
    CHECK_THROWS_WITH_AS(interpret(g, {}, o), doctest::Contains("symbol M = 0; extents must be positive"), RuntimeError);
    CHECK_THROWS_WITH_AS(interpret(g, {{"x", tensor({0}, {})}}), doctest::Contains("input 'x' is f32[0]"), RuntimeError);
}

TEST_CASE("division by zero in shape code names both values") {
    Graph g = parse("graph g {\n %x = input : f32[M]\n %d = shape_of(%x)[0] - 2\n %q = 7 / %d\n output %x\n}\n");
    CHECK_THROWS_WITH_AS(interpret(g, {{"x", tensor({2}, {1, 2})}}),
                         "shape.floordiv: division by zero in shape code (7 floordiv 0)", RuntimeError);
}
