// PhaseTimes: phases in first-run order, repeated phases summed, fn's result passed through,
// the time of a phase that throws still counted.
#include "support/PhaseTimes.h"

#include <doctest/doctest.h>

#include <stdexcept>
#include <thread>

using namespace tessel;

TEST_CASE("phase times: order, sums, results and throws") {
    PhaseTimes t;
    CHECK(t.time("parse", [] { return 42; }) == 42);
    t.time("fusion", [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
    t.add("parse", 1.0);
    CHECK_THROWS_AS(t.time("lowering", []() -> int { throw std::runtime_error("no"); }), std::runtime_error);
    REQUIRE(t.phases().size() == 3);
    CHECK(t.phases()[0].first == "parse");
    CHECK(t.phases()[0].second >= 1.0);
    CHECK(t.phases()[1].second >= 0.02);
    CHECK(t.phases()[2].first == "lowering");
    PhaseTimes before;
    before.add("read", 0.5);
    before.append(t);
    CHECK(before.phases().front().first == "read");
    CHECK(before.total() == doctest::Approx(0.5 + t.total()));
    const std::string text = before.to_string();
    CHECK(text.find("fusion") != std::string::npos);
    CHECK(text.find("total") != std::string::npos);
    CHECK(text.find("%)") != std::string::npos);
}
