// Guard::holds and ScheduleSpec::pick_variant are the C runtime's evaluator
// (runtime/tessel_guard.c), the one a generated library dispatches with: every operator over a
// grid of values and extents (zero and negative divisors included) agrees, an unknown operator
// throws here where the runtime answers -1, and a missing extent never holds.
#include "schedules/Schedule.h"
#include "tessel_runtime.h"

#include <doctest/doctest.h>

using namespace tessel::sched;

TEST_CASE("Guard::holds is the runtime's guard evaluator") {
    for (const char *op : {"==", "<=", ">=", "%"})
        for (long value : {-3L, -1L, 0L, 1L, 4L, 16L})
            for (long extent : {-8L, 0L, 1L, 3L, 4L, 16L, 48L}) {
                const Guard g{"M", op, value};
                INFO(g.to_string() << " at M = " << extent);
                CHECK(g.holds({{"M", extent}}) == (tessel_guard_holds(tessel_guard_op_from_text(op), value, extent) == 1));
            }
    CHECK_FALSE(Guard{"N", "%", 0}.holds({{"N", 0}}));
    CHECK(Guard{"N", "%", 16}.holds({{"N", 48}}));
    CHECK_FALSE(Guard{"N", "==", 1}.holds({{"M", 1}}));  // N not among the extents
    CHECK_THROWS_WITH(Guard({"M", "<", 4}).holds({{"M", 1}}), doctest::Contains("unknown operator '<'"));
    CHECK(tessel_guard_holds(tessel_guard_op_from_text("<"), 4, 1) == -1);
}

TEST_CASE("ScheduleSpec::pick_variant picks what the runtime's tessel_pick_variant picks") {
    ScheduleSpec s("guarded");
    s.variants.push_back({{{"M", "==", 1}}, {}});
    s.variants.push_back({{{"M", "<=", 16}, {"N", "%", 8}}, {}});
    s.variants.push_back({{{"K", ">=", 4}}, {}});  // K is not an extent below: never holds
    // The same guards as tables: extents M, N (K missing: -1).
    const tessel_guard guards[] = {{0, TESSEL_GUARD_EQ, 1}, {0, TESSEL_GUARD_LE, 16}, {1, TESSEL_GUARD_DIVISIBLE, 8}, {-1, TESSEL_GUARD_GE, 4}};
    const int counts[] = {1, 2, 1};
    for (long m : {1L, 2L, 16L, 17L})
        for (long n : {0L, 3L, 8L, 24L}) {
            const int64_t extents[] = {m, n};
            INFO("M = " << m << ", N = " << n);
            CHECK(s.pick_variant({{"M", m}, {"N", n}}) == (size_t)tessel_pick_variant(guards, counts, 3, extents));
        }
}
