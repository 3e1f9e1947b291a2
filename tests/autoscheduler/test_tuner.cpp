// The autoscheduler's parts alone (search space, pruning, cost model, tie rule, coverage
// statistics) and wired together with a fake measurer and an in-memory cache.
#include "autoscheduler/Coverage.h"
#include "autoscheduler/Pruning.h"
#include "autoscheduler/Tuner.h"
#include "baselines/GeluReference.h"
#include "codegen/Compile.h"
#include "driver/GeluLayer.h"
#include "dsl/Simplify.h"
#include "dsl/passes/Fusion.h"
#include "schedules/Library.h"
#include "schedules/MatmulCpuSchedules.h"
#include "schedules/ScheduleJson.h"
#include "support/Random.h"
#include "tests/GeluMlpText.h"
#include "tests/TempDir.h"
#include "tests/autoscheduler/FakeMeasurer.h"

#include "support/Statistics.h"

#include <doctest/doctest.h>

#include <set>

#include <cmath>

using namespace tessel;
using namespace tessel::autosched;

namespace {

TargetModel avx512_model() { return TargetModel::for_target(parse_target("x86-64-linux-avx-avx2-avx512-fma-f16c-sse41")); }

const char *const kGelu = tessel::testing::kGeluMlpText;

/** The GELU MLP's one group at 64 x 256 x 512 on this machine. */
TuneRequest gelu_request(const dsl::Graph &g) {
    const dsl::FusionPlan plan = dsl::plan_fusion(g);
    REQUIRE(plan.groups.size() == 1);
    TuneRequest r;
    r.graph = &g;
    r.group = plan.groups[0];
    r.target = parse_target("host");
    r.workload = Workload{64, 256, 512};
    r.symbols = {{"M", 64}, {"K", 256}, {"N", 512}};
    return r;
}

}  // namespace

TEST_CASE("the search space follows the target: vector width and register file") {
    const Workload w{512, 1024, 4096};
    auto space512 = enumerate_space(w, avx512_model());
    auto space2 = enumerate_space(w, TargetModel::for_target(parse_target("x86-64-linux-avx-avx2-fma-f16c-sse41")));
    CHECK(!space512.empty());
    // With 16 registers (AVX2) no block of more than 16 accumulators is generated.
    for (const auto &p : space2)
        if (p.nest == NestFamily::Gemm) CHECK(p.mr * p.nr_vectors <= 16);
    CHECK(space512.size() > space2.size());
    auto cuda = enumerate_space(w, TargetModel::for_target(parse_target("host-cuda")));
    CHECK(std::all_of(cuda.begin(), cuda.end(),
                      [](const CandidateParams &p) { return nest_device(p.nest) == sched::Device::Cuda; }));
}

TEST_CASE("pruning rules each remove what they state, and report counts") {
    const TargetModel m = avx512_model();
    PruneReport report;
    const Workload square{2048, 2048, 2048}, decode{1, 4096, 4096};
    auto kept = prune(enumerate_space(square, m), square, m, &report);
    CHECK(report.generated == enumerate_space(square, m).size());
    CHECK(report.survivors == kept.size());
    size_t removed = 0;
    for (const auto &[rule, n] : report.removed_by_rule) removed += n;
    CHECK(removed + kept.size() == report.generated);
    for (const auto &p : kept) {
        CHECK(p.nest != NestFamily::Decode);  // decode only for M <= 16
        if (p.nest == NestFamily::Gemm) {
            CHECK(p.mr * p.nr_vectors + p.nr_vectors + 1 <= 32);
            CHECK(p.mr * p.nr_vectors >= 8);
        }
    }
    auto decode_kept = prune(enumerate_space(decode, m), decode, m);
    CHECK(std::none_of(decode_kept.begin(), decode_kept.end(),
                       [](const CandidateParams &p) { return p.nest == NestFamily::Gemm && p.mr > 1; }));
    CHECK(std::any_of(decode_kept.begin(), decode_kept.end(),
                      [](const CandidateParams &p) { return p.nest == NestFamily::Decode; }));
    // A rule's reason names the numbers.
    CandidateParams big;
    big.nest = NestFamily::Gemm, big.mr = 16, big.nr_vectors = 2, big.panel_blocks = 1;
    CHECK(pruning_rules(sched::Device::Cpu)[1].violation(big, square, m) == "35 vector registers needed, 32 available");
}

