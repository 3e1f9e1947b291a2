#include <doctest/doctest.h>

#include "../TestUtil.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/passes/AlgebraicSimplify.h"

using namespace tessel::dsl;
using namespace tessel::dsl::test;

namespace {
/** A one-input graph around `body` (which defines %y from %x); mode strict or fast. When %y
 * simplifies to another value, the output keeps its name: `output %y = %x`. */
std::string graph(const std::string &body, const char *mode = "strict") {
    return std::string("graph g mode=") + mode + " {\n  %x = input : f32[4, 3]\n" + body + "\n  output %y\n}\n";
}
}  // namespace

TEST_CASE("transpose(transpose(w)) -> w when the perms compose to the identity") {
    auto log = expect_rewrite(simplify_algebra, R"(graph g {
      %w = input : f32[4, 3]
      %t1 = transpose(%w, perm=[1, 0]) : f32[3, 4]
      %t2 = transpose(%t1, perm=[1, 0]) : f32[4, 3]
      %y = relu(%t2) : f32[4, 3]
      output %y
    })",
                              R"(graph g {
      %w = input : f32[4, 3]
      %t1 = transpose(%w, perm=[1, 0]) : f32[3, 4]
      %y = relu(%w) : f32[4, 3]
      output %y
    })");
    REQUIRE(log.size() == 1);
    CHECK(log.records()[0].rule == "transpose-pair-identity");
    CHECK(log.records()[0].after == "%w");
    CHECK(log.records()[0].why.find("compose to the identity") != std::string::npos);
}

TEST_CASE("3-D transpose pair composing to the identity folds; one that does not is kept") {
    expect_rewrite(simplify_algebra, R"(graph g {
      %w = input : f32[2, 3, 4]
      %t1 = transpose(%w, perm=[1, 2, 0]) : f32[3, 4, 2]
      %y = transpose(%t1, perm=[2, 0, 1]) : f32[2, 3, 4]
      output %y
    })",
                   R"(graph g {
      %w = input : f32[2, 3, 4]
      %t1 = transpose(%w, perm=[1, 2, 0]) : f32[3, 4, 2]
      output %y = %w
    })");
    // [1, 2, 0] twice is a rotation by two axes, not the identity: refused.
    expect_no_change(simplify_algebra, R"(graph g {
      %w = input : f32[2, 3, 4]
      %t1 = transpose(%w, perm=[1, 2, 0]) : f32[3, 4, 2]
      %y = transpose(%t1, perm=[1, 2, 0]) : f32[4, 2, 3]
      output %y
    })");
}

TEST_CASE("transpose pair over a state read with a write in between: the snapshot is reused") {
    const char *before = R"(graph g {
      %x = input : f32[2, 3]
      %s = state_read(var="v") : f32[2, 3]
      %t1 = transpose(%s, perm=[1, 0]) : f32[3, 2]
      state_write(%x, var="v")
      %t2 = transpose(%t1, perm=[1, 0]) : f32[2, 3]
      %again = state_read(var="v") : f32[2, 3]
      %y = add(%t2, %again) : f32[2, 3]
      output %y
    })";
    expect_rewrite(simplify_algebra, before, R"(graph g {
      %x = input : f32[2, 3]
      %s = state_read(var="v") : f32[2, 3]
      %t1 = transpose(%s, perm=[1, 0]) : f32[3, 2]
      state_write(%x, var="v")
      %again = state_read(var="v") : f32[2, 3]
      %y = add(%s, %again) : f32[2, 3]
      output %y
    })");
    // Same observable result: the value of %s is the one read before the write.
    Graph g0 = parse(before), g1 = parse(before);
    simplify_algebra(g1);
    InterpreterState s0, s1;
    Tensor init = Tensor::filled(DType::F32, {2, 3}, 5.0);
    s0.vars["v"] = init;
    s1.vars["v"] = init;
    RunOptions o;
    o.random_missing_inputs = true;
    auto r0 = interpret(g0, {}, s0, o), r1 = interpret(g1, {}, s1, o);
    CHECK(bitwise_equal(r0.outputs[0], r1.outputs[0]));
    CHECK(bitwise_equal(s0.vars.at("v"), s1.vars.at("v")));
}

