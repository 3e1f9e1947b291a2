// A fleet tuning job's payload (autoscheduler/JobPayload.h): written and read back unchanged; a
// bad field refused in Tessel's words with its path, the expected and the found kind.
#include <doctest/doctest.h>

#include "autoscheduler/JobPayload.h"

using nlohmann::json;
using tessel::autosched::JobPayloadError;
using tessel::autosched::TuneJobPayload;

namespace {

json good() {
    return {{"graph", "graph g {\n  %x = input : f32[M, 4]\n  output %x\n}\n"},
            {"file", "g.tsl"},
            {"symbols", {{"M", 3}}},
            {"group", "g0_x"},
            {"shape", "decode_1"},
            {"budget", 6},
            {"repeats", 5},
            {"timeout_seconds", 30.0},
            {"verify", true},
            {"measure", false}};
}

std::string refusal(const json &payload) {
    try {
        TuneJobPayload::from_json(payload);
    } catch (const JobPayloadError &e) {
        return e.what();
    }
    return "accepted";
}

}  // namespace

TEST_CASE("a job payload reads back to itself; the tuner's settings are optional") {
    const TuneJobPayload p = TuneJobPayload::from_json(good());
    CHECK(p.symbols.at("M") == 3);
    CHECK(p.budget == 6);
    CHECK(p.measure == false);
    CHECK(p.to_json() == good());
    json minimal = {{"graph", "g"}, {"group", "g0"}, {"symbols", json::object()}};
    const TuneJobPayload m = TuneJobPayload::from_json(minimal);
    CHECK(m.file == "job");
    CHECK(!m.budget);
    CHECK(TuneJobPayload::from_json(m.to_json()).to_json() == m.to_json());
}

TEST_CASE("a bad job payload is refused with the field's path, the expected and the found kind") {
    struct Case {
        const char *field;
        json value;  // null: the field removed
        const char *message;
    };
    const Case cases[] = {
        {"graph", nullptr, "payload.graph: missing"},
        {"graph", 7, "payload.graph: expected a string, found a number (7)"},
        {"symbols", json::array({1}), "payload.symbols: expected an object, found an array ([1])"},
        {"symbols", {{"M", "3"}}, "payload.symbols.M: expected an integer, found a string (\"3\")"},
        {"symbols", {{"M", 2.5}}, "payload.symbols.M: expected an integer, found a number (2.5)"},
        {"symbols", {{"M", 0}}, "payload.symbols.M: 0 is not a size (>= 1)"},
        {"symbols", {{"M\t", 1}}, "payload.symbols: \"M\\t\" is not a symbol name"},
        {"symbols", {{"M", 1099511627776LL}}, "accepted"},
        {"budget", "6", "payload.budget: expected an integer, found a string (\"6\")"},
        {"budget", 0, "payload.budget: 0 is below 1"},
        {"repeats", 4294967296LL, "payload.repeats: 4294967296 is out of range (-2147483648 to 2147483647)"},
        {"timeout_seconds", -1, "payload.timeout_seconds: -1 is not a positive time"},
        {"verify", 1, "payload.verify: expected a boolean, found a number (1)"},
        {"group", json::object(), "payload.group: expected a string, found an object ({})"},
    };
    for (const Case &c : cases) {
        json p = good();
        if (c.value.is_null())
            p.erase(c.field);
        else
            p[c.field] = c.value;
        INFO(c.field << " = " << c.value.dump());
        CHECK(refusal(p) == c.message);
    }
    CHECK(refusal(json::array()) == "payload: expected an object, found an array ([])");
}
