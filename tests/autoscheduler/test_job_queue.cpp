// The tuning job queue (autoscheduler/JobQueue.h) and `tessel worker` / `tessel jobs`
// (driver/FleetTuning.h) on a real PostgreSQL server (tests/PostgresServer.h), workers as
// separate processes with the stub measurer: claims matched on target, class and build; leases,
// heartbeats and expiry; failures after N attempts; refused results; and the fault runs — four
// workers on 1,000 jobs (no job claimed twice), kill -9 of a worker at random points (10 runs)
// and a server restart mid-run, each ending with every job done exactly once.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "autoscheduler/JobQueue.h"
#include "codegen/Compile.h"
#include "driver/DatabaseCommands.h"
#include "driver/FleetTuning.h"
#include "schedules/ScheduleJson.h"
#include "support/Subprocess.h"

#include "tests/BackgroundProcess.h"
#include "tests/PostgresServer.h"
#include "tests/TempDir.h"

using namespace tessel;
using namespace tessel::autosched;
using tessel::testing::BackgroundProcess;
using tessel::testing::PostgresServer;
using tessel::testing::TempDir;

namespace {

std::string host_target() { return parse_target("host").to_string(); }

TuningKey job_key(int i, const std::string &target = host_target()) {
    TuningKey k = TuningKey::current();
    k.group_hash = "job" + std::to_string(i);
    k.shapes = "M=" + std::to_string(i);
    k.target = target;
    k.numeric_mode = "strict";
    k.space_version = 1;
    return k;
}

std::vector<JobSpec> stub_jobs(int n, int first = 0) {
    std::vector<JobSpec> jobs;
    for (int i = first; i < first + n; i++) jobs.push_back(JobSpec{job_key(i), "", {{"stub", i}}, 3});
    return jobs;
}

TuningRecord result_for(const TuningKey &k, double ms = 1.0) {
    return TuningRecord{k, sched::to_json(sched::ScheduleSpec("r")), ms, {ms}, "test", kMeasured, 1735689600, ""};
}

WorkerIdentity worker(const std::string &name, const std::string &target = host_target(), const std::string &cls = "classA") {
    return WorkerIdentity{name, target, cls};
}

std::vector<std::string> worker_argv(const std::string &url, double stub_ms, double lease) {
    return {TESSEL_BINARY,
            "worker",
            "--db",
            url,
            "--stub-measure-ms",
            std::to_string(stub_ms),
            "--lease",
            std::to_string(lease),
            "--poll",
            "0.05",
            "--exit-when-idle",
            "--reconnect",
            "60"};
}

/** Jobs lost (not done) and duplicated (records beyond one per job) in database `db`. */
struct Tally {
    int64_t jobs = 0, done = 0, records = 0, distinct_keys = 0, max_attempts = 0;
    int64_t lost() const { return jobs - done; }
    int64_t duplicated() const { return records - distinct_keys; }
};

Tally tally(PostgresServer &server, const std::string &db) {
    Tally t;
    t.jobs = std::stoll(server.query_one("SELECT COUNT(*) FROM jobs", db));
    t.done = std::stoll(server.query_one("SELECT COUNT(*) FROM jobs WHERE state = 'done' AND result_count = 1", db));
    t.records = std::stoll(server.query_one("SELECT COUNT(*) FROM records", db));
    t.distinct_keys = std::stoll(server.query_one("SELECT COUNT(DISTINCT key_json) FROM records", db));
    t.max_attempts = std::stoll(server.query_one("SELECT COALESCE(MAX(attempts), 0) FROM jobs", db));
    return t;
}

}  // namespace

