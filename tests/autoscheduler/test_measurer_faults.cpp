/** \file
 * The measuring child under faults (autoscheduler/Measurer.h): every fault a candidate can
 * have is a recorded failure of that candidate and the good candidates around it are still
 * measured — crash, hang, memory exhaustion under the child's RLIMIT_AS, wrong results (caught by
 * the child's reference check), negative and NaN times, a non-zero exit status after a valid
 * answer, an output flood (stopped at the cap) — and a child never outlives its parent, even one
 * killed with SIGKILL. The tuner, given such measurements, never picks them and its database
 * commit succeeds. Faults are the test hooks of MeasureTask.h, injected in the real child.
 */
#include "autoscheduler/Measurer.h"
#include "autoscheduler/Tuner.h"
#include "autoscheduler/TuningDatabase.h"
#include "codegen/Compile.h"
#include "dsl/Simplify.h"
#include "dsl/passes/Fusion.h"
#include "support/Clock.h"

#include "tests/TempDir.h"

#include "tests/GeluMlpText.h"

#include <doctest/doctest.h>

#include <algorithm>

#include <dirent.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <thread>

using namespace tessel;
using namespace tessel::autosched;

namespace {

const char *const kGraph = tessel::testing::kGeluMlpText;

const dsl::Graph &graph() {
    static const dsl::Graph g = dsl::simplify_text(kGraph, "measurer_faults.tsl").graph;
    return g;
}

MeasureTask small_task() {
    MeasureTask t = make_measure_task(graph(), dsl::plan_fusion(graph()).groups.at(0), {{"M", 5}, {"K", 37}, {"N", 45}}, "host");
    t.repeats = 2;
    t.warmup = 0;
    t.timeout_seconds = 30;  // compile of candidate and reference, on 2 busy cores
    t.memory_limit_bytes = int64_t(4) << 30;
    return t;
}

sched::ScheduleSpec good(const std::string &name) { return tessel::testing::small_gelu_schedule(name); }

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

/** Children of `parent` (scanning /proc/<pid>/stat). */
std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    DIR *d = opendir("/proc");
    if (!d) return out;
    while (dirent *e = readdir(d)) {
        const pid_t pid = (pid_t)std::atoi(e->d_name);
        if (pid <= 0) continue;
        std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
        std::string line;
        std::getline(f, line);
        const size_t close = line.rfind(')');
        if (close == std::string::npos) continue;
        char state = 0;
        int ppid = 0;
        if (sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) out.push_back(pid);
    }
    closedir(d);
    return out;
}

}  // namespace

TEST_CASE("faulty children: each fault is a recorded failure and the good candidates are still measured") {
    IsolatedMeasurer m;
    MeasureTask task = small_task();
    struct Row {
        const char *name;
        Fault fault;
        Status want;
        const char *message;  ///< substring of the recorded message
    };
    const Row rows[] = {
        {"good_first", Fault::None, Status::Ok, ""},
        {"crashes", Fault::Crash, Status::Crash, "signal 6"},
        {"exhausts_memory", Fault::OutOfMemory, Status::Crash, "out of memory"},
        {"wrong", Fault::WrongResult, Status::WrongResult, "max relative error"},
        {"negative", Fault::NegativeTime, Status::InvalidResult, "finite and non-negative"},
        {"nan", Fault::NanTime, Status::InvalidResult, "finite and non-negative"},
        {"bad_exit", Fault::BadExit, Status::InvalidResult, "exited with status 3"},
        {"floods", Fault::Flood, Status::InvalidResult, "bytes of output"},
        {"good_last", Fault::None, Status::Ok, ""},
    };
    std::vector<Row> used;
    for (const Row &r : rows)
        if (r.fault != Fault::OutOfMemory || kAddressSpaceLimits) used.push_back(r);  // ASan: no limit to exhaust
    std::vector<sched::ScheduleSpec> candidates;
    for (const Row &r : used) {
        task.fault_by_schedule[r.name] = r.fault;
        candidates.push_back(good(r.name));
    }
    const tessel::SteadyClock::time_point t0 = tessel::SteadyClock::now();
    const std::vector<Measurement> got = m.measure(task, candidates);
    MESSAGE(used.size() << " children in " << tessel::seconds_since(t0) << " s");
    REQUIRE(got.size() == used.size());
    for (size_t i = 0; i < got.size(); i++) {
        CAPTURE(used[i].name);
        CAPTURE(got[i].message);
        CHECK(to_string(got[i].status) == to_string(used[i].want));
        CHECK(contains(got[i].message, used[i].message));
        if (used[i].want == Status::Ok) {
            CHECK(got[i].median_ms > 0);
            CHECK(got[i].max_error < task.verify_tolerance);
        } else {
            CHECK(got[i].median_ms == 0);
        }
    }
    // The wrong result names the output, the element and both values, and carries the error.
    const size_t wrong =
        (size_t)(std::find_if(used.begin(), used.end(), [](const Row &r) { return r.fault == Fault::WrongResult; }) -
                 used.begin());
    CHECK(contains(got[wrong].message, "output 'y' element 0"));
    CHECK(got[wrong].max_error > 0.1);
}

