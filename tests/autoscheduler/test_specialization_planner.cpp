// The specialization planner (autoscheduler/SpecializationPlanner.h): profiles as text, the
// dispatch rule, budgets, and the plan against its two alternatives.
#include "autoscheduler/SpecializationPlanner.h"

#include <doctest/doctest.h>

using namespace tessel;
using namespace tessel::autosched;

namespace {

Extents m(long M) { return {{"M", M}, {"K", 4096}, {"N", 4096}}; }

/** A decode-heavy profile: most calls at M = 1, a few sizes dominating, a long tail. */
ShapeProfile decode_heavy() {
    return parse_shape_profile(R"(# calls per shape
M=1 K=4096 N=4096 calls=90000
M=4 K=4096 N=4096 calls=5000
M=16 K=4096 N=4096 calls=3000
M=64 K=4096 N=4096 calls=200
M=256 K=4096 N=4096 calls=100
)");
}

/** Seconds per call: the general GEMM is slow for small M; specialized nests are faster there. */
VariantCosts fallback() {
    VariantCosts f{"gemm", {}, {}, 1.0, 0, 200000};
    for (long M : {1, 4, 16, 64, 256}) f.seconds_per_call[m(M)] = 2e-3 + M * 1e-5;
    return f;
}

std::vector<VariantCosts> candidates() {
    VariantCosts gemv{"gemv",
                      {{
                          "M",
                          sched::GuardOp::Eq,
                          1,
                      }},
                      {{m(1), 4e-4}},
                      0.6,
                      5,
                      40000};
    VariantCosts decode{"decode", {{"M", sched::GuardOp::Le, 16}}, {}, 0.8, 2, 60000};
    for (long M : {1, 4, 16}) decode.seconds_per_call[m(M)] = 5e-4 + M * 3e-5;
    VariantCosts big{"gemm_m256", {{"M", sched::GuardOp::Eq, 256}}, {{m(256), 4.2e-3}}, 1.2, 30, 250000};
    return {gemv, decode, big};
}

/** The single-kernel program of these candidates and that fallback. */
std::vector<KernelChoices> one(std::vector<VariantCosts> c, VariantCosts f) { return {{"", std::move(c), std::move(f)}}; }

}  // namespace

TEST_CASE("shape profiles: text form, with errors naming the line") {
    const ShapeProfile p = decode_heavy();
    REQUIRE(p.size() == 5);
    CHECK(p[0].shape == m(1));
    CHECK(p[0].calls == 90000);
    CHECK_THROWS_WITH(parse_shape_profile("M=1 K=2\n", "p.txt"), doctest::Contains("p.txt:1: a shape needs extents and calls="));
    CHECK_THROWS_WITH(parse_shape_profile("\nM=0 calls=3\n", "p.txt"), doctest::Contains("p.txt:2: 'M=0': extents are positive"));
    CHECK_THROWS_WITH(parse_shape_profile("M=x calls=3\n"), doctest::Contains("not a number"));
    CHECK_THROWS_WITH(parse_shape_profile("M=1 calls=-1\n"), doctest::Contains("calls must be"));
    CHECK_THROWS_WITH(parse_shape_profile("M=1 calls=1\nM=1 calls=2\n"), doctest::Contains("listed twice"));
}

TEST_CASE("planner: a decode-heavy profile keeps the small-M variants, and beats both alternatives") {
    const auto c = candidates();
    const SpecializationPlan p = plan_specializations(decode_heavy(), one(c, fallback()));
    INFO(p.to_string(one(c, fallback())));
    REQUIRE(p.feasible);
    CHECK(p.served_by[0].at(m(1)) == "gemv");
    CHECK(p.served_by[0].at(m(4)) == "decode");
    CHECK(p.served_by[0].at(m(64)) == "gemm");
    CHECK(p.totals.total() < p.fallback_only.total());
    CHECK(p.totals.total() <= p.every_candidate.total());
    // The M = 256 specialization saves 100 x 0.4 ms = 0.04 s of calls but costs 1.2 s to compile
    // at every start: dropped.
    for (size_t i : p.chosen[0]) CHECK(c[i].name != "gemm_m256");
    SUBCASE("amortized over many starts, it pays") {
        PlannerBudgets b;
        b.compiles_amortized_over = 1000;
        b.tunings_amortized_over = 1000;
        const SpecializationPlan q = plan_specializations(decode_heavy(), one(c, fallback()), b);
        CHECK(q.served_by[0].at(m(256)) == "gemm_m256");
    }
}