namespace {
struct IdentityCase {
    const char *name;
    const char *body;      // defines %y from %x (f32[4, 3])
    const char *expected;  // body after the rewrite; nullptr: must be refused
};
}  // namespace

TEST_CASE("strict identities fire only where exact in IEEE arithmetic") {
    const IdentityCase cases[] = {
        {"x * 1", "  %one = 1 : f32[]\n  %y = mul(%x, %one) : f32[4, 3]", "  %one = 1 : f32[]\n  output %y = %x"},
        {"1 * x", "  %one = 1 : f32[3]\n  %y = mul(%one, %x) : f32[4, 3]", "  %one = 1 : f32[3]\n  output %y = %x"},
        {"x / 1", "  %one = 1 : f32[]\n  %y = div(%x, %one) : f32[4, 3]", "  %one = 1 : f32[]\n  output %y = %x"},
        {"x + (-0)", "  %z = -0 : f32[]\n  %y = add(%x, %z) : f32[4, 3]", "  %z = -0 : f32[]\n  output %y = %x"},
        {"(-0) + x", "  %z = -0 : f32[]\n  %y = add(%z, %x) : f32[4, 3]", "  %z = -0 : f32[]\n  output %y = %x"},
        {"x - (+0)", "  %z = 0 : f32[]\n  %y = sub(%x, %z) : f32[4, 3]", "  %z = 0 : f32[]\n  output %y = %x"},
        {"neg neg", "  %n = neg(%x) : f32[4, 3]\n  %y = neg(%n) : f32[4, 3]", "  %n = neg(%x) : f32[4, 3]\n  output %y = %x"},
        {"relu relu", "  %r = relu(%x) : f32[4, 3]\n  %y = relu(%r) : f32[4, 3]",
         "  %r = relu(%x) : f32[4, 3]\n  output %y = %r"},
        {"abs abs", "  %r = abs(%x) : f32[4, 3]\n  %y = abs(%r) : f32[4, 3]", "  %r = abs(%x) : f32[4, 3]\n  output %y = %r"},
        {"max(x, x)", "  %y = max(%x, %x) : f32[4, 3]", "  output %y = %x"},
        {"min(x, x)", "  %y = min(%x, %x) : f32[4, 3]", "  output %y = %x"},
        {"cast to own dtype", "  %y = cast(%x) : f32[4, 3]", "  output %y = %x"},
        {"reshape to own shape", "  %y = reshape(%x) : f32[4, 3]", "  output %y = %x"},
        {"identity transpose", "  %y = transpose(%x, perm=[0, 1]) : f32[4, 3]", "  output %y = %x"},
        // Refusals in strict mode:
        {"x + 0 (-0 + 0 = +0)", "  %z = 0 : f32[]\n  %y = add(%x, %z) : f32[4, 3]", nullptr},
        {"x - (-0) (-0 - -0 = +0)", "  %z = -0 : f32[]\n  %y = sub(%x, %z) : f32[4, 3]", nullptr},
        {"x - x (inf - inf = NaN)", "  %y = sub(%x, %x) : f32[4, 3]", nullptr},
        {"x * 0 (inf * 0 = NaN)", "  %z = 0 : f32[]\n  %y = mul(%x, %z) : f32[4, 3]", nullptr},
        {"1 / x", "  %one = 1 : f32[]\n  %y = div(%one, %x) : f32[4, 3]", nullptr},
        {"x * 1 that broadcasts x", "  %one = 1 : f32[2, 4, 3]\n  %y = mul(%x, %one) : f32[2, 4, 3]", nullptr},
        {"x * 1.5", "  %c = 1.5 : f32[]\n  %y = mul(%x, %c) : f32[4, 3]", nullptr},
        {"x * [1, 2, 1]", "  %c = constant(value=[1, 2, 1]) : f32[3]\n  %y = mul(%x, %c) : f32[4, 3]", nullptr},
    };
    for (const IdentityCase &c : cases) {
        SUBCASE(c.name) {
            std::string before = graph(c.body);
            if (c.expected)
                expect_rewrite(simplify_algebra, before,
                               std::string("graph g {\n  %x = input : f32[4, 3]\n") + c.expected + "\n}\n");
            else
                expect_no_change(simplify_algebra, before);
        }
    }
}

