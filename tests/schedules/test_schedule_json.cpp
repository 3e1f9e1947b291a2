// Every library schedule survives print -> JSON -> parse unchanged; malformed JSON is refused
// with the step and field named.
#include "codegen/Compile.h"
#include "schedules/Library.h"
#include "schedules/ScheduleJson.h"

#include <doctest/doctest.h>

using namespace tessel;
using namespace tessel::sched;

TEST_CASE("JSON round trip of every library schedule, for AVX2, AVX-512 and CUDA targets") {
    for (const char *t : {"host", "x86-64-linux-avx2-fma", "host-cuda"}) {
        const Halide::Target target = parse_target(t);
        for (const auto &e : schedule_library()) {
            CAPTURE(e.name);
            const ScheduleSpec s = e.group_generic() ? e.make_for_group(example_group_shape(e.group), target) : e.make(target);
            const ScheduleSpec back = schedule_from_json(nlohmann::json::parse(to_json(s).dump()));
            CHECK(back == s);
            CHECK(to_string(back) == to_string(s));
        }
    }
}

TEST_CASE("guarded variants round-trip and are picked by shape") {
    ScheduleSpec s("guarded");
    s.split({"y"}, "n", "no", "ni", 16).vectorize({"y"}, "ni");
    s.variants.push_back({{{"M", GuardOp::Eq, 1}}, {Parallel{{"y"}, "n"}}});
    s.variants.push_back({{{"N", GuardOp::Divisible, 16}, {"M", GuardOp::Ge, 8}}, {Unroll{{"y"}, "m"}}});
    CHECK(schedule_from_json(to_json(s)) == s);
    CHECK(s.pick_variant({{"M", 1}, {"N", 3}}) == 0);
    CHECK(s.pick_variant({{"M", 9}, {"N", 32}}) == 1);
    CHECK(s.pick_variant({{"M", 9}, {"N", 33}}) == 2);  // fallback
    CHECK(s.pick_variant({{"M", 4}, {"N", 32}}) == 2);
}

TEST_CASE("schedule text names each directive as the Halide call it becomes") {
    ScheduleSpec s("t");
    s.split({"matmul", 0}, "k", "ko", "ki", 4, Tail::GuardWithIf).compute_at("matmul", "y", "no");
    CHECK(to_string(s) ==
          "schedule t (cpu)\n"
          "  matmul.update(0).split(k, ko, ki, 4, guard_with_if);\n"
          "  matmul.compute_at(y, no);\n");
}

TEST_CASE("compute_with prints as Halide's call and round-trips through JSON") {
    ScheduleSpec s("t");
    s.compute_with({"lse"}, {"y"}, "mo_b0").compute_with({"a", 0}, {"b", 1}, "x");
    CHECK(to_string(s) ==
          "schedule t (cpu)\n"
          "  lse.compute_with(y, mo_b0);\n"
          "  a.update(0).compute_with(b.update(1), x);\n");
    CHECK(schedule_from_json(nlohmann::json::parse(to_json(s).dump())) == s);
}

TEST_CASE("malformed schedule JSON is refused with the step and the field") {
    using nlohmann::json;
    CHECK_THROWS_WITH_AS(schedule_from_json(json::parse(R"({"name":"a","steps":[{"op":"twist"}]})")),
                         doctest::Contains("step 1: unknown op 'twist'"), ScheduleJsonError);
    CHECK_THROWS_WITH_AS(
        schedule_from_json(json::parse(R"({"name":"a","steps":[{"op":"split","stage":{"func":"y","update":-1},"var":"n"}]})")),
        doctest::Contains("step 1 (split)"), ScheduleJsonError);
    CHECK_THROWS_WITH_AS(schedule_from_json(json::parse(R"({"name":"a"})")), doctest::Contains("missing \"steps\""),
                         ScheduleJsonError);
    CHECK_THROWS_WITH_AS(
        schedule_from_json(
            json::parse(R"({"name":"a","steps":[],"variants":[{"guards":[{"extent":"M","op":"<","value":2}],"steps":[]}]})")),
        doctest::Contains("guard operator '<'"), ScheduleJsonError);
}