TEST_CASE("split-K register-block nest for 8 <= M <= 16, gemv nest for M = 1; the model prefers split-K at M = 16") {
    const TargetModel m = avx512_model();
    const Workload decode16{16, 4096, 4096}, decode1{1, 4096, 4096};
    auto kept16 = prune(enumerate_space(decode16, m), decode16, m);
    auto kept1 = prune(enumerate_space(decode1, m), decode1, m);
    CHECK(std::any_of(kept16.begin(), kept16.end(), [](const CandidateParams &p) { return p.nest == NestFamily::Splitk; }));
    CHECK(std::none_of(kept1.begin(), kept1.end(), [](const CandidateParams &p) { return p.nest == NestFamily::Splitk; }));
    // The library point at M = 16 is cpu_blocked's split-K nest, and it builds a schedule.
    const auto lib = library_point(decode16, Halide::Target("x86-64-linux-avx512-avx512_skylake-avx2-fma"));
    REQUIRE(lib);
    CHECK(lib->nest == NestFamily::Splitk);
    CHECK(make_schedule(*lib, Halide::Target("x86-64-linux-avx512-avx512_skylake-avx2-fma")).variants.size() == 1);
    // At M = 1 it is the gemv nest, which only M = 1 keeps.
    const auto lib1 = library_point(decode1, Halide::Target("x86-64-linux-avx512-avx512_skylake-avx2-fma"));
    REQUIRE(lib1);
    CHECK(lib1->nest == NestFamily::Gemv);
    CHECK(std::any_of(kept1.begin(), kept1.end(), [](const CandidateParams &p) { return p.nest == NestFamily::Gemv; }));
    CHECK(std::none_of(kept16.begin(), kept16.end(), [](const CandidateParams &p) { return p.nest == NestFamily::Gemv; }));
    AnalyticalCostModel model(m);
    CandidateParams splitk, dec;
    splitk.nest = NestFamily::Splitk, splitk.mr = 8, splitk.nr_vectors = 3, splitk.k_chunk = 512;
    dec.nest = NestFamily::Decode, dec.k_chunk = 512, dec.k_unroll = 8;
    auto c = model.predict(decode16, std::vector<CandidateParams>{splitk, dec});
    CHECK(c[0].total_s() < c[1].total_s());  // the order measured (measurement_notes.md, decode-16-nests)
}

TEST_CASE("K-blocked split-K: the library point is in place on every target, the copying form a point of the space") {
    const Halide::Target avx2("x86-64-linux-avx-avx2-fma-f16c-sse41"), avx512("x86-64-linux-avx512-avx512_skylake-avx2-fma");
    const Workload w8{8, 4096, 4096}, w16{16, 4096, 4096};
    CHECK(library_point(w8, avx2)->k_block == 0);
    CHECK(library_point(w16, avx2)->k_block == 0);
    CHECK(library_point(w8, avx512)->k_block == 0);
    CHECK(library_point(w8, avx2)->to_string() == "splitk mr=4 nr=3v kchunk=512");
    // The point's k_block decides the nest, not the target's default: a copying point copies.
    CandidateParams blocked = *library_point(w8, avx2);
    blocked.k_block = 32;
    CHECK(blocked.to_string() == "splitk mr=4 nr=3v kchunk=512 kblock=32");
    const auto blocked_steps = make_schedule(blocked, avx2).variants.at(0).steps;
    const auto in_place_steps = make_schedule(*library_point(w8, avx2), avx2).variants.at(0).steps;
    CHECK(blocked_steps != in_place_steps);
    CHECK(blocked_steps == sched::matmul_cpu_splitk_gemm_steps([&] {
              auto b = sched::CpuBlocking::for_target(avx2);
              b.k_block = 32;
              return b;
          }()));
    CHECK(in_place_steps == sched::matmul_cpu_splitk_gemm_steps(sched::CpuBlocking::for_target(avx2)));
    // Both forms survive pruning on AVX-512; the model charges the copy and the blocks' sums, and
    // in place the passes of the register tiles into the chunk's sums (read and written every 16 rows).
    const TargetModel m = avx512_model();
    const auto kept = prune(enumerate_space(w8, m), w8, m);
    auto find = [&](int k_block) {
        return std::find_if(kept.begin(), kept.end(), [&](const CandidateParams &p) {
            return p.nest == NestFamily::Splitk && p.mr == 8 && p.nr_vectors == 3 && p.k_chunk == 512 && p.k_block == k_block;
        });
    };
    REQUIRE(find(0) != kept.end());
    REQUIRE(find(32) != kept.end());
    AnalyticalCostModel model(m);
    const auto c = model.predict(w8, std::vector<CandidateParams>{*find(0), *find(32)});
    CHECK(c[1].cache_bytes > c[0].cache_bytes);
    CHECK(c[0].cache_bytes >= 2.0 * 8 * 4096 * 4 * (4096 / sched::CpuBlocking::kSumsBlock));
    CHECK(find(32)->to_json()["k_block"] == 32);
}

