/** \file
 * Measurer: isolation (a crash, a hang and a Halide error in a candidate are recorded, the
 * tuner carries on), the JSON protocol, the progress bar, and Halide's own autoschedulers
 * against the float64 reference. Shapes are small and timeouts short so the test stays fast.
 */
#include "autoscheduler/Measurer.h"

#include "algorithms/GeluMlp.h"
#include "baselines/GeluReference.h"
#include "codegen/Compile.h"
#include "driver/GeluLayer.h"
#include "driver/HalideAutoschedulers.h"
#include "dsl/Simplify.h"
#include "dsl/passes/Fusion.h"
#include "schedules/Library.h"
#include "support/Random.h"

#include "tests/GeluMlpText.h"

#include <doctest/doctest.h>

#include <sstream>

using namespace tessel;
using namespace tessel::autosched;

namespace {

const char *const kGraph = tessel::testing::kGeluMlpText;

MeasureTask small_task() {
    const dsl::Graph g = dsl::simplify_text(kGraph, "measurer_test.tsl").graph;
    MeasureTask t = make_measure_task(g, dsl::plan_fusion(g).groups.at(0), {{"M", 8}, {"K", 64}, {"N", 96}}, "host");
    t.repeats = 3;
    t.warmup = 1;
    t.timeout_seconds = 20;  // JIT of a blocked schedule takes a few seconds on 2 busy cores
    return t;
}

sched::ScheduleSpec good(const std::string &name) { return tessel::testing::small_gelu_schedule(name); }

}  // namespace

TEST_CASE("isolated measurer: crash and hang are recorded, good candidates still measured") {
    IsolatedMeasurer m;
    MeasureTask task = small_task();
    task.fault_by_schedule = {{"crashes", Fault::Crash}, {"hangs", Fault::Hang}};
    // The hang ends at the deadline, so keep it short, but well above a good candidate's compile
    // (about 0.5 s here, more when ctest runs tests in parallel).
    task.timeout_seconds = 5;
    std::vector<std::string> lines;
    std::vector<Measurement> r = m.measure(
        task, {good("first"), good("crashes"), good("hangs"), good("last")},
        [&](int done, int total, double best, double eta) { lines.push_back(format_progress(done, total, best, eta, 4)); });
    REQUIRE(r.size() == 4);
    CHECK(r[0].status == Status::Ok);
    CHECK(r[1].status == Status::Crash);
    CHECK(r[1].message.find("signal 6") != std::string::npos);
    CHECK(r[2].status == Status::Timeout);
    CHECK(r[3].status == Status::Ok);
    for (int i : {0, 3}) {
        CHECK(r[i].median_ms > 0);
        CHECK(r[i].samples.size() == 3);
        CHECK(r[i].compile_seconds > 0);
        MESSAGE("good candidate " << i << ": compile " << r[i].compile_seconds << " s, median " << r[i].median_ms << " ms");
    }
    REQUIRE(lines.size() == 4);
    CHECK(lines[3].rfind("[####] 4/4 best ", 0) == 0);
}

TEST_CASE("interleaved measurement: candidates timed in turn in one child, samples paired by round") {
    IsolatedMeasurer m;
    MeasureTask task = small_task();
    task.repeats = 6;
    task.max_rounds = 11;  // 6, then one more batch of 5 at most
    task.fault_by_schedule = {{"wrong", Fault::WrongResult}};
    const std::vector<sched::ScheduleSpec> candidates = {good("a"), good("wrong"), good("b")};
    const std::vector<Measurement> r = m.measure_interleaved(task, candidates);
    REQUIRE(r.size() == 3);
    INFO(r[0].message << " | " << r[1].message << " | " << r[2].message);
    CHECK(r[0].ok());
    CHECK(r[2].ok());
    CHECK(r[1].status == Status::WrongResult);
    CHECK(r[0].samples.size() == r[2].samples.size());
    CHECK((r[0].samples.size() == 6 || r[0].samples.size() == 11));
    // The same code path in this process.
    InProcessMeasurer in;
    const auto local = in.measure_interleaved(task, {good("a"), good("b")});
    CHECK((local[0].ok() && local[1].ok()));
    CHECK(local[0].samples.size() == local[1].samples.size());
}

TEST_CASE("isolated measurer: schedule errors and Halide errors are CompileError with the message") {
    IsolatedMeasurer m;
    MeasureTask task = small_task();
    sched::ScheduleSpec bad("bad_var");
    bad.vectorize(sched::StageRef{"y"}, "no_such_loop");
    task.fault_by_schedule = {{"halide_rejects", Fault::HalideError}};
    std::vector<Measurement> r = m.measure(task, {bad, good("halide_rejects")});
    REQUIRE(r.size() == 2);
    CHECK(r[0].status == Status::CompileError);
    CHECK(r[0].message.find("bad_var") != std::string::npos);
    CHECK(r[0].message.find("no_such_loop") != std::string::npos);
    CHECK(r[1].status == Status::CompileError);
    CHECK(r[1].message.find("Halide") != std::string::npos);
    MESSAGE("schedule error: " << r[0].message);
    MESSAGE("Halide error:   " << r[1].message);
}