TEST_CASE("a field of the wrong JSON type is named by its path, with the expected and the found type") {
    using nlohmann::json;
    const std::string split = R"({"op": "split", "stage": {"func": "y", "update": -1}, "var": "n", "outer": "no", )"
                              R"("inner": "ni", "tail": "auto", "factor": )";
    struct Row {
        std::string text, expected;
    } rows[] = {
        {R"({"name": "t", "steps": [{"op": "compute_root", "func": "matmul"}, )" + split + R"("8"}]})",
         "schedule 't' step 2 (split): steps[1].factor: expected a number, found a string (\"8\")"},
        {R"({"name": "t", "steps": [)" + split + R"(8, "var": 3}]})", "steps[0].var: expected a string, found a number (3)"},
        {R"({"name": "t", "steps": [{"op": "reorder", "stage": {"func": "y", "update": -1}, "vars": ["ni", 2]}]})",
         "steps[0].vars[1]: expected a string, found a number (2)"},
        {R"({"name": "t", "steps": [], "variants": [{"guards": [], "steps": [)" + split + R"([8]}]}]})",
         "schedule 't' variant 1 step 1 (split): variants[0].steps[0].factor: expected a number, found an array ([8])"},
    };
    for (const Row &r : rows) {
        CAPTURE(r.text);
        CHECK_THROWS_WITH_AS(schedule_from_json(json::parse(r.text)), doctest::Contains(r.expected.c_str()), ScheduleJsonError);
    }
}

TEST_CASE("the example in Schedule.h compiles and prints as documented") {
    const StageRef y{"y"};
    ScheduleSpec s("cpu_tiled");
    s.split(y, "n", "no", "ni", 16)
        .split(y, "m", "mo", "mi", 8)
        .reorder(y, {"ni", "mi", "no", "mo"})
        .vectorize(y, "ni")
        .parallel(y, "mo")
        .compute_at("matmul", "y", "no");
    CHECK(s.steps.size() == 6);
    CHECK(s.group == dsl::GroupKind::MatmulEpilogue);
    CHECK(to_string(s).find("y.vectorize(ni);") != std::string::npos);
}

TEST_CASE("a schedule's group kind round-trips through JSON; an unknown kind is refused") {
    ScheduleSpec s("rows");
    s.group = dsl::GroupKind::Reduction;
    CHECK(schedule_from_json(to_json(s)).group == dsl::GroupKind::Reduction);
    nlohmann::json j = to_json(s);
    j["group"] = "convolution";
    CHECK_THROWS_WITH_AS(schedule_from_json(j), doctest::Contains("unknown fusion group kind 'convolution'"), ScheduleJsonError);
}

TEST_CASE("JSON numbers are range-checked, never narrowed or truncated") {
    const std::string split =
        R"({"op": "split", "stage": {"func": "y", "update": -1}, "var": "n", "outer": "no", "inner": "ni", "tail": "auto", "factor": )";
    struct Row {
        const char *factor, *expected;
    } rows[] = {
        {"1099511627776", "schedule 'bad' step 1 (split): field \"factor\" = 1099511627776 is out of range (at most 2147483647)"},
        {"18446744073709551615", "field \"factor\" = 18446744073709551615 is out of range (at most 2147483647)"},
        {"-2147483649", "field \"factor\" = -2147483649 is out of range (-2147483648 to 2147483647)"},
        {"2.5", "schedule 'bad' step 1 (split): field \"factor\" = 2.5 is not an integer"},
        {"1e3", "field \"factor\" = 1000.0 is not an integer"},
    };
    for (const Row &r : rows) {
        CAPTURE(r.factor);
        const auto j = nlohmann::json::parse(std::string(R"({"name": "bad", "steps": [)") + split + r.factor + "}]}");
        CHECK_THROWS_WITH_AS(schedule_from_json(j), doctest::Contains(r.expected), ScheduleJsonError);
    }
    // In range: accepted as written, negative values included (ApplySchedule refuses a factor <= 0).
    const auto ok = nlohmann::json::parse(std::string(R"({"name": "ok", "steps": [)") + split + "-8}]}");
    CHECK(std::get<Split>(schedule_from_json(ok).steps[0]).factor == -8);
    // Guard values are longs: 2^40 fits, 2^64 does not.
    const auto guard = [](const std::string &v) {
        return nlohmann::json::parse(
            R"({"name": "g", "steps": [], "variants": [{"guards": [{"extent": "M", "op": "==", "value": )" + v +
            R"(}], "steps": []}]})");
    };
    CHECK(schedule_from_json(guard("1099511627776")).variants[0].guards[0].value == 1099511627776L);
    CHECK_THROWS_WITH_AS(schedule_from_json(guard("18446744073709551616")),
                         doctest::Contains("schedule 'g' variant 1 guards: field \"value\""), ScheduleJsonError);
}

TEST_CASE("schedule JSON: messages escape the document's strings (fuzz_schedule_json: a tab in a name)") {
    nlohmann::json j = {{"name", "tuned\t\x1b[31m"}, {"steps", {{{"op", "frob"}}}}};
    try {
        tessel::sched::schedule_from_json(j);
        FAIL("accepted");
    } catch (const tessel::sched::ScheduleJsonError &e) {
        const std::string what = e.what();
        CHECK(what.find("schedule 'tuned\\t\\x1b[31m'") != std::string::npos);
        for (char c : what) CHECK((unsigned char)c >= 0x20);
    }
}