TEST_CASE("cost model: terms respond to what they model") {
    const TargetModel m = avx512_model();
    AnalyticalCostModel model(m);
    CandidateParams small, big;
    small.nest = big.nest = NestFamily::Gemm;
    small.mr = 2, small.nr_vectors = 4, small.panel_blocks = 1;
    big.mr = 8, big.nr_vectors = 3, big.panel_blocks = 1;
    const Workload square{2048, 2048, 2048};
    auto c = model.predict(square, std::vector<CandidateParams>{small, big});
    CHECK(c[1].pipe_efficiency > c[0].pipe_efficiency);  // more FMAs per load
    CHECK(c[1].total_s() < c[0].total_s());
    // Decode is memory-bound: memory dominates compute.
    CandidateParams dec;
    dec.nest = NestFamily::Decode, dec.k_chunk = 512, dec.k_unroll = 4;
    auto d = model.predict(Workload{1, 4096, 4096}, std::vector<CandidateParams>{dec});
    CHECK(d[0].memory_s > d[0].compute_s);
    CHECK(d[0].explain().find("memory") != std::string::npos);
    // A per-class calibration scales only its class.
    model.set_calibration("decode", Calibration{1, 2, 1});
    auto d2 = model.predict(Workload{1, 4096, 4096}, std::vector<CandidateParams>{dec});
    CHECK(d2[0].memory_s == doctest::Approx(2 * d[0].memory_s));
    auto c2 = model.predict(square, std::vector<CandidateParams>{small});
    CHECK(c2[0].total_s() == doctest::Approx(c[0].total_s()));
}

TEST_CASE("near-tie rule: within the tolerance the model's better-ranked candidate wins") {
    auto measured = [](double ms) {
        Measurement m;
        m.median_ms = ms;
        return std::optional<Measurement>(m);
    };
    std::vector<RankedCandidate> ranked(3);
    ranked[0].measured = measured(10.2);  // model's #1, 2% slower than the fastest: tied
    ranked[1].measured = measured(10.0);
    ranked[2].measured = measured(11.0);
    std::string why;
    CHECK(Tuner::pick_winner(ranked, 0.03, &why) == 0);
    CHECK(why.find("tied") != std::string::npos);
    ranked[0].measured = measured(10.5);  // 5% slower: no longer tied
    CHECK(Tuner::pick_winner(ranked, 0.03, &why) == 1);
    ranked[1].measured->status = Status::Crash;
    CHECK(Tuner::pick_winner(ranked, 0.03, &why) == 0);
}

