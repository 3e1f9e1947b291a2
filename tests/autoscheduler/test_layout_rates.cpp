// Layout rates per machine: the stored form (round trip, every malformed document refused with
// what is wrong), the SQLite store (per machine and ISA, replaced, read-only files from before
// the table), and plan() choosing a weight's layout by the rates stored for this machine, the
// defaults when there are none, and never by rates that do not parse.
#include <doctest/doctest.h>

#include "autoscheduler/MachineNumbers.h"
#include "autoscheduler/TuningDatabase.h"
#include "compiler/Plan.h"
#include "dsl/ir/Parser.h"

#include "tests/TempDir.h"

#include <sqlite3.h>

using namespace tessel;
using namespace tessel::autosched;
using nlohmann::json;
using tessel::testing::TempDir;

namespace {

/** Distinct values everywhere, so a swapped index shows. */
dsl::LayoutRates sample_rates() {
    dsl::LayoutRates r;
    double v = 0.5;
    for (auto &kind : r.panel_rate)
        for (double &x : kind) x = (v += 0.125);
    for (auto &kind : r.read_cost)
        for (double &x : kind) x = (v += 0.25);
    r.conversion_cost = 3.75;
    return r;
}

bool same_rates(const dsl::LayoutRates &a, const dsl::LayoutRates &b) {
    return layout_rates_to_json(a) == layout_rates_to_json(b);
}

/** A bf16 weight read per call by x @ w at decode sizes: panels or row-major, by the rates. */
const char *kDecodeBf16 = R"(graph decode_bf16 mode=fast {
  %x = input : f32[M, K]
  %w = weight : f32[K, N]
  %w_bf16 = cast(%w) : bf16[K, N]
  %w_wide = cast(%w_bf16) : f32[K, N]
  %y = matmul(%x, %w_wide)
  output %y
})";

/** The layout plan() gives %w_bf16 at M = 4 with the database `db`. */
dsl::LayoutPlan plan_layouts(const std::string &db) {
    PlanOptions o;
    o.symbols = {{"M", 4}, {"K", 1024}, {"N", 1024}};
    o.schedules.db = db;
    o.schedules.autoschedule = false;
    return plan(dsl::parse(kDecodeBf16, "decode_bf16.tsl"), Halide::get_host_target(), o).layouts;
}

std::string chosen_layout(const dsl::LayoutPlan &p) {
    REQUIRE(p.regions.size() == 1);
    const dsl::Layout &l = p.regions[0].candidates[p.regions[0].chosen].layout;
    return l.empty() ? "row_major" : dsl::to_string(l);
}

}  // namespace

TEST_CASE("layout rates: the stored form round-trips and says where the rates come from") {
    const dsl::LayoutRates r = sample_rates();
    const json j = layout_rates_to_json(r);
    CHECK(j["panel_rate"]["narrow"][1] == r.panel_rate[dsl::LayoutRates::Narrow][1]);
    CHECK(j["read_cost"]["softmax"][1] == r.read_cost[dsl::LayoutRates::Softmax][1]);
    const dsl::LayoutRates back = layout_rates_from_json(j, "avx512", 1796428800);  // 2026-12-05
    CHECK(same_rates(back, r));
    CHECK(back.source == "measured on this machine by `tessel db probe` (avx512, 2026-12-05)");
    CHECK(dsl::LayoutRates::defaults().invalid_reason().empty());
    CHECK(dsl::LayoutRates::defaults().source.find("defaults") == 0);
}

TEST_CASE("layout rates: a malformed document is refused, naming what is wrong") {
    const json good = layout_rates_to_json(sample_rates());
    struct Case {
        const char *what;
        std::function<void(json &)> damage;
        const char *message;
    };
    const Case cases[] = {
        {"not an object", [](json &j) { j = json::array(); }, "expected panel_rate, read_cost and conversion_cost"},
        {"no conversion cost", [](json &j) { j.erase("conversion_cost"); }, "expected panel_rate"},
        {"a family missing", [](json &j) { j["panel_rate"]["wide"].erase(3); }, "'panel_rate.wide' is not a list of 4 numbers"},
        {"a width missing", [](json &j) { j["panel_rate"].erase("narrow"); }, "'panel_rate.narrow' is not a list of 4"},
        {"a string rate", [](json &j) { j["read_cost"]["reduction"][0] = "fast"; }, "'read_cost.reduction' holds \"fast\""},
        {"a zero rate", [](json &j) { j["panel_rate"]["narrow"][2] = 0.0; }, "panel rate [1][2] is 0"},
        {"a negative cost", [](json &j) { j["read_cost"]["softmax"][1] = -2.0; }, "read cost [2][1] is -2"},
        {"a null conversion", [](json &j) { j["conversion_cost"] = nullptr; }, "expected panel_rate"},
    };
    for (const Case &c : cases) {
        CAPTURE(c.what);
        json j = good;
        c.damage(j);
        CHECK_THROWS_WITH_AS(layout_rates_from_json(j, "avx2", 0), doctest::Contains(c.message), std::invalid_argument);
    }
}

