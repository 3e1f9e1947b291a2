/** \file
 * run_worker and show_jobs (FleetTuning.h): the claim / heartbeat / measure / finish loop and
 * its reconnects.
 */
#include "driver/FleetTuning.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <thread>

#include "autoscheduler/JobPayload.h"
#include "autoscheduler/JobQueue.h"
#include "autoscheduler/MachineNumbers.h"
#include "autoscheduler/Measurer.h"
#include "autoscheduler/Tuner.h"
#include "codegen/Compile.h"
#include "compiler/Plan.h"
#include "compiler/ScheduleSelection.h"
#include "driver/FleetVariantCosts.h"
#include "dsl/ir/Parser.h"
#include "schedules/ScheduleJson.h"

namespace tessel {

namespace {

using autosched::ClaimedJob;
using autosched::JobQueue;
using autosched::PgError;
using autosched::TuningRecord;
using Clock = std::chrono::steady_clock;

/** Runs `step`; while it fails because the connection dropped, reconnects and runs it again,
 * for up to `seconds`. Other errors, and a server gone for longer, are thrown. */
template <typename F>
auto with_reconnect(JobQueue &q, double seconds, std::ostream &out, F step) -> decltype(step()) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    bool said = false;
    for (;;) {
        try {
            return step();
        } catch (const PgError &e) {
            if (!e.connection_lost() || Clock::now() > deadline) throw;
            if (!said) out << "worker: " << e.what() << "; reconnecting for up to " << seconds << " s\n" << std::flush;
            said = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        try {
            q.connection().reconnect();
        } catch (const PgError &e) {
            if (Clock::now() > deadline) throw;
        }
    }
}

/** Renews a claimed job's lease every third of its length, on its own connection, until stopped;
 * lost() says when the job was taken over (the lease expired before a renewal got through). */
class Heartbeat {
public:
    Heartbeat(JobQueue &q, const ClaimedJob &job, double lease_seconds)
        : q_(q), job_(job), lease_(lease_seconds), thread_([this] { run(); }) {}
    ~Heartbeat() {
        {
            std::lock_guard<std::mutex> l(m_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    bool lost() const { return lost_; }

private:
    void run() {
        std::unique_lock<std::mutex> l(m_);
        while (!cv_.wait_for(l, std::chrono::duration<double>(lease_ / 3), [this] { return stop_; })) {
            try {
                if (!q_.heartbeat(job_, lease_)) lost_ = true;
            } catch (const PgError &) {
                try {
                    q_.connection().reconnect();  // the next beat tries again; the lease may still hold
                } catch (const PgError &) {}
            }
            if (lost_) return;
        }
    }
    JobQueue &q_;
    const ClaimedJob &job_;
    double lease_;
    std::mutex m_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::atomic<bool> lost_{false};
    std::thread thread_;
};

/** The tuner's cache for one job: lookups read the server, commits are kept for finish(). */
class CapturingCache : public autosched::TuningCache {
public:
    explicit CapturingCache(autosched::TuningStore &store) : store_(store) {}
    std::optional<TuningRecord> lookup(const autosched::TuningKey &key) override { return store_.lookup(key); }
    void commit(const TuningRecord &r) override { committed.push_back(r); }
    std::vector<TuningRecord> top_k(const autosched::TuningKey &key, int k) override { return store_.top_k(key, k); }
    std::vector<TuningRecord> committed;

private:
    autosched::TuningStore &store_;
};

/** What `tessel tune` does for the job's group at the job's sizes; returns what the tuner committed. */
std::vector<TuningRecord> tune_job(const ClaimedJob &job, autosched::TuningStore &store, std::ostream &log) {
    const autosched::TuneJobPayload p = autosched::TuneJobPayload::from_json(job.spec.payload);
    const dsl::Graph graph = dsl::parse(p.graph, p.file);
    const std::map<std::string, int64_t> &symbols = p.symbols;
    const Halide::Target target(job.spec.key.target);
    PlanOptions po;
    po.symbols = symbols;
    po.schedules.autoschedule = false;
    const PlannedProgram planned = plan(graph, target, po);
    const std::string &group = p.group;
    for (const auto &fg : planned.fusion.groups) {
        if (fg.name != group) continue;
        const auto w = group_workload(planned.graph, fg, symbols);
        if (!w) throw std::runtime_error("group " + group + " has a size not bound by the job's symbols");
        autosched::TuneRequest request;
        request.graph = &planned.graph;
        request.group = fg;
        request.symbols = symbols;
        request.workload = *w;
        request.target = target;
        const autosched::TuningKey key = autosched::Tuner::key_for(request);
        if (!(key == job.spec.key))
            throw std::runtime_error("this worker plans group " + group + " under another key (" + key.to_string() +
                                     "); the job's is " + job.spec.key.to_string());
        autosched::TunerParams params;
        params.budget = p.budget.value_or(params.budget);
        params.repeats = p.repeats.value_or(params.repeats);
        params.timeout_seconds = p.timeout_seconds.value_or(params.timeout_seconds);
        params.verify = p.verify.value_or(params.verify);
        params.measure = p.measure.value_or(true) && !target.has_gpu_feature();
        if (!target.has_gpu_feature()) {
            params.machine = store.machine_numbers(autosched::machine_identity(), autosched::probe_isa(target));
            if (!params.machine) {
                params.machine = autosched::measure_machine(target);
                store.store_machine_numbers(*params.machine);
            }
        }
        autosched::AnalyticalCostModel model(autosched::TargetModel::for_target(target).with_numbers(params.machine));
        std::unique_ptr<autosched::IsolatedMeasurer> measurer;
        if (params.measure) measurer = std::make_unique<autosched::IsolatedMeasurer>();
        CapturingCache cache(store);
        autosched::Tuner(model, measurer.get(), &cache, params).tune(request, &log);
        return cache.committed;
    }
    throw std::runtime_error("the planned graph has no group '" + group + "' (planned differently on this host?)");
}

std::vector<TuningRecord> stub_measure(const ClaimedJob &job, const std::string &worker, double ms) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
    TuningRecord r;
    r.key = job.spec.key;
    r.schedule = sched::to_json(sched::ScheduleSpec("stub"));
    r.median_ms = ms;
    r.samples = {ms};
    r.cost_model_version = "stub";
    r.measured_by = autosched::kModel;  // not a measurement: never preferred to one
    r.created_unix = autosched::now_unix();
    r.notes = "stub measurer: worker " + worker + ", job " + std::to_string(job.id) + ", attempt " + std::to_string(job.attempt);
    return {r};
}

std::string host_name() {
    char buf[256] = {0};
    if (gethostname(buf, sizeof buf - 1) != 0) return "host";
    return buf;
}

}  // namespace

int run_worker(const WorkerOptions &o, std::ostream &out) {
    try {
        if (!autosched::is_postgres_url(o.db))
            throw std::invalid_argument("tessel worker needs a server: --db postgresql://user@host:port/dbname (got '" + o.db +
                                        "')");
        if (!(o.lease_seconds > 0)) throw std::invalid_argument("--lease must be positive");
        autosched::WorkerIdentity who;
        who.name = host_name() + ":" + std::to_string(getpid());
        who.target = parse_target(o.target).to_string();
        who.machine_class = autosched::machine_identity();
        // A server that is not up yet (or restarting) is waited for; a refused login is not.
        const auto connect = [&] {
            const auto deadline = Clock::now() + std::chrono::duration<double>(o.reconnect_seconds);
            for (bool said = false;; said = true) {
                try {
                    return std::make_unique<JobQueue>(o.db);
                } catch (const PgError &e) {
                    if (!e.connection_lost() || Clock::now() > deadline) throw;
                    if (!said)
                        out << "worker: " << e.what() << "; retrying for up to " << o.reconnect_seconds << " s\n" << std::flush;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(250));
            }
        };
        const std::unique_ptr<JobQueue> queue_connection = connect(), beats_connection = connect();
        JobQueue &queue = *queue_connection, &beats = *beats_connection;
        out << "worker " << who.name << " on " << queue.store().location() << ": target " << who.target << ", lease "
            << o.lease_seconds << " s" << (o.stub_measure_ms >= 0 ? ", stub measurer" : "") << "\n"
            << std::flush;
        int64_t jobs = 0;
        while (o.max_jobs < 0 || jobs < o.max_jobs) {
            const auto claim_start = Clock::now();
            std::optional<ClaimedJob> job =
                with_reconnect(queue, o.reconnect_seconds, out, [&] { return queue.claim(who, o.lease_seconds); });
            if (!job) {
                if (o.exit_when_idle && with_reconnect(queue, o.reconnect_seconds, out, [&] { return queue.idle_for(who); }))
                    break;
                std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_seconds));
                continue;
            }
            jobs++;
            const double claim_ms = std::chrono::duration<double, std::milli>(Clock::now() - claim_start).count();
            const auto start = Clock::now();
            std::vector<TuningRecord> results;
            std::optional<nlohmann::json> costs;  // a variant-costs job's result
            std::string error;
            bool lost = false;
            {
                Heartbeat heartbeat(beats, *job, o.lease_seconds);
                try {
                    std::ostringstream log;
                    if (o.stub_measure_ms < 0 && is_variant_costs_payload(job->spec.payload))
                        costs = measure_variant_costs_job(job->spec.payload);
                    else
                        results = o.stub_measure_ms >= 0 ? stub_measure(*job, who.name, o.stub_measure_ms)
                                                         : tune_job(*job, queue.store(), log);
                } catch (const PgError &e) {
                    if (!e.connection_lost())
                        error = e.what();
                    else
                        error = std::string("lost the server while tuning: ") + e.what();
                } catch (const std::exception &e) {
                    error = e.what();
                }
                lost = heartbeat.lost();
            }
            const double s = std::chrono::duration<double>(Clock::now() - start).count();
            try {
                if (lost) {
                    out << "job " << job->id << ": lease lost while measuring; result discarded\n" << std::flush;
                } else if (!error.empty()) {
                    with_reconnect(queue, o.reconnect_seconds, out, [&] { return queue.fail(*job, error), 0; });
                    out << "job " << job->id << " failed (attempt " << job->attempt << " of " << job->spec.max_attempts
                        << "): " << error << "\n"
                        << std::flush;
                } else {
                    with_reconnect(queue, o.reconnect_seconds, out, [&] {
                        return costs ? queue.finish_costs(*job, *costs, who.name) : queue.finish(*job, results), 0;
                    });
                    out << "job " << job->id << " done in " << std::fixed << std::setprecision(2) << s << " s (" << results.size()
                        << " record" << (results.size() == 1 ? "" : "s") << "; claimed in " << std::setprecision(3) << claim_ms
                        << " ms)\n"
                        << std::flush;
                }
            } catch (const autosched::JobLost &e) {
                out << e.what() << "\n" << std::flush;
            } catch (const PgError &e) {
                if (e.connection_lost()) throw;
                // A refused result (another key): the job fails rather than stores it.
                with_reconnect(queue, o.reconnect_seconds, out, [&] { return queue.fail(*job, e.what()), 0; });
                out << "job " << job->id << " failed: " << e.what() << "\n" << std::flush;
            } catch (const autosched::TuningDatabaseError &e) {
                with_reconnect(queue, o.reconnect_seconds, out, [&] { return queue.fail(*job, e.what()), 0; });
                out << "job " << job->id << " failed: " << e.what() << "\n" << std::flush;
            }
        }
        out << "worker " << who.name << ": stopping after " << jobs << " job" << (jobs == 1 ? "" : "s") << "\n";
        return 0;
    } catch (const std::exception &e) {
        out << "tessel worker: " << e.what() << "\n";
        return 1;
    }
}

int show_jobs(const std::string &db, std::ostream &out, std::ostream &err, int64_t stub_jobs) {
    try {
        if (!autosched::is_postgres_url(db))
            throw std::invalid_argument("the job queue is on a server: --db postgresql://user@host:port/dbname (got '" + db +
                                        "')");
        JobQueue queue(db);
        if (stub_jobs > 0) {
            std::vector<autosched::JobSpec> jobs;
            const std::string run = std::to_string(autosched::now_unix()) + "-" + std::to_string(getpid());
            for (int64_t i = 0; i < stub_jobs; i++) {
                autosched::JobSpec j;
                j.key = autosched::TuningKey::current();
                j.key.group_hash = "stub-" + run + "-" + std::to_string(i);
                j.key.target = parse_target("host").to_string();
                j.key.numeric_mode = "strict";
                j.payload = {{"stub", i}};
                jobs.push_back(std::move(j));
            }
            out << "enqueued " << queue.enqueue(jobs) << " stub jobs\n";
        }
        out << queue.store().location() << "\n" << queue.status().to_string();
        return 0;
    } catch (const std::exception &e) {
        err << "tessel jobs: " << e.what() << "\n";
        return 1;
    }
}

}  // namespace tessel