TEST_CASE("x * 1 -> x: exact text, and the result is the operand") {
    expect_rewrite(simplify_algebra, graph("  %one = 1 : f32[]\n  %y = mul(%x, %one) : f32[4, 3]"),
                   "graph g {\n  %x = input : f32[4, 3]\n  %one = 1 : f32[]\n  output %y = %x\n}\n");
}

TEST_CASE("fast mode enables the inexact identities") {
    expect_rewrite(simplify_algebra, graph("  %z = 0 : f32[]\n  %y = add(%x, %z) : f32[4, 3]", "fast"),
                   "graph g mode=fast {\n  %x = input : f32[4, 3]\n  %z = 0 : f32[]\n  output %y = %x\n}\n");
    expect_rewrite(simplify_algebra, graph("  %y = sub(%x, %x) : f32[4, 3]", "fast"),
                   "graph g mode=fast {\n  %x = input : f32[4, 3]\n  %y = 0 : f32[4, 3]\n  output %y\n}\n");
    expect_rewrite(simplify_algebra, graph("  %z = 0 : f32[]\n  %y = mul(%z, %x) : f32[4, 3]", "fast"),
                   "graph g mode=fast {\n  %x = input : f32[4, 3]\n  %z = 0 : f32[]\n  %y = 0 : f32[4, 3]\n  output %y\n}\n");
}

TEST_CASE("new nodes: abs(neg x) -> abs x, reshape(reshape x) -> reshape x") {
    expect_rewrite(
        simplify_algebra, graph("  %n = neg(%x) : f32[4, 3]\n  %y = abs(%n) : f32[4, 3]"),
        "graph g {\n  %x = input : f32[4, 3]\n  %n = neg(%x) : f32[4, 3]\n  %y = abs(%x) : f32[4, 3]\n  output %y\n}\n");
    expect_rewrite(
        simplify_algebra, graph("  %r = reshape(%x) : f32[12]\n  %y = reshape(%r) : f32[2, 6]"),
        "graph g {\n  %x = input : f32[4, 3]\n  %r = reshape(%x) : f32[12]\n  %y = reshape(%x) : f32[2, 6]\n  output %y\n}\n");
}

TEST_CASE("cast-pair: down then up is elided in fast mode only, never for a weight") {
    const char *body = "  %h = cast(%x) : bf16[4, 3]\n  %y = cast(%h) : f32[4, 3]";
    auto log = expect_rewrite(simplify_algebra, graph(body, "fast"), R"(graph g mode=fast {
  %x = input : f32[4, 3]
  %h = cast(%x) : bf16[4, 3]
  output %y = %x
})");
    CHECK(log.records()[0].rule == "cast-pair");
    CHECK(log.records()[0].why.find("only rounds") != std::string::npos);
    expect_no_change(simplify_algebra, graph(body, "strict"));
    // Narrowing a weight is its storage (the kernel reads bf16), kept in fast mode too.
    expect_no_change(simplify_algebra, R"(graph g mode=fast {
  %w = weight : f32[4, 3]
  %h = cast(%w) : bf16[4, 3]
  %y = cast(%h) : f32[4, 3]
  output %y
})");
    // Through i8 is quantizing, not rounding: kept in fast mode too.
    expect_no_change(simplify_algebra, graph("  %h = cast(%x) : i8[4, 3]\n  %y = cast(%h) : f32[4, 3]", "fast"));
    // Up then down is exact (f16 -> f32 -> f16 is the identity) but not this rule's: kept.
    expect_no_change(simplify_algebra, R"(graph g mode=fast {
  %x = input : f16[4, 3]
  %h = cast(%x) : f32[4, 3]
  %y = cast(%h) : f16[4, 3]
  output %y
})");
}