TEST_CASE("final round: paired rounds separate a faster candidate, or tie and let the model's best win") {
    auto measured = [](std::vector<double> samples) {
        Measurement m;
        m.samples = samples;
        m.median_ms = median(samples);
        return std::optional<Measurement>(m);
    };
    std::vector<RankedCandidate> ranked(3);
    // #2 is faster in every one of 12 rounds although the machine drifts 2x across them.
    std::vector<double> slow, fast;
    for (int i = 0; i < 12; i++) slow.push_back(1.0 + i * 0.1), fast.push_back(0.97 * (1.0 + i * 0.1));
    ranked[0].measured = measured(slow);
    ranked[1].measured = measured(fast);
    ranked[2].measured = measured(std::vector<double>(12, 5.0));
    std::string why;
    CHECK(Tuner::pick_final(ranked, {0, 1}, 0.95, &why) == 1);
    CHECK(why.find("(faster)") != std::string::npos);
    // Faster in 7 of 12 rounds only: not separated at 95 %, so the model's #1 wins.
    for (int i = 0; i < 5; i++) std::swap(slow[i], fast[i]);
    ranked[0].measured = measured(slow);
    ranked[1].measured = measured(fast);
    const size_t w = Tuner::pick_final(ranked, {0, 1}, 0.95, &why);
    INFO(why);
    CHECK(w == 0);
    CHECK(why.find("(tied)") != std::string::npos);
    // The library's point (#3 here) is the incumbent: the round's winner must be separated from it.
    std::vector<double> lib = slow;
    for (int i = 0; i < 12; i++) lib[i] = fast[i] * (i % 2 ? 1.02 : 0.99);  // #2 faster in 6 of 12 rounds
    ranked[2].measured = measured(lib);
    CHECK(Tuner::pick_final(ranked, {0, 1, 2}, 0.95, &why, 2) == 2);
    CHECK(why.find("the library's point stays") != std::string::npos);
    CHECK(Tuner::pick_final(ranked, {0, 1, 2}, 0.95, &why) != 2);  // without an incumbent, the model's order
    for (int i = 0; i < 12; i++) lib[i] = fast[i] * 1.05;          // #2 faster in every round: it replaces the library
    ranked[2].measured = measured(lib);
    ranked[0].measured = measured(std::vector<double>(12, 9.0));
    CHECK(Tuner::pick_final(ranked, {0, 1, 2}, 0.95, &why, 2) == 1);
    // The model's tie-break picks #1, tied with the fastest (#2) and with the library's point (#3);
    // #2 is separated from the library's point, so #2 wins rather than the library staying.
    std::vector<double> base, near, lib2;
    for (int i = 0; i < 12; i++) {
        base.push_back(1.0 + i * 0.1);
        near.push_back(base[i] * (i % 2 ? 0.999 : 1.04));  // 6 of 12 rounds either way against both
        lib2.push_back(base[i] * 1.02);
    }
    ranked[0].measured = measured(near);
    ranked[1].measured = measured(base);
    ranked[2].measured = measured(lib2);
    const size_t w2 = Tuner::pick_final(ranked, {0, 1, 2}, 0.95, &why, 2);
    INFO(why);
    CHECK(w2 == 1);
    CHECK(why.find("#2 wins") != std::string::npos);
    // The statistic itself: 10 of 10 rounds is p = 2 / 2^10.
    const PairedComparison c = compare_paired(std::vector<double>(10, 1.0), std::vector<double>(10, 2.0));
    CHECK(c.a_faster == 10);
    CHECK(c.p_value == doctest::Approx(2.0 / 1024));
    CHECK(c.median_ratio == doctest::Approx(0.5));
    CHECK(compare_paired({1, 2, 3}, {1, 2, 3}).p_value == 1.0);
}

TEST_CASE("interleaved rounds: a permutation per round, and no contender always follows the same one") {
    // Rotating a fixed order made the tuned schedule follow the library's every round in
    // --compare; each ordered pair (a right before b) must occur over a few rounds.
    std::set<std::pair<size_t, size_t>> follows;
    for (uint64_t round = 0; round < 40; round++) {
        const std::vector<size_t> order = round_order(4, round);
        std::vector<size_t> sorted = order;
        std::sort(sorted.begin(), sorted.end());
        CHECK(sorted == std::vector<size_t>{0, 1, 2, 3});
        for (size_t k = 1; k < order.size(); k++) follows.insert({order[k - 1], order[k]});
    }
    CHECK(follows.size() == 12);                    // all 4 x 3 ordered pairs
    CHECK(round_order(4, 7) == round_order(4, 7));  // a run repeats
    CHECK(round_order(1, 3) == std::vector<size_t>{0});
    CHECK(round_order(0, 3).empty());
}