TEST_CASE("job queue: claims match target, machine class and build; one job is never claimed twice") {
    TESSEL_REQUIRE_POSTGRES(server);
    const std::string url = server.fresh_database("q_match");
    JobQueue q(url);
    std::vector<JobSpec> jobs = stub_jobs(2);
    jobs.push_back(JobSpec{job_key(2, "x86-64-linux-avx512"), "", {}, 3});  // another target
    jobs.push_back(JobSpec{job_key(3), "classB", {}, 3});                   // another machine class
    TuningKey old_build = job_key(4);
    old_build.tessel_version = "0.0.1";  // enqueued by another Tessel build
    jobs.push_back(JobSpec{old_build, "", {}, 3});
    CHECK(q.enqueue(jobs) == 5);
    CHECK(q.enqueue(jobs) == 0);  // one open job per key

    const auto a = q.claim(worker("a"), 60), b = q.claim(worker("b"), 60);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->id != b->id);
    CHECK_FALSE(q.claim(worker("c"), 60));  // classA, this target, this build: nothing left
    const auto other_class = q.claim(worker("d", host_target(), "classB"), 60);
    REQUIRE(other_class);
    CHECK(other_class->spec.key == job_key(3));
    const auto avx512 = q.claim(worker("e", "x86-64-linux-avx512"), 60);
    REQUIRE(avx512);
    CHECK(avx512->spec.key.target == "x86-64-linux-avx512");
    CHECK_FALSE(q.idle_for(worker("a")));  // a's and b's jobs still run
    q.finish(*a, {result_for(a->spec.key)});
    q.finish(*a, {result_for(a->spec.key)});  // a retry after a dropped COMMIT: nothing twice
    q.finish(*b, {});
    q.finish(*other_class, {});
    q.finish(*avx512, {});
    CHECK(q.idle_for(worker("a")));  // the old build's job is not this worker's
    const QueueStatus s = q.status();
    CHECK(s.done == 4);
    CHECK(s.queued == 1);
    CHECK(q.store().size() == 1);
    CHECK(s.to_string().find("worker a: 1 done") != std::string::npos);
}

TEST_CASE("job queue: a lease that expires returns the job; the old claim's heartbeat and finish are refused") {
    TESSEL_REQUIRE_POSTGRES(server);
    JobQueue q(server.fresh_database("q_lease"));
    q.enqueue(stub_jobs(1));
    const auto first = q.claim(worker("slow"), 0.3);
    REQUIRE(first);
    CHECK(q.heartbeat(*first, 0.3));
    CHECK_FALSE(q.claim(worker("other"), 0.3));  // held
    std::this_thread::sleep_for(std::chrono::milliseconds(450));
    const auto second = q.claim(worker("other"), 60);
    REQUIRE(second);
    CHECK(second->id == first->id);
    CHECK(second->attempt == 2);
    CHECK(second->lease_token > first->lease_token);
    CHECK_FALSE(q.heartbeat(*first, 60));
    CHECK_THROWS_AS(q.finish(*first, {result_for(first->spec.key)}), JobLost);
    CHECK(q.store().size() == 0);
    q.finish(*second, {result_for(second->spec.key)});
    CHECK(q.store().size() == 1);
}

TEST_CASE("job queue: a job failing max_attempts times is failed with its last error; expired last attempts too") {
    TESSEL_REQUIRE_POSTGRES(server);
    JobQueue q(server.fresh_database("q_fail"));
    q.enqueue({JobSpec{job_key(0), "", {}, 2}, JobSpec{job_key(1), "", {}, 1}});
    auto j = q.claim(worker("w"), 60);
    REQUIRE(j);
    q.fail(*j, "compile error one");
    CHECK(q.status().queued == 2);
    j = q.claim(worker("w"), 60);
    REQUIRE(j);
    CHECK(j->attempt == 2);
    q.fail(*j, "compile error two");
    // The one-attempt job: its worker dies (no heartbeat, lease expires).
    const auto dies = q.claim(worker("w"), 0.2);
    REQUIRE(dies);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK_FALSE(q.claim(worker("w"), 60));
    const QueueStatus s = q.status();
    CHECK(s.failed == 2);
    REQUIRE(s.failures.size() == 2);
    CHECK(s.failures[0].second == "compile error two");
    CHECK(s.failures[1].second.find("lease expired on attempt 1 of 1") != std::string::npos);
}

TEST_CASE("job queue: a result for a different key or key schema version is refused, nothing stored") {
    TESSEL_REQUIRE_POSTGRES(server);
    JobQueue q(server.fresh_database("q_refuse"));
    q.enqueue(stub_jobs(1));
    const auto j = q.claim(worker("w"), 60);
    REQUIRE(j);
    TuningKey other = j->spec.key;
    other.shapes = "M=999";
    std::string e;
    try {
        q.finish(*j, {result_for(other)});
    } catch (const TuningDatabaseError &err) {
        e = err.what();
    }
    CHECK(e.find("refused a result for a different key") != std::string::npos);
    TuningKey newer = j->spec.key;
    newer.schema_version = kTuningKeySchemaVersion + 1;
    e.clear();
    try {
        q.finish(*j, {result_for(newer)});
    } catch (const TuningDatabaseError &err) {
        e = err.what();
    }
    CHECK(e.find("refused a result of key schema version " + std::to_string(kTuningKeySchemaVersion + 1)) != std::string::npos);
    CHECK(q.store().size() == 0);
    CHECK(q.status().running == 1);  // still this worker's; it may finish properly
    q.finish(*j, {result_for(j->spec.key)});
    CHECK(q.store().size() == 1);
}