TEST_CASE("a hanging child is killed at the deadline") {
    IsolatedMeasurer m;
    MeasureTask task = small_task();
    task.timeout_seconds = 3;
    task.fault = Fault::Hang;
    const Measurement r = m.measure_one(task, good("hangs"));
    CHECK(r.status == Status::Timeout);
}

TEST_CASE("the output cap is the measurer's: a smaller one stops a smaller flood") {
    IsolatedMeasurer m("", 4096);
    MeasureTask task = small_task();
    task.fault = Fault::Flood;
    const Measurement r = m.measure_one(task, good("floods"));
    CHECK(r.status == Status::InvalidResult);
    CHECK(contains(r.message, "more than 4096 bytes"));
}

TEST_CASE("validate_measurement: only finite, non-negative times with samples are Ok") {
    struct Row {
        double median;
        std::vector<double> samples;
        bool ok;
    };
    const Row rows[] = {{1.0, {1.0}, true},       {0.0, {0.0}, true}, {-1.0, {1.0}, false},      {NAN, {1.0}, false},
                        {INFINITY, {1.0}, false}, {1.0, {}, false},   {1.0, {1.0, -0.5}, false}, {1.0, {NAN}, false}};
    for (const Row &r : rows) {
        Measurement m;
        m.median_ms = r.median;
        m.samples = r.samples;
        CAPTURE(r.median);
        CHECK(validate_measurement(m).ok() == r.ok);
    }
    Measurement crashed{Status::Crash, 0, {}, "boom", 0, 0};
    CHECK(validate_measurement(crashed).message == "boom");
    // NaN travels through the JSON protocol (as null) and is still refused.
    Measurement nan;
    nan.median_ms = NAN;
    nan.samples = {NAN};
    CHECK(validate_measurement(measurement_from_json(nlohmann::json::parse(to_json(nan).dump()))).status ==
          Status::InvalidResult);
}

TEST_CASE("a measuring child dies with its parent, even one killed with SIGKILL") {
    // This process adopts orphans (a subreaper), so the grandchild can be reaped and its end seen.
    REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    const pid_t tuner = fork();
    REQUIRE(tuner >= 0);
    if (tuner == 0) {
        // The stand-in tuner: measures one hanging candidate with a long deadline.
        try {
            IsolatedMeasurer m;
            MeasureTask task = small_task();
            task.timeout_seconds = 600;
            task.fault = Fault::Hang;
            m.measure_one(task, good("hangs"));
        } catch (...) {}
        _exit(0);
    }
    pid_t child = -1;
    for (int i = 0; i < 500 && child < 0; i++) {
        const auto kids = children_of(tuner);
        if (!kids.empty())
            child = kids[0];
        else
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    REQUIRE(child > 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let it get past exec
    kill(tuner, SIGKILL);
    int st = 0;
    REQUIRE(waitpid(tuner, &st, 0) == tuner);
    // The orphan is ours now; it must end by SIGKILL on its own, promptly.
    bool ended = false;
    for (int i = 0; i < 500 && !ended; i++) {
        const pid_t r = waitpid(child, &st, WNOHANG);
        if (r == child)
            ended = true;
        else
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!ended) {
        kill(child, SIGKILL);
        waitpid(child, &st, 0);
    }
    CHECK(ended);
    CHECK(WIFSIGNALED(st));
    if (WIFSIGNALED(st)) CHECK(WTERMSIG(st) == SIGKILL);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST_CASE("the tuner never picks an invalid measurement and its database commit succeeds") {
    // A measurer whose fastest answers are a negative and a NaN time: before validation, the
    // tuner picked the negative one and the database refused it (the tune ended with exit 1).
    class LyingMeasurer : public Measurer {
    public:
        std::vector<Measurement> measure(const MeasureTask &, const std::vector<sched::ScheduleSpec> &candidates,
                                         const ProgressFn &) override {
            std::vector<Measurement> out;
            for (size_t i = 0; i < candidates.size(); i++) {
                Measurement m;
                m.median_ms = i == 0 ? -1.0 : i == 1 ? NAN : 1.0 + (double)i;
                m.samples = {m.median_ms};
                out.push_back(m);
            }
            return out;
        }
        std::vector<Measurement> measure_interleaved(const MeasureTask &t, const std::vector<sched::ScheduleSpec> &c) override {
            auto out = measure(t, c, {});
            for (auto &m : out) m.samples.assign(10, m.median_ms);
            return out;
        }
    } measurer;
    testing::TempDir tmp;
    TuningDatabase db(tmp.file("t.db"));
    TunerParams params;
    params.budget = 4;
    AnalyticalCostModel model(TargetModel::for_target(parse_target("host")));
    Tuner tuner(model, &measurer, &db, params);
    TuneRequest r;
    r.graph = &graph();
    r.group = dsl::plan_fusion(graph()).groups.at(0);
    r.target = parse_target("host");
    r.workload = Workload{64, 256, 512};
    r.symbols = {{"M", 64}, {"K", 256}, {"N", 512}};
    const TuneResult res = tuner.tune(r);
    CHECK(res.source == ScheduleProvenance::Measured);
    CHECK(res.time_ms == doctest::Approx(3.0));
    CHECK(res.ranked[0].measured->status == Status::InvalidResult);
    CHECK(res.ranked[1].measured->status == Status::InvalidResult);
    CHECK(db.size() == 1);
}