TEST_CASE("tuner: front-runners within the band get a final interleaved round") {
    const dsl::Graph g = dsl::simplify_text(kGelu, "<test>").graph;
    const TuneRequest r = gelu_request(g);
    AnalyticalCostModel model(TargetModel::for_target(parse_target("host")));
    TunerParams params;
    params.budget = 4;
    SUBCASE("the faster one wins when the rounds separate them") {
        MemoryTuningCache cache;
        FakeMeasurer fake;
        fake.time_ms = [](const sched::ScheduleSpec &s) {
            return s.name == "candidate_2" ? 1.0 : s.name == "candidate_1" ? 1.05 : 2.0;
        };
        const TuneResult t = Tuner(model, &fake, &cache, params).tune(r);
        // #1 and #2, and the library's point though it screened 2x behind (screening can be that
        // wrong): it is timed again, and the winner must be separated from it.
        CHECK(fake.interleaved_calls == 3);
        const auto lib = library_point(r.workload, parse_target("host"));
        const auto lib_it =
            std::find_if(t.ranked.begin(), t.ranked.end(), [&](const RankedCandidate &c) { return c.params == *lib; });
        REQUIRE(lib_it != t.ranked.end());
        CHECK(lib_it->screened.has_value());  // it was a finalist
        CHECK(t.params == t.ranked[1].params);
        CHECK(t.decision.find("final round, 10 interleaved rounds") == 0);
    }
    SUBCASE("tied: the cost model's better-ranked one") {
        MemoryTuningCache cache;
        FakeMeasurer fake;
        fake.time_ms = [](const sched::ScheduleSpec &s) {
            return s.name == "candidate_2" || s.name == "candidate_1" ? 1.0 : 2.0;
        };
        const TuneResult t = Tuner(model, &fake, &cache, params).tune(r);
        CHECK(t.params == t.ranked[0].params);
        CHECK(t.decision.find("(tied)") != std::string::npos);
    }
    SUBCASE("off") {
        MemoryTuningCache cache;
        FakeMeasurer fake;
        fake.time_ms = [](const sched::ScheduleSpec &s) {
            return s.name == "candidate_2" ? 1.0 : s.name == "candidate_1" ? 1.05 : 2.0;
        };
        params.finalists = 0;
        Tuner(model, &fake, &cache, params).tune(r);
        CHECK(fake.interleaved_calls == 0);
    }
}

TEST_CASE("spearman rank correlation") {
    CHECK(spearman({1, 2, 3, 4}, {10, 20, 30, 40}) == doctest::Approx(1));
    CHECK(spearman({1, 2, 3, 4}, {40, 30, 20, 10}) == doctest::Approx(-1));
    CHECK(spearman({1, 2}, {1, 2}) == 0);        // too few points
    CHECK(spearman({1, 1, 1}, {1, 2, 3}) == 0);  // no spread
}

TEST_CASE("coverage: the candidates' measured range beside their measurement spread, ties flagged") {
    // One shape per class; the model ranks candidates 0, 1, 2 in that order.
    auto result = [](const std::string &cls, std::vector<std::vector<double>> samples) {
        TuneResult r;
        r.source = ScheduleProvenance::Measured;
        r.key.shape_class = cls;
        for (size_t i = 0; i < samples.size(); i++) {
            RankedCandidate c;
            c.params.nest = NestFamily::Group;
            c.params.group.vectors = (int)i + 1;
            c.cost.compute_s = 1e-3 * (double)(i + 1);
            Measurement m;
            m.samples = samples[i];
            m.median_ms = median(samples[i]);
            c.measured = m;
            r.ranked.push_back(c);
        }
        r.params = r.ranked[0].params;
        return r;
    };
    // "apart": 1.0, 2.0, 3.0 ms, each spread 1 %: range 200 %, the model right.
    // "tied": 1.00, 1.02, 0.99 ms with 10 % spreads: the order is noise.
    const auto rows = coverage_by_class({result("apart", {{0.99, 1.0, 1.01}, {1.98, 2.0, 2.02}, {2.97, 3.0, 3.03}}),
                                         result("tied", {{0.9, 1.0, 1.1}, {0.92, 1.02, 1.12}, {0.89, 0.99, 1.09}})});
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].shape_class == "apart");
    CHECK(rows[0].rank_correlation == doctest::Approx(1));
    CHECK(rows[0].measured_range == doctest::Approx(2.0));
    CHECK(rows[0].measurement_spread == doctest::Approx(0.01));  // IQR of three samples: 1.01 - 1.00
    CHECK(rows[1].measured_range == doctest::Approx(1.02 / 0.99 - 1));
    CHECK(rows[1].measurement_spread == doctest::Approx(0.1));
    const std::string text = to_string(rows);
    INFO(text);
    CHECK(text.find("tied ") != std::string::npos);
    const std::string tied_line = text.substr(text.find("tied "), text.find('\n', text.find("tied ")) - text.find("tied "));
    CHECK(tied_line.find("*") != std::string::npos);
    const std::string apart_line = text.substr(text.find("apart"), text.find('\n', text.find("apart")) - text.find("apart"));
    CHECK(apart_line.find("*") == std::string::npos);
    CHECK(text.find("spearman ranks noise") != std::string::npos);
}

