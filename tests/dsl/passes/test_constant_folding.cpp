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
    })",
                              R"(graph g {
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
    })",
                   R"(graph g {
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
    })",
                   R"(graph g {
      %x = input : f32[M, 8]
      %k = 8 : i64[]
      %m = shape_of(%x, axis=0) : i64[]
      %y = reshape(%x) : f32[M, 8]
      output %y
    })");
}

TEST_CASE("fold-constants refuses: random draws, state reads, inputs") {
    expect_no_change(fold_constants, R"(graph g {
      %r = random_uniform(seed=1) : f32[4]
      %s = state_read(var="v") : f32[4]
      %x = input : f32[4]
      %y = add(%r, %s) : f32[4]
      output %y, %x
    })");
}

namespace {
/** The message of the error fold_constants raises on `text` (parsed as bad.tsl), or "". */
std::string fold_error(const std::string &text) {
    Graph g = parse(text, "bad.tsl");
    try {
        fold_constants(g);
    } catch (const std::exception &e) {
        return e.what();
    }
    return "";
}
}  // namespace

TEST_CASE("fold-constants reports an op that always fails at run time, at its source location") {
    SUBCASE("shape code dividing by a literal zero, even when nothing reads it") {
        std::string e = fold_error("graph g {\n  %x = input : f32[4]\n  %bad = 7 / 0\n  output %x\n}\n");
        CHECK_MESSAGE(e.rfind("bad.tsl:3:12: error: %bad = shape.floordiv(%1, %2) : i64[] always fails at run time: ", 0) == 0,
                      e);
        CHECK_MESSAGE(e.find("division by zero in shape code (7 floordiv 0)") != std::string::npos, e);
    }
    SUBCASE("mod by zero with a dividend only known at run time") {
        std::string e = fold_error(R"(graph g {
          %x = input : f32[M]
          %m = shape_of(%x, axis=0) : i64[]
          %z = 0 : i64[]
          %bad = shape.mod(%m, %z) : i64[]
          output %x
        })");
        CHECK_MESSAGE(e.find("bad.tsl:5:18: error: %bad = shape.mod(%m, %z) : i64[] always fails at run time") == 0, e);
        CHECK_MESSAGE(e.find("(%m mod 0)") != std::string::npos, e);
    }
    SUBCASE("a divisor that folds to zero") {
        std::string e = fold_error(R"(graph g {
          %x = input : f32[4]
          %d = shape_of(%x)[0] - 4
          %bad = shape.floordiv(%d, %d)
          output %x
        })");
        CHECK_MESSAGE(e.find("division by zero in shape code (0 floordiv 0)") != std::string::npos, e);
    }
    SUBCASE("an assert on a constant zero") {
        std::string e = fold_error(R"(graph g {
          %x = input : f32[4]
          %c = constant(value=[1, 0, 2, 3]) : f32[4]
          assert(%c, msg="c is non-zero")
          output %x
        })");
        CHECK_MESSAGE(e.find("bad.tsl:4:11: error: assert(%c, msg=\"c is non-zero\") always fails at run time") == 0, e);
        CHECK_MESSAGE(e.find("element 1 of its condition %c is 0") != std::string::npos, e);
    }
    SUBCASE("a state read after a write of another static type") {
        std::string e = fold_error(R"(graph g {
          %x = input : f32[4]
          state_write(%x, var="v")
          %s = state_read(var="v") : f32[8]
          output %x
        })");
        CHECK_MESSAGE(e.find("bad.tsl:4:16: error: %s = state_read(var=\"v\") : f32[8] always fails at run time: it "
                             "declares f32[8] but the last write before it, state_write(%x, var=\"v\"), stores f32[4]") == 0,
                      e);
    }
    SUBCASE("an assert on a condition that folds to -0") {
        std::string e = fold_error(R"(graph g {
          %a = -1 : f32[]
          %z = 0 : f32[]
          %c = mul(%a, %z) : f32[]
          assert(%c, msg="never")
          output %a
        })");
        CHECK_MESSAGE(e.find("always fails at run time") != std::string::npos, e);
    }
}

TEST_CASE("fold-constants removes an assert whose condition is a constant with no zero, and says why") {
    auto log = expect_rewrite(fold_constants, R"(graph g {
      %x = input : f32[4]
      %c = constant(value=[1, nan, -2, inf]) : f32[4]
      assert(%c, msg="c is non-zero")
      %one = 1 : f32[M]
      assert(%one, msg="splat")
      output %x
    })",
                              R"(graph g {
      %x = input : f32[4]
      %c = constant(value=[1, nan, -2, inf]) : f32[4]
      %one = 1 : f32[M]
      output %x
    })");
    auto r = log.with_rule("fold-assert");
    REQUIRE(r.size() == 2);
    CHECK(r[0].before == "assert(%c, msg=\"c is non-zero\")");
    CHECK(r[0].after == "(removed)");
    CHECK_MESSAGE(r[0].why.find("no element of its condition %c is 0, so it can never fail") != std::string::npos, r[0].why);
    // An assert on a value known only at run time is kept.
    expect_no_change(fold_constants, R"(graph g {
      %x = input : f32[4]
      assert(%x, msg="x is non-zero")
      output %x
    })");
}

TEST_CASE("fold-constants: no change on an already folded graph") {
    expect_no_change(fold_constants, R"(graph g {
      %x = input : f32[M, 4096]
      %y = gelu(%x) : f32[M, 4096]
      output %y
    })");
}
