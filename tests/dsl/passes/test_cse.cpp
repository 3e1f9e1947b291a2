#include <doctest/doctest.h>

#include "../TestUtil.h"
#include "dsl/passes/CSE.h"

using namespace tessel::dsl;
using namespace tessel::dsl::test;

TEST_CASE("cse: two shape_of(x)[1] become one") {
    auto log = expect_rewrite(eliminate_common_subexpressions, R"(graph g {
      %x = input : f32[M, K]
      %k1 = shape_of(%x, axis=1) : i64[]
      %k2 = shape_of(%x, axis=1) : i64[]
      %s = shape.add(%k1, %k2) : i64[]
      output %s
    })",
                              R"(graph g {
      %x = input : f32[M, K]
      %k1 = shape_of(%x, axis=1) : i64[]
      %s = shape.add(%k1, %k1) : i64[]
      output %s
    })");
    REQUIRE(log.size() == 1);
    CHECK(log.records()[0].rule == "cse-pure");
    CHECK(log.records()[0].after == "%k1");
}

TEST_CASE("cse: chains merge transitively, including dims that referred to the duplicate") {
    expect_rewrite(eliminate_common_subexpressions, R"(graph g {
      %x = input : f32[4, 8]
      %a1 = transpose(%x, perm=[1, 0]) : f32[8, 4]
      %a2 = transpose(%x, perm=[1, 0]) : f32[8, 4]
      %b1 = exp(%a1) : f32[8, 4]
      %b2 = exp(%a2) : f32[8, 4]
      %c1 = 2 : i64[]
      %c2 = 2 : i64[]
      %r = reshape(%b2) : f32[%c2, 16]
      output %b1, %r, %c1
    })",
                   R"(graph g {
      %x = input : f32[4, 8]
      %a1 = transpose(%x, perm=[1, 0]) : f32[8, 4]
      %b1 = exp(%a1) : f32[8, 4]
      %c1 = 2 : i64[]
      %r = reshape(%b1) : f32[%c1, 16]
      output %b1, %r, %c1
    })");
}

TEST_CASE("cse refuses: two random draws never merge, even with the same seed") {
    expect_no_change(eliminate_common_subexpressions, R"(graph g {
      %r1 = random_uniform(seed=5) : f32[4]
      %r2 = random_uniform(seed=5) : f32[4]
      %y = add(%r1, %r2) : f32[4]
      output %y
    })");
}

TEST_CASE("cse refuses: state reads across a write to that variable") {
    expect_no_change(eliminate_common_subexpressions, R"(graph g {
      %x = input : f32[4]
      %s1 = state_read(var="v") : f32[4]
      state_write(%x, var="v")
      %s2 = state_read(var="v") : f32[4]
      %y = add(%s1, %s2) : f32[4]
      output %y
    })");
}

TEST_CASE("cse: state reads with no write between them merge; a write to another variable does not block") {
    auto log = expect_rewrite(eliminate_common_subexpressions, R"(graph g {
      %x = input : f32[4]
      %s1 = state_read(var="v") : f32[4]
      state_write(%x, var="other")
      %s2 = state_read(var="v") : f32[4]
      %y = add(%s1, %s2) : f32[4]
      output %y
    })",
                              R"(graph g {
      %x = input : f32[4]
      %s1 = state_read(var="v") : f32[4]
      state_write(%x, var="other")
      %y = add(%s1, %s1) : f32[4]
      output %y
    })");
    CHECK(log.records()[0].rule == "cse-state-read");
}

TEST_CASE("cse refuses: observable ops, state writes and inputs never merge") {
    expect_no_change(eliminate_common_subexpressions, R"(graph g {
      %x = input : f32[4]
      %x2 = input : f32[4]
      print(%x, label="x")
      print(%x, label="x")
      assert(%x, msg="m")
      assert(%x, msg="m")
      state_write(%x, var="v")
      state_write(%x, var="v")
      output %x, %x2
    })");
}

TEST_CASE("cse refuses: same op on different attributes or types") {
    expect_no_change(eliminate_common_subexpressions, R"(graph g {
      %x = input : f32[4, 4]
      %a = reduce_sum(%x, axes=[0]) : f32[4]
      %b = reduce_sum(%x, axes=[1]) : f32[4]
      %c = cast(%x) : f16[4, 4]
      %d = cast(%x) : bf16[4, 4]
      %z = 0 : f32[]
      %nz = -0 : f32[]
      output %a, %b, %c, %d, %z, %nz
    })");
}
