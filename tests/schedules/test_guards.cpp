// Guard::holds and ScheduleSpec::pick_variant are the C runtime's evaluator
// (runtime/tessel_guard.c), the one a generated library dispatches with: every operator over a
// grid of values and extents (zero and negative divisors included) agrees, a missing extent
// never holds, and GuardOp's text form round-trips and refuses an operator the runtime lacks.
#include "schedules/Schedule.h"
#include "tessel_runtime.h"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

using namespace tessel::sched;

TEST_CASE("Guard::holds is the runtime's guard evaluator") {
    for (const char *op : {"==", "<=", ">=", "%"})
        for (long value : {-3L, -1L, 0L, 1L, 4L, 16L})
            for (long extent : {-8L, 0L, 1L, 3L, 4L, 16L, 48L}) {
                const Guard g{"M", parse_guard_op(op), value};
                INFO(g.to_string() << " at M = " << extent);
                CHECK(g.holds({{"M", extent}}) == (tessel_guard_holds(tessel_guard_op_from_text(op), value, extent) == 1));
            }
    CHECK_FALSE(Guard{"N", GuardOp::Divisible, 0}.holds({{"N", 0}}));
    CHECK(Guard{"N", GuardOp::Divisible, 16}.holds({{"N", 48}}));
    CHECK_FALSE(Guard{"N", GuardOp::Eq, 1}.holds({{"M", 1}}));  // N not among the extents
    CHECK(tessel_guard_holds(tessel_guard_op_from_text("<"), 4, 1) == -1);
}

TEST_CASE("GuardOp: every operator's text round-trips and is the runtime's word for it") {
    for (GuardOp op : {GuardOp::Eq, GuardOp::Le, GuardOp::Ge, GuardOp::Divisible}) {
        INFO(to_string(op));
        CHECK(parse_guard_op(to_string(op)) == op);
        CHECK(tessel_guard_op_from_text(to_string(op)) == (int)op);  // the runtime's constant
    }
    CHECK(std::string(runtime_name(GuardOp::Divisible)) == "TESSEL_GUARD_DIVISIBLE");
    CHECK(Guard{"N", GuardOp::Divisible, 16}.to_string() == "N % 16 == 0");
    CHECK(Guard{"M", GuardOp::Le, 16}.to_string() == "M <= 16");
    CHECK_THROWS_WITH_AS(parse_guard_op("<"), "unknown guard operator '<' (valid: ==, <=, >=, %)", std::invalid_argument);
    CHECK_THROWS_AS(parse_guard_op(""), std::invalid_argument);
}

TEST_CASE("ScheduleSpec::pick_variant picks what the runtime's tessel_pick_variant picks") {
    ScheduleSpec s("guarded");
    s.variants.push_back({{{"M", GuardOp::Eq, 1}}, {}});
    s.variants.push_back({{{"M", GuardOp::Le, 16}, {"N", GuardOp::Divisible, 8}}, {}});
    s.variants.push_back({{{"K", GuardOp::Ge, 4}}, {}});  // K is not an extent below: never holds
    // The same guards as tables: extents M, N (K missing: -1).
    const tessel_guard guards[] = {
        {0, TESSEL_GUARD_EQ, 1}, {0, TESSEL_GUARD_LE, 16}, {1, TESSEL_GUARD_DIVISIBLE, 8}, {-1, TESSEL_GUARD_GE, 4}};
    const int counts[] = {1, 2, 1};
    for (long m : {1L, 2L, 16L, 17L})
        for (long n : {0L, 3L, 8L, 24L}) {
            const int64_t extents[] = {m, n};
            INFO("M = " << m << ", N = " << n);
            CHECK(s.pick_variant({{"M", m}, {"N", n}}) == (size_t)tessel_pick_variant(guards, counts, 3, extents));
        }
}
