// A variant-costs job (driver/FleetVariantCosts.h): the payload `tessel lib --enqueue` writes reads
// back to the same request; a bad payload field or a bad stored result is refused in Tessel's
// words with its path, the expected and the found value, never the JSON library's message.
#include <doctest/doctest.h>

#include "algorithms/GeluMlp.h"
#include "autoscheduler/JobPayload.h"
#include "driver/FleetVariantCosts.h"
#include "driver/GeluLayer.h"
#include "schedules/Library.h"

#include <cmath>
#include <fstream>

using nlohmann::json;
using namespace tessel;

namespace {

struct Layer {
    dsl::Graph graph = gelu_mlp_layer(true, dsl::NumericMode::Fast);
    Halide::Target target = Halide::get_host_target();
    dsl::FusionGroup group = gelu_layer_group(graph, target);
    sched::ScheduleSpec schedule = sched::library_schedule("cpu_blocked", target);
};

VariantCostsJob good_job(const Layer &layer) {
    VariantMeasureOptions o;
    o.measure_on = layer.target;
    o.code_targets = {Halide::Target("x86-64-linux-avx2-fma-f16c-sse41")};
    o.compile_cost = CompileCost::AheadOfTime;
    o.repeats = 3;
    o.tolerance = 1e-4;
    return variant_costs_job(layer.graph, layer.group, layer.schedule, "M=1 calls=10\n", o);
}

template <typename F>
std::string refusal(F read) {
    try {
        read();
    } catch (const std::exception &e) {
        return e.what();
    }
    return "accepted";
}

}  // namespace

TEST_CASE("a variant-costs payload reads back to the request it was written from") {
    const Layer layer;
    const json payload = good_job(layer).payload;
    CHECK(is_variant_costs_payload(payload));
    // A "kind" that is not a string is another payload, not an exception (fuzz_job_row found it).
    CHECK_FALSE(is_variant_costs_payload(nlohmann::json{{"kind", {{"name", "g0_y"}}}}));
    CHECK_FALSE(is_variant_costs_payload(nlohmann::json{{"kind", 3}}));
    CHECK_FALSE(is_variant_costs_payload(nlohmann::json::array()));
    const VariantCostsRequest r = VariantCostsRequest::from_json(payload);
    CHECK(r.to_json() == payload);
    CHECK(r.group.name == layer.group.name);
    CHECK(r.group.kind == layer.group.kind);
    CHECK(r.schedule.name == "cpu_blocked");
    CHECK(r.schedule.variants.size() == layer.schedule.variants.size());
    CHECK(r.profile_text == "M=1 calls=10\n");
    CHECK(r.options.measure_on == layer.target);
    REQUIRE(r.options.code_targets.size() == 1);
    CHECK(r.options.code_targets[0] == Halide::Target("x86-64-linux-avx2-fma-f16c-sse41"));
    CHECK(r.options.compile_cost == CompileCost::AheadOfTime);
    CHECK(r.options.repeats == 3);
    CHECK(r.options.tolerance == doctest::Approx(1e-4));
}

TEST_CASE("a bad variant-costs payload is refused with the field's path and what was found") {
    const Layer layer;
    const json good = good_job(layer).payload;
    struct Case {
        const char *field;
        json value;  // null: the field removed
        const char *message;
    };
    const Case cases[] = {
        {"graph", nullptr, "payload.graph: missing"},
        {"graph", 7, "payload.graph: expected a string, found a number (7)"},
        {"group", json::array(), "payload.group: expected an object, found an array ([])"},
        {"profile", false, "payload.profile: expected a string, found a boolean (false)"},
        {"measure_on", "x86-64-linux-avx9", "payload.measure_on: \"x86-64-linux-avx9\" is not a Halide target"},
        {"measure_on", 1, "payload.measure_on: expected a string, found a number (1)"},
        {"code_targets", "host", "payload.code_targets: expected an array, found a string (\"host\")"},
        {"code_targets", json::array({"x86-64-linux", 3}), "payload.code_targets[1]: expected a string, found a number (3)"},
        {"code_targets", json::array({"arm-99"}), "payload.code_targets[0]: \"arm-99\" is not a Halide target"},
        {"compile_cost", "both", "payload.compile_cost: \"both\" is neither \"aot\" nor \"jit\""},
        {"repeats", 0, "payload.repeats: 0 is below 1"},
        {"repeats", 2.5, "payload.repeats: expected an integer, found a number (2.5)"},
        {"repeats", 4294967296LL, "payload.repeats: 4294967296 is out of range (-2147483648 to 2147483647)"},
        {"tolerance", -1.0, "payload.tolerance: -1.0 is not a positive tolerance"},
        {"tolerance", "1e-3", "payload.tolerance: expected a number, found a string (\"1e-3\")"},
    };
    for (const Case &c : cases) {
        CAPTURE(c.field);
        json p = good;
        if (c.value.is_null())
            p.erase(c.field);
        else
            p[c.field] = c.value;
        CHECK(refusal([&] { VariantCostsRequest::from_json(p); }) == c.message);
    }
    json bad_group = good;
    bad_group["group"]["nodes"] = json::array({"%y", 7});
    CHECK(refusal([&] { VariantCostsRequest::from_json(bad_group); }) ==
          "payload.group.nodes[1]: expected a string, found a number (7)");
    bad_group["group"] = good["group"];
    bad_group["group"]["kind"] = "sideways";
    CHECK(refusal([&] {
              VariantCostsRequest::from_json(bad_group);
          }).rfind("payload.group.kind: unknown group kind \"sideways\"", 0) == 0);
}