TEST_CASE("4 worker processes on 1,000 stub jobs: every job claimed once and done once; tessel jobs shows them") {
    TESSEL_REQUIRE_POSTGRES(server);
    TempDir tmp;
    const std::string url = server.fresh_database("q_thousand");
    const SubprocessResult enqueued = run_subprocess({TESSEL_BINARY, "jobs", "--db", url, "--enqueue-stub", "1000"});
    CHECK_MESSAGE(enqueued.output.find("enqueued 1000 stub jobs") != std::string::npos, enqueued.output);
    std::vector<std::unique_ptr<BackgroundProcess>> workers;
    for (int i = 0; i < 4; i++)
        workers.push_back(
            std::make_unique<BackgroundProcess>(worker_argv(url, 2, 30), tmp.file("worker" + std::to_string(i) + ".log")));
    for (auto &w : workers) CHECK_MESSAGE(w->wait(300) == 0, w->log());
    CHECK(workers[0]->log().find("claimed in") != std::string::npos);
    const Tally t = tally(server, "q_thousand");
    MESSAGE("1000 jobs x 4 workers: " << t.done << " done, lost " << t.lost() << ", duplicated " << t.duplicated()
                                      << ", max attempts " << t.max_attempts);
    CHECK(t.jobs == 1000);
    CHECK(t.lost() == 0);
    CHECK(t.records == 1000);
    CHECK(t.duplicated() == 0);
    CHECK(t.max_attempts == 1);  // no job was ever claimed a second time
    // Every worker took part (the queue spreads the work).
    CHECK(std::stoll(server.query_one("SELECT COUNT(DISTINCT worker) FROM jobs", "q_thousand")) == 4);
    std::ostringstream out, err;
    CHECK(show_jobs(url, out, err) == 0);
    CHECK(out.str().find("0 queued, 0 running, 1000 done, 0 failed") != std::string::npos);
    CHECK(out.str().find("jobs/min") != std::string::npos);
    CHECK(out.str().find("eta: nothing left") != std::string::npos);
}

TEST_CASE("kill -9 of a worker at random points (10 runs): every job done exactly once") {
    TESSEL_REQUIRE_POSTGRES(server);
    TempDir tmp;
    std::mt19937 rng(20261206);
    int64_t lost = 0, duplicated = 0, reclaimed = 0;
    for (int run = 0; run < 10; run++) {
        const std::string db = "q_kill" + std::to_string(run), url = server.fresh_database(db);
        JobQueue(url).enqueue(stub_jobs(40));
        auto victim = std::make_unique<BackgroundProcess>(worker_argv(url, 20, 0.8), tmp.file("victim.log"));
        BackgroundProcess steady(worker_argv(url, 20, 0.8), tmp.file("steady.log"));
        // A random point of the run: after a random number of jobs are done, a random fraction of a
        // job later (claiming, measuring, committing or heartbeating).
        const int after_done = std::uniform_int_distribution<int>(0, 28)(rng);
        while (std::stoll(server.query_one("SELECT COUNT(*) FROM jobs WHERE state = 'done'", db)) < after_done)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 25)(rng)));
        victim->kill();
        CHECK(victim->wait() == 128 + SIGKILL);
        BackgroundProcess replacement(worker_argv(url, 20, 0.8), tmp.file("replacement.log"));
        CHECK_MESSAGE(steady.wait(120) == 0, steady.log());
        CHECK_MESSAGE(replacement.wait(120) == 0, replacement.log());
        const Tally t = tally(server, db);
        lost += t.lost();
        duplicated += t.duplicated();
        reclaimed += t.max_attempts > 1;
        CHECK(t.lost() == 0);
        CHECK(t.records == 40);
        CHECK(t.duplicated() == 0);
        server.admin("DROP DATABASE " + db + " WITH (FORCE)");
    }
    MESSAGE("kill -9: 10 runs x 40 jobs, lost " << lost << ", duplicated " << duplicated << ", runs where a job was reclaimed "
                                                << reclaimed);
    CHECK(reclaimed > 0);  // the kills did land while a job was held
}

