#include <doctest/doctest.h>

#include "../TestUtil.h"
#include "dsl/passes/DCE.h"

using namespace tessel::dsl;
using namespace tessel::dsl::test;

TEST_CASE("dce removes a diagnostic branch no output reads, including shape code it used") {
    auto log = expect_rewrite(eliminate_dead_code, R"(graph g {
      %x = input : f32[M, K]
      %y = relu(%x) : f32[M, K]
      %k = shape_of(%x, axis=1) : i64[]
      %kf = cast(%k) : f32[]
      %s = reduce_sum(%x, axes=[1]) : f32[M]
      %mean = div(%s, %kf) : f32[M]
      output %y
    })", R"(graph g {
      %x = input : f32[M, K]
      %y = relu(%x) : f32[M, K]
      output %y
    })");
    CHECK(log.size() == 4);
    CHECK(log.records()[0].before == "%k = shape_of(%x, axis=1) : i64[]");
}

TEST_CASE("dce keeps every effect and what it depends on") {
    expect_no_change(eliminate_dead_code, R"(graph g {
      %x = input : f32[4]
      %unused_input = input : f32[4]
      %r = random_normal(seed=1) : f32[4]
      %e = exp(%x) : f32[4]
      state_write(%e, var="v")
      %n = neg(%x) : f32[4]
      print(%n, label="n")
      %a = abs(%x) : f32[4]
      assert(%a, msg="x != 0")
      %d = 8 : i64[]
      %rr = random_uniform(seed=2) : f32[%d]
    })");
}

TEST_CASE("dce removes a state read nobody uses (reading does not change state)") {
    expect_rewrite(eliminate_dead_code, R"(graph g {
      %x = input : f32[4]
      %s = state_read(var="v") : f32[4]
      output %x
    })", R"(graph g {
      %x = input : f32[4]
      output %x
    })");
}

TEST_CASE("dce keeps values used only as a dimension") {
    expect_no_change(eliminate_dead_code, R"(graph g {
      %x = input : f32[M, K]
      %k = shape_of(%x, axis=1) : i64[]
      %y = reshape(%x) : f32[M, %k]
      output %y
    })");
}
