#include <doctest/doctest.h>

#include "../TestUtil.h"
#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
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
    })",
                              R"(graph g {
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
      output %x
    })");
}

TEST_CASE("dce removes a state read nobody uses (reading does not change state)") {
    expect_rewrite(eliminate_dead_code, R"(graph g {
      %x = input : f32[4]
      %s = state_read(var="v") : f32[4]
      output %x
    })",
                   R"(graph g {
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

// An op that can raise at run time is not dead: deleting it would remove an error the program
// raises. DCE keeps it (and what it reads) unless it provably cannot fail.
namespace {
/** The message of the exception `f` throws, or "" when it throws nothing. */
template <typename F>
std::string error_of(F f) {
    try {
        f();
    } catch (const std::exception &e) {
        return e.what();
    }
    return "";
}
}  // namespace

TEST_CASE("dce keeps an unread op that may fail at run time") {
    SUBCASE("a reshape whose element counts may differ") {
        expect_no_change(eliminate_dead_code, R"(graph g {
          %x = input : f32[M]
          %r = reshape(%x) : f32[N]
          output %x
        })");
    }
    SUBCASE("shape code whose divisor may be zero") {
        expect_no_change(eliminate_dead_code, R"(graph g {
          %x = input : f32[M]
          %m = shape_of(%x, axis=0) : i64[]
          %four = 4 : i64[]
          %d = shape.sub(%m, %four) : i64[]
          %one = 1 : i64[]
          %q = shape.floordiv(%one, %d) : i64[]
          %r = shape.mod(%one, %d) : i64[]
          output %x
        })");
    }
    SUBCASE("a state read of a variable the graph also writes with another type") {
        // The next run's read returns the f32[M] that this run writes: check_shape fails then.
        expect_no_change(eliminate_dead_code, R"(graph g {
          %x = input : f32[M]
          %s = state_read(var="v") : f32[4]
          state_write(%x, var="v")
          output %x
        })");
    }
    SUBCASE("an extent computed by shape code that may not be positive") {
        expect_no_change(eliminate_dead_code, R"(graph g {
          %x = input : f32[M]
          %m = shape_of(%x, axis=0) : i64[]
          %five = 5 : i64[]
          %h = shape.sub(%m, %five) : i64[]
          %z = 0 : f32[%h]
          output %x
        })");
    }
}

TEST_CASE("dce removes unread ops that provably cannot fail") {
    expect_rewrite(eliminate_dead_code, R"(graph g {
      %x = input : f32[M, K]
      %m = shape_of(%x, axis=0) : i64[]
      %k = shape_of(%x, axis=1) : i64[]
      %two = 2 : i64[]
      %q = shape.floordiv(%m, %two) : i64[]
      %p = shape.mul(%m, %k) : i64[]
      %r = shape.mod(%p, %k) : i64[]
      %flat = reshape(%x) : f32[%p]
      %t = reshape(%x) : f32[K, M]
      %z = 0 : f32[%p]
      %s = state_read(var="v") : f32[M, K]
      state_write(%x, var="v")
      output %x
    })",
                   R"(graph g {
      %x = input : f32[M, K]
      state_write(%x, var="v")
      output %x
    })");
}

TEST_CASE("simplification keeps every run-time error of the original program") {
    // Each graph fails when run with M = 4 (N defaults to 4 too, so the reshape case uses M = 3).
    struct Case {
        const char *name, *text;
        int64_t m;
    };
    const Case cases[] = {
        {"reshape counts", "graph g {\n %x = input : f32[M]\n %r = reshape(%x) : f32[N]\n output %x\n}\n", 3},
        {"division by zero", "graph g {\n %x = input : f32[M]\n %d = shape_of(%x)[0] - 4\n %q = 1 / %d\n output %x\n}\n", 4},
        {"modulo by zero", "graph g {\n %x = input : f32[M]\n %d = shape_of(%x)[0] - 4\n %q = shape.mod(%d, %d)\n output %x\n}\n",
         4},
        {"extent not positive", "graph g {\n %x = input : f32[M]\n %h = shape_of(%x)[0] - 5\n %z = 0 : f32[%h]\n output %x\n}\n",
         4},
    };
    for (const Case &c : cases) {
        SUBCASE(c.name) {
            Graph g = parse(c.text, "fails.tsl");
            RunOptions o;
            o.random_missing_inputs = true;
            o.symbol_sizes["M"] = c.m;
            CHECK_THROWS_AS(interpret(g, {}, o), RuntimeError);
            SimplifyResult r = simplify_graph(g);
            INFO(r.graph_text << r.log_text);
            CHECK_THROWS_AS(interpret(r.graph, {}, o), RuntimeError);
            const std::string before = error_of([&] { interpret(g, {}, o); });
            CHECK(before == error_of([&] { interpret(r.graph, {}, o); }));
        }
    }
}
