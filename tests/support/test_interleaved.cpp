// The interleaved timing harness (support/Interleaved.h) on fake contenders whose times an
// injected clock makes exact: the order of rounds, warm-up, the stopping rule, the per-call hooks.
#include "support/Interleaved.h"

#include <doctest/doctest.h>

#include <map>
#include <set>

using namespace tessel;

namespace {

/** A fake clock: contenders advance it by the seconds they "take". */
struct FakeTime {
    double now = 0;
    std::function<double()> clock() {
        return [this] { return now; };
    }
    /** A contender that takes `seconds(round)` per call and logs its calls. */
    Contender takes(std::string name, std::function<double(uint64_t)> seconds, std::vector<size_t> *log = nullptr,
                    size_t id = 0) {
        return Contender(std::move(name), [this, seconds, log, id](Call &call) {
            now += seconds(call.round());
            if (log) log->push_back(id);
        });
    }
};

InterleavedOptions with(FakeTime &t, int warmup, StoppingRule rule) {
    InterleavedOptions o;
    o.warmup_rounds = warmup;
    o.stop = rule;
    o.clock = t.clock();
    return o;
}

}  // namespace

TEST_CASE("each round draws its own order, and every contender follows every other") {
    FakeTime t;
    std::vector<size_t> log;
    std::vector<Contender> cs;
    for (size_t i = 0; i < 4; i++)
        cs.push_back(t.takes(
            "c" + std::to_string(i), [](uint64_t) { return 1.0; }, &log, i));
    Interleaved h(cs, with(t, 0, StoppingRule::fixed(30)));
    h.run();
    REQUIRE(log.size() == 4 * 30);
    std::set<std::vector<size_t>> orders;
    std::set<std::pair<size_t, size_t>> adjacent;
    for (size_t r = 0; r < 30; r++) {
        const std::vector<size_t> order(log.begin() + 4 * r, log.begin() + 4 * (r + 1));
        CHECK(std::set<size_t>(order.begin(), order.end()).size() == 4);  // each once per round
        orders.insert(order);
        for (size_t i = 0; i + 1 < 4; i++) adjacent.insert({order[i], order[i + 1]});
    }
    CHECK(orders.size() > 10);
    CHECK(adjacent.size() == 12);  // every ordered pair (a directly before b) occurred
}

TEST_CASE("warm-up rounds run every contender but record nothing") {
    FakeTime t;
    std::map<std::string, int> calls;
    std::vector<Contender> cs;
    for (const char *name : {"a", "b"})
        cs.push_back(Contender(name, [&t, &calls, name](Call &call) {
            calls[name]++;
            t.now += call.warming_up() ? 100.0 : 1.0;  // a warm-up call is slow (cold caches)
        }));
    Interleaved h(cs, with(t, 2, StoppingRule::fixed(3)));
    const InterleavedResult &r = h.run();
    CHECK(calls["a"] == 5);
    CHECK(calls["b"] == 5);
    CHECK(r.rounds == 3);
    CHECK(r.stopped == StopReason::Rounds);
    for (size_t c = 0; c < 2; c++) CHECK(r.samples[c] == std::vector<double>{1.0, 1.0, 1.0});
    CHECK(r.seconds == doctest::Approx(2 * 2 * 100.0 + 3 * 2 * 1.0));
}

TEST_CASE("the stopping rule stops once the fastest is separated") {
    FakeTime t;
    // a always 1 s, b always 2 s: a wins every round; the sign test separates them at 95 %
    // after 6 rounds (p = 2 / 2^6 = 0.031; at 5 rounds p = 0.0625).
    Interleaved h({t.takes("a", [](uint64_t) { return 1.0; }), t.takes("b", [](uint64_t) { return 2.0; })},
                  with(t, 1, StoppingRule::until_separated(0.95, 3, 50)));
    const InterleavedResult &r = h.run();
    CHECK(r.stopped == StopReason::Separated);
    CHECK(r.rounds == 6);
    CHECK(r.fastest() == 0);
    CHECK(r.versus(0, 1).median_ratio == doctest::Approx(0.5));
    CHECK(r.versus(0, 1).separated(0.95));

    SUBCASE("tested only every check_every rounds") {
        FakeTime u;
        Interleaved g({u.takes("a", [](uint64_t) { return 1.0; }), u.takes("b", [](uint64_t) { return 2.0; })},
                      with(u, 0, StoppingRule::until_separated(0.95, 3, 50, 5)));
        CHECK(g.run().rounds == 8);  // tested at 3 and 8
        CHECK(g.result().stopped == StopReason::Separated);
    }
}