TEST_CASE("a server restart mid-run: workers reconnect and finish, every job done once") {
    TESSEL_REQUIRE_POSTGRES(server);
    TempDir tmp;
    const std::string url = server.fresh_database("q_restart");
    JobQueue(url).enqueue(stub_jobs(300));
    BackgroundProcess a(worker_argv(url, 10, 5), tmp.file("a.log")), b(worker_argv(url, 10, 5), tmp.file("b.log"));
    // Mid-run: both workers connected and working, most of the jobs still to do.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((std::stoll(server.query_one("SELECT COUNT(*) FROM jobs WHERE state = 'done'", "q_restart")) < 20 ||
            server.query_one("SELECT COUNT(DISTINCT worker) FROM jobs WHERE worker <> ''", "q_restart") != "2") &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(std::stoll(server.query_one("SELECT COUNT(*) FROM jobs WHERE state = 'queued'", "q_restart")) > 100);
    server.restart();
    CHECK_MESSAGE(a.wait(120) == 0, a.log());
    CHECK_MESSAGE(b.wait(120) == 0, b.log());
    const Tally t = tally(server, "q_restart");
    MESSAGE("server restart: " << t.done << " of 300 done, lost " << t.lost() << ", duplicated " << t.duplicated());
    CHECK(t.lost() == 0);
    CHECK(t.records == 300);
    CHECK(t.duplicated() == 0);
    CHECK((a.log() + b.log()).find("reconnecting") != std::string::npos);  // the restart was felt
}

TEST_CASE("tessel tune --enqueue, then a real worker: measured in the isolated child, then a database hit for tessel tune") {
    TESSEL_REQUIRE_POSTGRES(server);
    TempDir tmp;
    const std::string url = server.fresh_database("q_real");
    const std::string graph = std::string(TESSEL_SOURCE_DIR) + "/algorithms/softmax_rows.tsl";
    const std::vector<std::string> tune = {TESSEL_BINARY, "tune",     graph, "--db",      url, "--dim",
                                           "M=8,N=64",    "--budget", "1",   "--repeats", "1", "--no-coverage"};
    std::vector<std::string> enqueue = tune;
    enqueue.push_back("--enqueue");
    SubprocessResult r = run_subprocess(enqueue);
    REQUIRE_MESSAGE(r.ok(), r.output);
    CHECK(r.output.find("enqueued 1 job on " + url) != std::string::npos);
    r = run_subprocess(enqueue);
    CHECK(r.output.find("enqueued 0 jobs") != std::string::npos);  // already queued
    BackgroundProcess worker({TESSEL_BINARY, "worker", "--db", url, "--poll", "0.1", "--exit-when-idle", "--lease", "30"},
                             tmp.file("worker.log"));
    REQUIRE_MESSAGE(worker.wait(300) == 0, worker.log());
    CHECK_MESSAGE(worker.log().find("job 1 done") != std::string::npos, worker.log());
    CHECK(server.query_one("SELECT measured_by FROM records", "q_real") == "measured");
    // Every host of the class now hits: tune on the server measures nothing.
    r = run_subprocess(tune);
    REQUIRE_MESSAGE(r.ok(), r.output);
    CHECK_MESSAGE(r.output.find("(database)") != std::string::npos, r.output);
    // And a SQLite file that pulled the server's records hits after verifying the import.
    std::ostringstream out, err;
    REQUIRE(db_pull(url, tmp.file("local.db"), out, err) == 0);
    std::vector<std::string> local = tune;
    local[4] = tmp.file("local.db");
    r = run_subprocess(local);
    CHECK_MESSAGE(r.output.find("(database)") != std::string::npos, r.output);

    // --wait: the enqueuing command waits for the workers, then reports their results as hits.
    std::vector<std::string> waiting = enqueue;
    waiting[6] = "M=16,N=64";
    waiting.push_back("--wait");
    BackgroundProcess waiter(waiting, tmp.file("waiter.log"));
    // The worker starts once the job is there (--exit-when-idle would stop before it).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (waiter.log().find("enqueued 1 job") == std::string::npos && waiter.running() &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    BackgroundProcess second({TESSEL_BINARY, "worker", "--db", url, "--poll", "0.1", "--exit-when-idle", "--lease", "30"},
                             tmp.file("second.log"));
    CHECK_MESSAGE(waiter.wait(300) == 0, waiter.log());
    CHECK_MESSAGE(second.wait(300) == 0, second.log());
    CHECK_MESSAGE(waiter.log().find("waiting for the workers") != std::string::npos, waiter.log());
    CHECK(waiter.log().find("every job is done") != std::string::npos);
    CHECK(waiter.log().find("(database)") != std::string::npos);
}

