#include <doctest/doctest.h>

#include "../TestUtil.h"
#include "dsl/passes/ConstantFolding.h"

using namespace tessel::dsl;
using namespace tessel::dsl::test;

TEST_CASE("fold-constants: shape code becomes a constant and the dimension becomes static") {
    auto log = expect_rewrite(fold_constants, R"(graph g {
      %a = 2048 : i64[]
      %b = 2 : i64[]
      %hidden = shape.mul(%a, %b) : i64[]
      %x = input : f32[M, %hidden]
      %y = relu(%x) : f32[M, %hidden]
      output %y
    })", R"(graph g {
      %a = 2048 : i64[]
      %b = 2 : i64[]
      %hidden = 4096 : i64[]
      %x = input : f32[M, 4096]
      %y = relu(%x) : f32[M, 4096]
      output %y
    })");
    REQUIRE(log.with_rule("fold-constant").size() == 1);
    CHECK(log.with_rule("fold-dim").size() == 2);
    CHECK(log.records()[1].why == "%hidden evaluates to the constant 4096");
}

TEST_CASE("fold-constants: float arithmetic folds with the interpreter's rounding") {
    expect_rewrite(fold_constants, R"(graph g {
      %a = 0.5 : f32[]
      %b = 0.25 : f32[]
      %c = add(%a, %b) : f32[]
      %d = constant(value=[1, 2, 3, 4]) : f32[2, 2]
      %t = transpose(%d, perm=[1, 0]) : f32[2, 2]
      %e = mul(%t, %c) : f32[2, 2]
      output %e
    })", R"(graph g {
      %a = 0.5 : f32[]
      %b = 0.25 : f32[]
      %c = 0.75 : f32[]
      %d = constant(value=[1, 2, 3, 4]) : f32[2, 2]
      %t = constant(value=[1, 3, 2, 4]) : f32[2, 2]
      %e = constant(value=[0.75, 2.25, 1.5, 3]) : f32[2, 2]
      output %e
    })");
    // Inexact sums fold to the f32-rounded result, exactly as the interpreter computes them.
    Graph g = parse("graph g {\n %a = 0.1 : f32[]\n %b = 0.2 : f32[]\n %c = add(%a, %b) : f32[]\n output %c\n}\n");
    CHECK(fold_constants(g));
    CHECK(g.node(g.outputs[0]).attrs.value == std::vector<double>{(double)(0.1f + 0.2f)});
}

TEST_CASE("fold-constants: shape_of of a static dim folds, of a symbolic dim resolves to the symbol") {
    expect_rewrite(fold_constants, R"(graph g {
      %x = input : f32[M, 8]
      %k = shape_of(%x, axis=1) : i64[]
      %m = shape_of(%x, axis=0) : i64[]
      %y = reshape(%x) : f32[%m, %k]
      output %y
    })", R"(graph g {
      %x = input : f32[M, 8]
      %k = 8 : i64[]
      %m = shape_of(%x, axis=0) : i64[]
      %y = reshape(%x) : f32[M, 8]
      output %y
    })");
}

TEST_CASE("fold-constants refuses: random draws, state reads, inputs, division by zero") {
    expect_no_change(fold_constants, R"(graph g {
      %r = random_uniform(seed=1) : f32[4]
      %s = state_read(var="v") : f32[4]
      %x = input : f32[4]
      %z = 0 : i64[]
      %one = 1 : i64[]
      %bad = shape.floordiv(%one, %z) : i64[]
      %y = add(%r, %s) : f32[4]
      output %y, %x, %bad
    })");
}

TEST_CASE("fold-constants: no change on an already folded graph") {
    expect_no_change(fold_constants, R"(graph g {
      %x = input : f32[M, 4096]
      %y = gelu(%x) : f32[M, 4096]
      output %y
    })");
}