TEST_CASE("planner: budgets are respected, and a fallback over budget is refused with the numbers") {
    const auto c = candidates();
    PlannerBudgets b;
    b.code_bytes = 200000 + 50000;  // room for the gemv variant only
    const SpecializationPlan p = plan_specializations(decode_heavy(), one(c, fallback()), b);
    REQUIRE(p.feasible);
    CHECK(p.totals.code_bytes <= *b.code_bytes);
    CHECK(p.served_by[0].at(m(1)) == "gemv");
    CHECK(p.served_by[0].at(m(4)) == "gemm");
    CHECK_FALSE(p.every_candidate.within_budget);
    CHECK(p.to_string(one(c, fallback())).find("OVER BUDGET: code") != std::string::npos);

    PlannerBudgets tight;
    tight.compile_seconds = 0.5;
    const SpecializationPlan q = plan_specializations(decode_heavy(), one(c, fallback()), tight);
    CHECK_FALSE(q.feasible);
    CHECK(q.infeasible_reason.find("compile 1 s > budget 0.5 s") != std::string::npos);
}

TEST_CASE("planner: shapes outside a candidate's guards or times go to the next variant, then the fallback") {
    const auto c = candidates();
    // decode has no time for M = 1 here: gemv's guard fails for M = 4, so M = 4 goes to decode.
    const PlanTotals t = plan_totals(decode_heavy(), one(c, fallback()), {{0, 1}}, {});
    const double calls =
        90000 * 4e-4 + 5000 * (5e-4 + 4 * 3e-5) + 3000 * (5e-4 + 16 * 3e-5) + 200 * (2e-3 + 64e-5) + 100 * (2e-3 + 256e-5);
    CHECK(t.run_seconds == doctest::Approx(calls));
    CHECK_THROWS_WITH(plan_specializations(parse_shape_profile("M=2 K=1 N=1 calls=1"), one(c, fallback())),
                      doctest::Contains("no time for the profiled shape K=1 M=2 N=1"));
}

TEST_CASE("planner: greedy search past the exhaustive limit finds the same plan on a separable profile") {
    // One specialization per distinct shape, each paying for itself independently.
    ShapeProfile profile;
    VariantCosts f{"gemm", {}, {}, 1.0, 0, 1000};
    std::vector<VariantCosts> per_shape;
    for (long M = 1; M <= (long)kExhaustiveCandidates + 3; M++) {
        profile.push_back({m(M), M % 2 ? 1000.0 : 1.0});
        f.seconds_per_call[m(M)] = 1e-3;
        per_shape.push_back({"m" + std::to_string(M), {{"M", sched::GuardOp::Eq, M}}, {{m(M), 1e-4}}, 0.05, 0, 100});
    }
    const SpecializationPlan p = plan_specializations(profile, one(per_shape, f));
    CHECK(p.search.find("greedy") == 0);
    // Worth it where 1000 calls x 0.9 ms = 0.9 s > 0.05 s; not where 1 call saves 0.9 ms.
    for (const auto &e : profile)
        CHECK(p.served_by[0].at(e.shape) == (e.calls > 1 ? "m" + std::to_string(e.shape.at("M")) : "gemm"));
    CHECK(regret(p.totals.total(), {p.fallback_only.total(), p.every_candidate.total()}) == 0);
    CHECK(regret(2.0, {1.0, 4.0}) == doctest::Approx(1.0));
}

TEST_CASE("planner: kernels of one library share the budgets; each call runs every kernel") {
    // Two kernels, each with a small-M variant; the code budget has room for one of them. The
    // second kernel's variant saves more (90000 calls x 1.5 ms vs x 1.0 ms): it is the one kept.
    auto kernel = [](const std::string &name, double fast) {
        KernelChoices k{name, {}, fallback()};
        k.fallback.name = name + "_gemm";
        k.candidates.push_back({name + "_gemv", {{"M", sched::GuardOp::Eq, 1}}, {{m(1), fast}}, 0.1, 0, 40000});
        return k;
    };
    const std::vector<KernelChoices> lib = {kernel("g0", 1.0e-3), kernel("g1", 0.5e-3)};
    PlannerBudgets b;
    b.code_bytes = 2 * 200000 + 40000;
    const SpecializationPlan p = plan_specializations(decode_heavy(), lib, b);
    INFO(p.to_string(lib));
    REQUIRE(p.feasible);
    CHECK(p.chosen[0].empty());
    CHECK(p.chosen[1] == std::vector<size_t>{0});
    CHECK(p.served_by[0].at(m(1)) == "g0_gemm");
    CHECK(p.served_by[1].at(m(1)) == "g1_gemv");
    CHECK(p.totals.code_bytes == 440000);
    // Each call runs both kernels: the fallback-only run time is twice one kernel's.
    const PlanTotals single = plan_totals(decode_heavy(), one({}, fallback()), {{}}, {});
    CHECK(p.fallback_only.run_seconds == doctest::Approx(2 * single.run_seconds));
    CHECK(p.to_string(lib).find("kernel g1: 1 of 1 candidate(s) kept") != std::string::npos);
    KernelChoices broken = kernel("g2", 1e-3);
    broken.fallback.seconds_per_call.erase(m(4));
    CHECK_THROWS_WITH(plan_specializations(decode_heavy(), {broken}), doctest::Contains("'g2_gemm' of g2 has no time"));
}