TEST_CASE("layout rates: stored per machine and ISA in the SQLite file, replaced, absent from older files") {
    TempDir tmp;
    const std::string path = tmp.file("rates.db");
    const dsl::LayoutRates r = sample_rates();
    {
        TuningDatabase db(path);
        CHECK_FALSE(db.layout_rates("machine A", "avx512"));
        db.store_layout_rates("machine A", "avx512", r, 1796515200);
        dsl::LayoutRates other = r;
        other.conversion_cost = 9.5;
        db.store_layout_rates("machine A", "avx2", other, 1796515200);
    }
    TuningDatabase db(path, 60000, TuningStore::Access::ReadOnly);
    REQUIRE(db.layout_rates("machine A", "avx512"));
    CHECK(same_rates(*db.layout_rates("machine A", "avx512"), r));
    CHECK(db.layout_rates("machine A", "avx2")->conversion_cost == 9.5);
    CHECK_FALSE(db.layout_rates("machine B", "avx512"));
    CHECK_THROWS_AS(db.store_layout_rates("machine A", "avx512", r, 0), TuningDatabaseError);

    // A file from before the table, opened read-only: no rates, no error.
    const std::string old = tmp.file("old.db");
    { TuningDatabase make(old); }
    sqlite3 *raw = nullptr;
    REQUIRE(sqlite3_open(old.c_str(), &raw) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw, "DROP TABLE layout_rates", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(raw);
    TuningDatabase before(old, 60000, TuningStore::Access::ReadOnly);
    CHECK_FALSE(before.layout_rates("machine A", "avx512"));
}

TEST_CASE("plan: a weight's layout follows the rates stored for this machine") {
    const Halide::Target host = Halide::get_host_target();
    const std::string machine = machine_identity(), isa = probe_isa(host);
    TempDir tmp;
    const std::string path = tmp.file("plan.db");
    auto store = [&](double narrow_decode_rate) {
        dsl::LayoutRates r = dsl::LayoutRates::defaults();
        for (double &f : r.panel_rate[dsl::LayoutRates::Narrow]) f = narrow_decode_rate;
        TuningDatabase(path).store_layout_rates(machine, isa, r, 1796515200);
    };

    // No database, or none for this machine: the defaults (bf16 panels 1.16x faster at decode).
    const dsl::LayoutPlan none = plan_layouts(tmp.file("missing.db"));
    CHECK(none.rates.find("defaults") == 0);
    CHECK(chosen_layout(none).find("panels") == 0);
    TuningDatabase(path).store_layout_rates("another machine", isa, sample_rates(), 0);
    CHECK(plan_layouts(path).rates.find("defaults") == 0);

    store(0.8);  // panels slower on this machine: row-major
    const dsl::LayoutPlan slow = plan_layouts(path);
    CHECK(slow.rates.find("measured on this machine") == 0);
    CHECK(chosen_layout(slow) == "row_major");
    CHECK(slow.regions[0].candidates[1].per_call_bytes > slow.regions[0].candidates[0].per_call_bytes);

    store(1.5);  // panels faster: panels
    CHECK(chosen_layout(plan_layouts(path)).find("panels") == 0);

    // Given rates win over the stored ones.
    PlanOptions o;
    o.symbols = {{"M", 4}, {"K", 1024}, {"N", 1024}};
    o.schedules.db = path;
    o.schedules.autoschedule = false;
    o.layout_rates = dsl::LayoutRates::defaults();
    for (double &f : o.layout_rates->panel_rate[dsl::LayoutRates::Narrow]) f = 0.5;
    CHECK(chosen_layout(plan(dsl::parse(kDecodeBf16, "decode_bf16.tsl"), host, o).layouts) == "row_major");

    // Rates that do not parse are never used: the defaults, and the plan says why.
    sqlite3 *raw = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw, "UPDATE layout_rates SET rates_json = '{\"panel_rate\": 1}'", nullptr, nullptr, nullptr) ==
            SQLITE_OK);
    sqlite3_close(raw);
    const dsl::LayoutPlan broken = plan_layouts(path);
    CHECK(broken.rates.find("defaults") == 0);
    CHECK(broken.rates.find("are unusable") != std::string::npos);
    CHECK(chosen_layout(broken).find("panels") == 0);
}