TEST_CASE("the stopping rule stops when the round budget is spent") {
    FakeTime t;
    // a and b take turns being faster: never separated.
    auto a = [](uint64_t r) { return r % 2 ? 1.0 : 2.0; };
    auto b = [](uint64_t r) { return r % 2 ? 2.0 : 1.0; };
    Interleaved h({t.takes("a", a), t.takes("b", b)}, with(t, 1, StoppingRule::until_separated(0.95, 3, 20)));
    const InterleavedResult &r = h.run();
    CHECK(r.stopped == StopReason::RoundBudget);
    CHECK(r.rounds == 20);
    CHECK(!r.fastest_separated(0.95));
}

TEST_CASE("the stopping rule stops when the time budget is spent") {
    FakeTime t;
    // 2 contenders x 1 s: the warm-up round takes 2 s, then 4 timed rounds reach 10 s.
    auto one = [](uint64_t) { return 1.0; };
    Interleaved h({t.takes("a", one), t.takes("b", one)},
                  with(t, 1, StoppingRule::until_separated(0.95, 1, 1000).within_seconds(10)));
    const InterleavedResult &r = h.run();
    CHECK(r.stopped == StopReason::TimeBudget);
    CHECK(r.rounds == 4);
    CHECK(r.seconds == doctest::Approx(10));
}

TEST_CASE("StoppingRule::after_round asks the paired test only when it needs it") {
    int asked = 0;
    auto never = [&] { return ++asked, false; };
    const StoppingRule fixed = StoppingRule::fixed(4);
    CHECK(!fixed.after_round(3, 0, never));
    CHECK(fixed.after_round(4, 0, never) == StopReason::Rounds);
    CHECK(asked == 0);
    const StoppingRule until = StoppingRule::until_separated(0.9, 2, 6, 2);
    CHECK(!until.after_round(1, 0, never));
    CHECK(asked == 0);
    CHECK(!until.after_round(2, 0, never));
    CHECK(!until.after_round(3, 0, never));  // not a testing round
    CHECK(asked == 1);
    CHECK(until.after_round(4, 0, [] { return true; }) == StopReason::Separated);
    CHECK(until.after_round(6, 0, never) == StopReason::RoundBudget);
    CHECK(StoppingRule::fixed(0).min_rounds == 1);
}

TEST_CASE("a call may time part of itself, record its own time, or drop out; before_call is untimed") {
    FakeTime t;
    std::vector<size_t> flushed;
    int c_calls = 0;
    InterleavedOptions o = with(t, 1, StoppingRule::fixed(3));
    o.before_call = [&](size_t c) {
        flushed.push_back(c);
        t.now += 50;  // a cache flush: never part of a sample
    };
    Interleaved h({Contender("part",
                             [&t](Call &call) {
                                 t.now += 7;  // setting up: not timed
                                 call.time([&] { t.now += 2; });
                             }),
                   Contender("own", [](Call &call) { call.record(0.25); }),
                   Contender("drops",
                             [&c_calls](Call &call) {
                                 if (++c_calls == 3) call.fail("wrong result");
                             })},
                  o);
    const InterleavedResult &r = h.run();
    CHECK(r.samples[0] == std::vector<double>{2.0, 2.0, 2.0});
    CHECK(r.samples[1] == std::vector<double>{0.25, 0.25, 0.25});
    CHECK(r.samples[2].size() == 1);  // warm-up, one timed round, then dropped in the second
    CHECK(r.failed(2));
    CHECK(r.failures[2] == "wrong result");
    CHECK(c_calls == 3);
    CHECK(flushed.size() == 3 + 3 + 3 + 2);  // warm-up, rounds 1 and 2, round 3 without "drops"
    CHECK(r.fastest() == 1);
}

TEST_CASE("run_round drives the harness from another loop; median_seconds is the harness with one contender") {
    FakeTime t;
    Interleaved h({t.takes("a", [](uint64_t r) { return 1.0 + (double)r; })}, with(t, 2, StoppingRule::fixed(1)));
    CHECK(h.run_round() == doctest::Approx(3.0));  // rounds 0 and 1 warm up
    CHECK(h.run_round() == doctest::Approx(4.0));
    CHECK(h.result().rounds == 2);
    int calls = 0;
    const double s = median_seconds([&] { calls++; }, 5);
    CHECK(calls == 6);
    CHECK(s >= 0);
}

TEST_CASE("no contenders, or none left running, ends the measurement") {
    FakeTime t;
    Interleaved none({}, with(t, 1, StoppingRule::fixed(3)));
    CHECK(none.run().stopped == StopReason::NoContenders);
    Interleaved failing({Contender("x", [](Call &c) { c.fail(""); })}, with(t, 1, StoppingRule::fixed(3)));
    const InterleavedResult &r = failing.run();
    CHECK(r.stopped == StopReason::NoContenders);
    CHECK(r.failures[0] == "failed");
    CHECK(r.fastest() == 1);
}
