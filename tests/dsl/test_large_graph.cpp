// A generated graph of 100,000 ops goes through the front end in linear time: parse, the default
// simplification pipeline (verified after every pass) and fusion planning, timed against a graph
// of a tenth the size.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "dsl/Pipeline.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "dsl/passes/Fusion.h"
#include "support/Clock.h"

using namespace tessel::dsl;
using tessel::seconds_since;

namespace {

/** `layers` MLP layers of 10 ops each: two inputs, matmul + bias + gelu (one fusion group), a
 * multiply by 1 (simplified away), a duplicate (CSE), a dead diagnostic branch (DCE), shape code
 * (folded) and a relu. */
std::string generate(int layers) {
    std::string s = "graph big {\n  %h0 = input : f32[M, 16]\n";
    for (int i = 1; i <= layers; i++) {
        const std::string n = std::to_string(i), p = std::to_string(i - 1);
        s += "  %w" + n + " = input : f32[16, 16]\n";
        s += "  %b" + n + " = input : f32[16]\n";
        s += "  %m" + n + " = matmul(%h" + p + ", %w" + n + ")\n";
        s += "  %a" + n + " = %m" + n + " + %b" + n + "\n";
        s += "  %c" + n + " = %m" + n + " + %b" + n + "\n";
        s += "  %one" + n + " = %a" + n + " * 1.0\n";
        s += "  %g" + n + " = gelu(%one" + n + ")\n";
        s += "  %dead" + n + " = reduce_sum(%c" + n + ", axes=[1])\n";
        s += "  %k" + n + " = 8 * 2\n";
        s += "  %h" + n + " = relu(%g" + n + ")\n";
    }
    return s + "  output %h" + std::to_string(layers) + "\n}\n";
}

/** Seconds to parse, simplify and plan fusion for `layers` layers, checking each step's result. */
double front_end_seconds(int layers, bool report) {
    const std::string text = generate(layers);
    tessel::SteadyClock::time_point t0 = tessel::SteadyClock::now();
    Graph g = parse(text, "big.tsl");
    const double parse_s = seconds_since(t0);
    CHECK(g.size() == size_t(layers) * 13 + 1);  // and the constants 1.0, 8 and 2 of each layer

    tessel::SteadyClock::time_point t1 = tessel::SteadyClock::now();
    PassRunResult r = default_pipeline().run(g, {}, nullptr);
    const double simplify_s = seconds_since(t1);
    CHECK(r.converged);
    CHECK(g.size() == size_t(layers) * 6 + 1);  // per layer: two inputs, matmul, add, gelu, relu

    tessel::SteadyClock::time_point t2 = tessel::SteadyClock::now();
    FusionPlan plan = plan_fusion(g);
    const double fusion_s = seconds_since(t2);
    CHECK(plan.groups.size() >= size_t(layers));

    const double total = parse_s + simplify_s + fusion_s;
    if (report)
        MESSAGE("parse " << parse_s << " s, simplify " << simplify_s << " s, fusion " << fusion_s << " s, total " << total
                         << " s for " << layers * 13 + 1 << " ops");
    return total;
}

}  // namespace

// Linear time is checked as a ratio of two sizes timed in the same process, not as a bound in
// seconds: a loaded machine (CI, two test processes per core) slows both alike, while a
// quadratic step makes ten times the ops cost a hundred times the time. The bound leaves room for
// the caches: at 130,000 ops the graph outgrows them, and even parsing, one pass over the text,
// then costs more per op than at 13,000.
TEST_CASE("100,000 ops parse, simplify and plan fusion in linear time") {
    const double small = std::min(front_end_seconds(1000, false), front_end_seconds(1000, false));
    const double large = front_end_seconds(10000, true);
    MESSAGE("10x the ops took " << large / small << "x the time");
    CHECK(large / small <= 40.0);
}