TEST_CASE("measurement of a malformed task is a CompileError, not an exception") {
    MeasureTask task = small_task();
    task.group.nodes.push_back("no_such_value");
    Measurement r = run_measurement(task, good("g"));
    CHECK(r.status == Status::CompileError);
    CHECK(r.message.find("no_such_value") != std::string::npos);
    task = small_task();
    task.symbols.erase("N");
    CHECK(run_measurement(task, good("g")).status == Status::CompileError);
}

TEST_CASE("in-process measurer runs the same path") {
    InProcessMeasurer m;
    std::vector<Measurement> r = m.measure(small_task(), {good("a")});
    REQUIRE(r.size() == 1);
    CHECK(r[0].status == Status::Ok);
    CHECK(r[0].median_ms > 0);
}

TEST_CASE("task and measurement JSON round-trip") {
    MeasureTask t = small_task();
    t.fault_by_schedule = {{"x", Fault::Hang}};
    const MeasureTask u = measure_task_from_json(nlohmann::json::parse(to_json(t).dump()));
    CHECK(u.graph_text == t.graph_text);
    CHECK(u.symbols == t.symbols);
    CHECK(u.repeats == t.repeats);
    CHECK(u.fault_for("x") == Fault::Hang);
    CHECK(u.fault_for("y") == Fault::None);
    Measurement m{Status::Timeout, 1.5, {1.0, 1.5, 2.0}, "slow", 0.25};
    const Measurement n = measurement_from_json(to_json(m));
    CHECK(n.status == Status::Timeout);
    CHECK(n.samples == m.samples);
    CHECK(n.message == "slow");
    CHECK_THROWS_AS(parse_fault("explode"), std::invalid_argument);
}

TEST_CASE("progress bar") {
    struct Row {
        int done, total;
        double best, eta;
        const char *want;
    };
    const Row rows[] = {
        {0, 10, 0, 0, "[----------] 0/10 best - eta 0 s"},
        {5, 10, 1.234, 12.4, "[#####-----] 5/10 best 1.23 ms eta 12 s"},
        {10, 10, 0.5, 0, "[##########] 10/10 best 0.50 ms eta 0 s"},
    };
    for (const Row &r : rows) CHECK(format_progress(r.done, r.total, r.best, r.eta, 10) == r.want);
    std::ostringstream out;
    ProgressFn bar = progress_bar(out, 10);
    bar(1, 2, 2.0, 3.0);
    bar(2, 2, 1.0, 0.0);
    CHECK(out.str().find("\r[#####-----] 1/2") == 0);
    CHECK(out.str().back() == '\n');
}

TEST_CASE("Halide's autoschedulers: plugins load, and the result matches the float64 reference") {
    const Halide::Target target = parse_target("host");
    const int M = 7, K = 37, N = 45;  // primes and a non-multiple of every vector width
    const dsl::Graph g = gelu_mlp_layer(true, dsl::NumericMode::Fast);
    const dsl::FusionGroup group = gelu_layer_group(g, target);
    const autosched::Symbols symbols{{"M", M}, {"K", K}, {"N", N}};
    Halide::Runtime::Buffer<float> x(K, M), w(N, K), bias(N), y(N, M);
    fill_uniform(x, 1);
    fill_uniform(w, 2);
    fill_uniform(bias, 3);
    const std::vector<double> want = gelu_mlp_reference(x.data(), w.data(), bias.data(), M, K, N, GeluForm::Tanh);
    int matched = 0;
    for (const std::string name : {"Mullapudi2016", "Li2018"}) {
        CAPTURE(name);
        HalideScheduledGroup k = schedule_group_with_halide(name, g, group, symbols, target);
        if (!k.ok) {
            MESSAGE(name << " could not run: " << k.message);
            continue;
        }
        REQUIRE(k.callable(x, w, bias, y) == 0);  // the lowering binds x, w, bias, then y
        const ErrorStats e = compare(y.data(), want.data(), want.size());
        CHECK(e.max_rel < 1e-4);
        if (e.max_rel < 1e-4) matched++;
        CHECK(k.search_seconds >= 0);
    }
    CHECK(matched >= 1);
    // Anderson2021 is a GPU autoscheduler; on a CPU target it says so instead of failing obscurely.
    HalideScheduledGroup a = schedule_group_with_halide("Anderson2021", g, group, symbols, target);
    CHECK_FALSE(a.ok);
    CHECK(a.message.find("GPU") != std::string::npos);
}

TEST_CASE("--compare: a labelled schedule against the library's, with a per-round paired verdict") {
    const Halide::Target target = parse_target("host");
    const dsl::Graph g = gelu_mlp_layer(true, dsl::NumericMode::Fast);
    const dsl::FusionGroup group = gelu_layer_group(g, target);
    CompareOptions o;
    o.target = target;
    o.repeats = 6;
    o.autoschedulers = {"Mullapudi2016"};
    o.tessel_specs = {{"tuned", sched::library_schedule("cpu_blocked", target)}};  // the library's, labelled
    std::ostringstream out;
    compare_autoschedulers(g, group, {{{"M", 9}, {"K", 37}, {"N", 50}}}, out, o);
    const std::string text = out.str();
    INFO(text);
    CHECK(text.find("tessel:tuned vs tessel:cpu_blocked: ") != std::string::npos);
    CHECK(text.find(" of 6 rounds, p = ") != std::string::npos);
    CHECK(text.find("Mullapudi2016 vs") == std::string::npos);  // only labelled Tessel schedules get a verdict
}