TEST_CASE("stored variant costs read back; a result that is not a cost is refused with its path") {
    const Layer layer;
    const std::string prefix = layer.group.name;
    GroupVariantCosts costs;
    for (size_t i = 0; i < layer.schedule.variants.size(); i++) {
        autosched::VariantCosts v;
        v.name = prefix + "_v" + std::to_string(i + 1);
        v.compile_seconds = 0.5;
        v.code_bytes = 4096;
        v.seconds_per_call[{{"M", 1}}] = 1e-3 * double(i + 1);
        costs.candidates.push_back(v);
    }
    costs.fallback.name = prefix + " fallback";
    costs.fallback.seconds_per_call[{{"M", 1}}] = 2e-3;
    const json doc = costs_to_json(costs);
    const GroupVariantCosts back = costs_from_json(doc, layer.schedule, prefix);
    REQUIRE(back.candidates.size() == costs.candidates.size());
    CHECK(back.candidates[1].seconds_per_call.at({{"M", 1}}) == doctest::Approx(2e-3));
    CHECK(back.candidates[0].guards.size() == layer.schedule.variants[0].guards.size());
    CHECK(costs_to_json(back) == doc);

    auto read = [&](const json &d) { return refusal([&] { costs_from_json(d, layer.schedule, prefix); }); };
    json d = doc;
    d.erase("fallback");
    CHECK(read(d) == "variant costs.fallback: missing");
    d = doc;
    d["candidates"].erase(0);
    CHECK(read(d) == "variant costs.candidates: " + std::to_string(costs.candidates.size() - 1) + " variants, the schedule has " +
                         std::to_string(costs.candidates.size()));
    d = doc;
    d["candidates"][0]["compile_seconds"] = -1.0;
    CHECK(read(d) == "variant costs.candidates[0].compile_seconds: -1.0 is not a time");
    d = doc;
    d["candidates"][0]["code_bytes"] = "4 KiB";
    CHECK(read(d) == "variant costs.candidates[0].code_bytes: expected an integer, found a string (\"4 KiB\")");
    d = doc;
    d["candidates"][1]["name"] = "other_v2";
    CHECK(read(d) == "variant costs.candidates[1].name: the costs are for \"other_v2\", not \"" + prefix + "_v2\"");
    d = doc;
    d["candidates"][0]["seconds_per_call"][0][1] = nullptr;  // how nlohmann writes NaN
    CHECK(read(d) == "variant costs.candidates[0].seconds_per_call[0][1]: expected a number, found null (null)");
    d = doc;
    d["candidates"][0]["seconds_per_call"][0][0] = {{"M", 0}};
    CHECK(read(d) == "variant costs.candidates[0].seconds_per_call[0][0].M: 0 is not a size (>= 1)");
    d = doc;
    d["fallback"]["seconds_per_call"] = json::array({json::array({1})});
    CHECK(read(d) == "variant costs.fallback.seconds_per_call[0]: expected [shape, seconds], found [1]");
}

TEST_CASE("fuzz_job_row's variant-costs seed is a payload the reader accepts") {
    std::ifstream f(std::string(TESSEL_SOURCE_DIR) + "/fuzz/seeds_job_row/variant_costs.json");
    const json row = json::parse(f);
    const VariantCostsRequest r = VariantCostsRequest::from_json(row.at("payload"));
    CHECK(r.options.code_targets.size() == 2);
    CHECK(VariantCostsRequest::from_json(r.to_json()).to_json() == r.to_json());
}