TEST_CASE("tuner: measures the model's top K, commits the winner, and a second run is a cache hit") {
    const dsl::Graph g = dsl::simplify_text(kGelu, "<test>").graph;
    const TuneRequest r = gelu_request(g);
    AnalyticalCostModel model(TargetModel::for_target(parse_target("host")));
    MemoryTuningCache cache;
    FakeMeasurer fake;
    // Pretend that exactly the candidate ranked third by the model is fastest.
    fake.time_ms = [&](const sched::ScheduleSpec &s) { return s.name == "candidate_3" ? 1.0 : 2.0; };
    TunerParams params;
    params.budget = 4;
    Tuner tuner(model, &fake, &cache, params);
    TuneResult first = tuner.tune(r);
    CHECK(first.source == ScheduleProvenance::Measured);
    // The model's top 4, plus the library's own point when the model did not rank it there.
    const auto lib = library_point(r.workload, parse_target("host"));
    REQUIRE(lib);
    const bool lib_in_top4 = std::any_of(first.ranked.begin(), first.ranked.begin() + 4,
                                         [&](const RankedCandidate &c) { return c.params == *lib && c.measured; });
    CHECK(first.measured_count == (lib_in_top4 ? 4 : 5));
    CHECK(fake.calls == first.measured_count);
    CHECK(std::any_of(first.ranked.begin(), first.ranked.end(),
                      [&](const RankedCandidate &c) { return c.params == *lib && c.measured; }));
    const int calls = fake.calls;
    CHECK(first.params == first.ranked[2].params);
    CHECK(first.time_ms == 1.0);
    TuneResult second = tuner.tune(r);
    CHECK(second.source == ScheduleProvenance::Database);
    CHECK(fake.calls == calls);  // nothing measured again
    CHECK(second.schedule == first.schedule);
    // Model-only tuning measures nothing and still returns a schedule.
    MemoryTuningCache empty;
    params.measure = false;
    Tuner model_only(model, &fake, &empty, params);
    TuneResult m = model_only.tune(r);
    CHECK(m.source == ScheduleProvenance::Model);
    CHECK(fake.calls == calls);
    CHECK(m.params == m.ranked[0].params);
}

TEST_CASE("tuned schedules are correct on shapes they were not tuned for") {
    // make_schedule keeps the general nest as fallback, so any shape is handled.
    const Halide::Target host = parse_target("host");
    const TargetModel m = TargetModel::for_target(host);
    const Workload tuned_for{512, 1024, 4096};
    auto kept = prune(enumerate_space(tuned_for, m), tuned_for, m);
    AnalyticalCostModel model(m);
    auto costs = model.predict(tuned_for, kept);
    const size_t best =
        std::min_element(costs.begin(), costs.end(), [](auto &a, auto &b) { return a.total_s() < b.total_s(); }) - costs.begin();
    CandidateParams dec;
    dec.nest = NestFamily::Decode, dec.k_chunk = 64, dec.k_unroll = 4;
    for (const CandidateParams &p : {kept[best], dec}) {
        CAPTURE(p.to_string());
        GeluLayer k(GeluForm::Erf, dsl::NumericMode::Strict, make_schedule(p, host), host);
        for (auto [M, K, N] : std::vector<std::tuple<int, int, int>>{{1, 37, 29}, {9, 70, 101}, {33, 129, 64}}) {
            Halide::Runtime::Buffer<float> x(K, M), w(N, K), bias(N), y(N, M);
            fill_uniform(x, 1), fill_uniform(w, 2), fill_uniform(bias, 3);
            k.run(x, w, bias, y);
            const auto ref = gelu_mlp_reference(x.data(), w.data(), bias.data(), M, K, N, GeluForm::Erf);
            CHECK(compare(y.data(), ref.data(), (size_t)M * N).max_rel < 1e-4);
        }
    }
}