TEST_CASE("tessel lib --profile --enqueue: workers measure each group's variant costs; the library is built from them") {
    TESSEL_REQUIRE_POSTGRES(server);
    TempDir tmp;
    const std::string url = server.fresh_database("q_lib");
    const std::string profile = tmp.file("decode.profile");
    std::ofstream(profile) << "H=19 K=37 M=1 calls=100000\nH=19 K=37 M=4 calls=20000\nH=19 K=37 M=37 calls=300\n";
    auto lib = [&](const std::string &out_dir, bool enqueue) {
        std::vector<std::string> argv = {TESSEL_BINARY, "lib",   std::string(TESSEL_SOURCE_DIR) + "/algorithms/mlp_residual.tsl",
                                         "-o",          out_dir, "--profile",
                                         profile,       "--db",  url};
        if (enqueue) argv.push_back("--enqueue");
        return run_subprocess(argv);
    };
    SubprocessResult r = lib(tmp.file("first"), true);
    REQUIRE_MESSAGE(r.ok(), r.output);
    CHECK_MESSAGE(r.output.find("enqueued 3 variant-costs jobs") != std::string::npos, r.output);
    CHECK(r.output.find("no library written yet") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(tmp.file("first") + "/libmlp_residual.a"));
    BackgroundProcess worker({TESSEL_BINARY, "worker", "--db", url, "--poll", "0.1", "--exit-when-idle", "--lease", "60"},
                             tmp.file("worker.log"));
    REQUIRE_MESSAGE(worker.wait(300) == 0, worker.log());
    CHECK(server.query_one("SELECT COUNT(*) FROM variant_costs", "q_lib") == "3");
    r = lib(tmp.file("second"), false);
    REQUIRE_MESSAGE(r.ok(), r.output);
    CHECK_MESSAGE(r.output.find("g0_h1: costs measured by a worker") != std::string::npos, r.output);
    CHECK(r.output.find("enqueued") == std::string::npos);
    CHECK(std::filesystem::exists(tmp.file("second") + "/libmlp_residual.a"));
}

TEST_CASE("job queue: a server at queue schema version 1 is migrated to 2 on open; a newer one is refused") {
    TESSEL_REQUIRE_POSTGRES(server);
    const std::string url = server.fresh_database("q_migrate");
    { JobQueue created(url); }
    server.admin("DROP TABLE variant_costs; UPDATE tessel_schema SET version = 1 WHERE name = 'queue'", "q_migrate");
    JobQueue migrated(url);
    CHECK(server.query_one("SELECT version FROM tessel_schema WHERE name = 'queue'", "q_migrate") == "2");
    CHECK_FALSE(migrated.variant_costs(job_key(0)));  // the table is back
    server.admin("UPDATE tessel_schema SET version = 3 WHERE name = 'queue'", "q_migrate");
    std::string e;
    try {
        JobQueue newer(url);
    } catch (const TuningDatabaseError &err) {
        e = err.what();
    }
    CHECK(e.find("component 'queue' has schema version 3, newer than this Tessel supports (2)") != std::string::npos);
}

TEST_CASE("a worker started while the server is down waits for it; a refused login does not wait") {
    TESSEL_REQUIRE_POSTGRES(server);
    TempDir tmp;
    const std::string url = server.fresh_database("q_down");
    JobQueue(url).enqueue(stub_jobs(20));
    server.stop();
    BackgroundProcess early(worker_argv(url, 5, 5), tmp.file("early.log"));
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    server.start();
    CHECK_MESSAGE(early.wait(120) == 0, early.log());
    CHECK(early.log().find("retrying for up to") != std::string::npos);
    CHECK(tally(server, "q_down").lost() == 0);
    // Wrong password: an error at once, naming the role, not a wait.
    const std::string secured = "postgresql://secured:wrong@127.0.0.1:" + std::to_string(server.port()) + "/q_down";
    const auto start = std::chrono::steady_clock::now();
    const SubprocessResult r = run_subprocess({TESSEL_BINARY, "worker", "--db", secured, "--reconnect", "60"});
    CHECK(r.status == 1);
    CHECK_MESSAGE(r.output.find("authentication refused for role 'secured'") != std::string::npos, r.output);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}