TEST_CASE("a model-only record is a miss for a measuring tuner, which replaces it with a measured one") {
    // What `tessel run`/`compile`/`demo` store without --tune is the model's unmeasured pick; a
    // later `tessel tune` must measure that shape, not take the guess as a hit.
    const dsl::Graph g = dsl::simplify_text(kGelu, "<test>").graph;
    const TuneRequest r = gelu_request(g);
    AnalyticalCostModel model(TargetModel::for_target(r.target));
    MemoryTuningCache cache;
    FakeMeasurer fake;
    fake.time_ms = [](const sched::ScheduleSpec &) { return 1.5; };
    TunerParams model_only;
    model_only.measure = false;
    const TuneResult guess = Tuner(model, &fake, &cache, model_only).tune(r);
    CHECK(guess.source == ScheduleProvenance::Model);
    REQUIRE(cache.lookup(Tuner::key_for(r)));
    CHECK(cache.lookup(Tuner::key_for(r))->measured_by == "model");
    CHECK(fake.calls == 0);

    // A model-only reader still takes the stored guess (nothing to measure with).
    CHECK(Tuner(model, &fake, &cache, model_only).tune(r).source == ScheduleProvenance::Database);

    TunerParams measuring;
    measuring.budget = 2;
    const TuneResult tuned = Tuner(model, &fake, &cache, measuring).tune(r);
    CHECK(tuned.source == ScheduleProvenance::Measured);
    CHECK(fake.calls > 0);
    CHECK(cache.lookup(Tuner::key_for(r))->measured_by == "measured");  // the measured record wins lookups
    const int calls = fake.calls;
    CHECK(Tuner(model, &fake, &cache, measuring).tune(r).source == ScheduleProvenance::Database);  // now a real hit
    CHECK(fake.calls == calls);
}

TEST_CASE("tuner: an imported record is checked before use; a wrong one is refused, once, and never used") {
    const dsl::Graph g = dsl::simplify_text(kGelu, "<test>").graph;
    const TuneRequest r = gelu_request(g);
    const Halide::Target host = parse_target("host");
    AnalyticalCostModel model(TargetModel::for_target(host));
    tessel::testing::TempDir tmp;
    TuningDatabase db(tmp.file("t.db"));
    auto import = [&](const sched::ScheduleSpec &s, double ms) {
        const TuningRecord rec{Tuner::key_for(r), sched::to_json(s), ms,         {ms},
                               "analytic-1",      kMeasured,         now_unix(), "from elsewhere"};
        db.import_json(nlohmann::json{{"format", "tessel-tuning-db"},
                                      {"schema_version", kTuningDatabaseSchemaVersion},
                                      {"records", nlohmann::json::array({rec.to_json()})}});
    };
    auto count = [&](const char *by) {
        int n = 0;
        for (const auto &rec : db.all()) n += rec.measured_by == by;
        return n;
    };
    TunerParams params;
    params.measure = false;  // as `tessel run` and `tessel compile` look schedules up
    Tuner tuner(model, nullptr, &db, params);

    // Bounds n to 8 where N = 512: it applies, and then every run fails Halide's bounds check.
    sched::ScheduleSpec wrong("imported_wrong_bound");
    wrong.bound("y", "n", 0, 8);
    import(wrong, 0.001);
    const TuneResult first = tuner.tune(r);
    CHECK(first.source == ScheduleProvenance::Model);
    CHECK(count(kRefused) == 1);
    const TuneResult again = tuner.tune(r);  // the model's pick, stored by the first call, now hits
    CHECK(again.source == ScheduleProvenance::Database);
    CHECK(again.schedule != wrong);
    CHECK(count(kRefused) == 1);  // not checked again

    // A correct import is verified once, then used as a hit.
    import(sched::library_schedule("cpu_blocked", host), 0.0005);
    const TuneResult verified = tuner.tune(r);
    CHECK(verified.source == ScheduleProvenance::Database);
    CHECK(verified.decision.find("verified here against the reference") != std::string::npos);
    CHECK(count(kVerified) == 1);
    tuner.tune(r);
    CHECK(count(kVerified) == 1);
}
