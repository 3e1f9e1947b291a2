/** \file
 * JobQueue (JobQueue.h): the jobs table, its migration, and the claim / heartbeat / finish
 * statements.
 *
 * Server layout (component 'queue', version 2; version 1 had no variant_costs):
 *   jobs(id, state, key_json, target, machine_class, build, payload_json, attempts, max_attempts,
 *        lease_token, lease_until, worker, last_error, result_count, enqueued_at, started_at,
 *        finished_at)
 *   one open job per key: a unique index on key_json over the queued, running and done rows.
 *   variant_costs(key_json PRIMARY KEY, costs_json, worker, stored_at): the results of
 *   `tessel lib --profile --enqueue` jobs (driver/FleetVariantCosts.h).
 */
#include "autoscheduler/JobQueue.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace tessel::autosched {

namespace {

using nlohmann::json;

const std::vector<std::string> kQueueMigrations = {
    R"sql(
CREATE TABLE jobs (
  id BIGSERIAL PRIMARY KEY,
  state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done', 'failed')),
  key_json TEXT NOT NULL,
  target TEXT NOT NULL,
  machine_class TEXT NOT NULL,
  build TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  lease_token BIGINT NOT NULL DEFAULT 0,
  lease_until TIMESTAMPTZ,
  worker TEXT NOT NULL DEFAULT '',
  last_error TEXT NOT NULL DEFAULT '',
  result_count INTEGER NOT NULL DEFAULT 0,
  enqueued_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  started_at TIMESTAMPTZ,
  finished_at TIMESTAMPTZ);
CREATE INDEX jobs_claimable ON jobs (target, build, state, id);
CREATE UNIQUE INDEX jobs_one_open_per_key ON jobs (key_json) WHERE state IN ('queued', 'running', 'done');
)sql",
    R"sql(
CREATE TABLE variant_costs (
  key_json TEXT PRIMARY KEY,
  costs_json TEXT NOT NULL,
  worker TEXT NOT NULL,
  stored_at TIMESTAMPTZ NOT NULL DEFAULT now());
)sql",
};

/** Jobs `who` may take: its target, its build, its class or any. $1 target, $2 build, $3 class. */
const char *kMatches = "target = $1 AND build = $2 AND machine_class IN ('', $3)";

std::string seconds_interval(double s) {
    char buf[48];
    snprintf(buf, sizeof buf, "%.3f seconds", s);
    return buf;
}

}  // namespace

std::string build_of(const TuningKey &key) {
    return "tessel " + key.tessel_version + " halide " + key.halide_version + " key " + std::to_string(key.schema_version);
}

JobQueue::JobQueue(const std::string &url) : store_(url) {
    apply_migrations(store_.connection(), "queue", kQueueMigrations, true);
}

int64_t JobQueue::enqueue(const std::vector<JobSpec> &jobs) {
    int64_t added = 0;
    PgConnection &c = connection();
    c.transaction([&] {
        for (const JobSpec &j : jobs) {
            added += c.exec(
                          "INSERT INTO jobs (key_json, target, machine_class, build, payload_json, max_attempts) "
                          "VALUES ($1, $2, $3, $4, $5, $6) "
                          "ON CONFLICT (key_json) WHERE state IN ('queued', 'running', 'done') DO NOTHING",
                          {j.key.to_json().dump(), j.key.target, j.machine_class, build_of(j.key), j.payload.dump(),
                           std::to_string(std::max(1, j.max_attempts))},
                          "cannot enqueue a job")
                         .affected();
        }
    });
    return added;
}

std::optional<ClaimedJob> JobQueue::claim(const WorkerIdentity &who, double lease_seconds) {
    PgConnection &c = connection();
    const std::string build = build_of(TuningKey::current());
    std::optional<ClaimedJob> out;
    c.transaction([&] {
        // Leases that expired on their last attempt: the job failed (its worker died each time).
        c.exec(std::string("UPDATE jobs SET state = 'failed', finished_at = now(), last_error = 'lease expired on attempt ' || "
                           "attempts || ' of ' || max_attempts || ' (worker ' || worker || ' stopped heartbeating)' "
                           "WHERE state = 'running' AND lease_until < now() AND attempts >= max_attempts AND ") +
                   kMatches,
               {who.target, build, who.machine_class}, "cannot expire leases");
        PgResult r = c.exec(
            std::string("UPDATE jobs SET state = 'running', worker = $4, attempts = attempts + 1, lease_token = lease_token + 1, "
                        "lease_until = now() + $5::interval, started_at = now() "
                        "WHERE id = (SELECT id FROM jobs WHERE (state = 'queued' OR (state = 'running' AND lease_until < now())) "
                        "AND ") +
                kMatches +
                " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) "
                "RETURNING id, lease_token, attempts, key_json, machine_class, payload_json, max_attempts",
            {who.target, build, who.machine_class, who.name, seconds_interval(lease_seconds)}, "cannot claim a job");
        if (r.rows() == 0) return;
        ClaimedJob j;
        j.id = std::stoll(r.text(0, 0));
        j.lease_token = std::stoll(r.text(0, 1));
        j.attempt = std::stoi(r.text(0, 2));
        j.spec.key = TuningKey::from_json(json::parse(r.text(0, 3)));
        j.spec.machine_class = r.text(0, 4);
        j.spec.payload = json::parse(r.text(0, 5));
        j.spec.max_attempts = std::stoi(r.text(0, 6));
        out = std::move(j);
    });
    return out;
}

bool JobQueue::heartbeat(const ClaimedJob &job, double lease_seconds) {
    return connection()
               .exec(
                   "UPDATE jobs SET lease_until = now() + $3::interval WHERE id = $1 AND lease_token = $2 AND state = "
                   "'running'",
                   {std::to_string(job.id), std::to_string(job.lease_token), seconds_interval(lease_seconds)},
                   "cannot renew a job's lease")
               .affected() == 1;
}

/** Locks the job for its end; true when this claim already ended it (a retry after a dropped
 * COMMIT). Throws JobLost when the claim is no longer the job's. Call inside a transaction. */
bool JobQueue::lock_for_finish(const ClaimedJob &job, const std::string &where) {
    PgConnection &c = connection();
    PgResult j = c.exec("SELECT state, lease_token, key_json FROM jobs WHERE id = $1 FOR UPDATE", {std::to_string(job.id)},
                        "cannot lock a job to finish it");
    if (j.rows() != 1) throw JobLost(where + " no longer exists");
    const bool ours = std::stoll(j.text(0, 1)) == job.lease_token;
    if (ours && j.text(0, 0) == "done") return true;
    if (!ours || j.text(0, 0) != "running")
        throw JobLost(where + " is no longer this worker's (its lease expired and it was claimed again, or it ended): " +
                      "the result is discarded");
    if (j.text(0, 2) != job.spec.key.to_json().dump())
        throw TuningDatabaseError(where + ": the stored job's key is not the claimed one");
    return false;
}

void JobQueue::finish_costs(const ClaimedJob &job, const json &costs, const std::string &worker) {
    PgConnection &c = connection();
    const std::string where = "tuning server " + c.server() + ": job " + std::to_string(job.id);
    c.transaction([&] {
        if (lock_for_finish(job, where)) return;
        c.exec(
            "INSERT INTO variant_costs (key_json, costs_json, worker) VALUES ($1, $2, $3) ON CONFLICT (key_json) DO UPDATE "
            "SET costs_json = EXCLUDED.costs_json, worker = EXCLUDED.worker, stored_at = now()",
            {job.spec.key.to_json().dump(), costs.dump(), worker}, "cannot store variant costs");
        c.exec("UPDATE jobs SET state = 'done', finished_at = now(), lease_until = NULL, result_count = 1 WHERE id = $1",
               {std::to_string(job.id)}, "cannot mark a job done");
    });
}

std::optional<json> JobQueue::variant_costs(const TuningKey &key) {
    PgResult r = connection().exec("SELECT costs_json FROM variant_costs WHERE key_json = $1", {key.to_json().dump()},
                                   "cannot read variant costs");
    if (r.rows() != 1) return std::nullopt;
    return json::parse(r.text(0, 0));
}

void JobQueue::finish(const ClaimedJob &job, const std::vector<TuningRecord> &results) {
    PgConnection &c = connection();
    const std::string key = job.spec.key.to_json().dump();
    const std::string where = "tuning server " + c.server() + ": job " + std::to_string(job.id);
    // Checked before the transaction: a result for another key or key schema is never stored.
    for (const TuningRecord &r : results) {
        if (r.key.schema_version != kTuningKeySchemaVersion || job.spec.key.schema_version != kTuningKeySchemaVersion)
            throw TuningDatabaseError(where + ": refused a result of key schema version " + std::to_string(r.key.schema_version) +
                                      " (this Tessel's is " + std::to_string(kTuningKeySchemaVersion) + ")");
        if (r.key.to_json().dump() != key)
            throw TuningDatabaseError(where + ": refused a result for a different key (" + r.key.to_string() + "; the job's is " +
                                      job.spec.key.to_string() + ")");
        validate_record(r, where);
    }
    c.transaction([&] {
        if (lock_for_finish(job, where)) return;  // this claim's commit went through before a reconnect
        for (const TuningRecord &r : results) store_.insert(r);
        c.exec("UPDATE jobs SET state = 'done', finished_at = now(), lease_until = NULL, result_count = $2 WHERE id = $1",
               {std::to_string(job.id), std::to_string(results.size())}, "cannot mark a job done");
    });
}

void JobQueue::fail(const ClaimedJob &job, const std::string &error) {
    PgConnection &c = connection();
    const int64_t n = c.exec(
                           "UPDATE jobs SET state = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'queued' END, "
                           "last_error = $3, lease_until = NULL, "
                           "finished_at = CASE WHEN attempts >= max_attempts THEN now() ELSE NULL END "
                           "WHERE id = $1 AND lease_token = $2 AND state = 'running'",
                           {std::to_string(job.id), std::to_string(job.lease_token), error}, "cannot record a job's failure")
                          .affected();
    if (n != 1) throw JobLost("tuning server " + c.server() + ": job " + std::to_string(job.id) + " is no longer this worker's");
}

bool JobQueue::idle_for(const WorkerIdentity &who) {
    return connection()
               .exec(std::string("SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running') AND ") + kMatches,
                     {who.target, build_of(TuningKey::current()), who.machine_class}, "cannot count jobs")
               .text(0, 0) == "0";
}

QueueStatus JobQueue::status() {
    PgConnection &c = connection();
    QueueStatus s;
    PgResult counts = c.exec("SELECT state, COUNT(*) FROM jobs GROUP BY state", {}, "cannot count jobs");
    for (int i = 0; i < counts.rows(); i++) {
        const std::string st = counts.text(i, 0);
        const int64_t n = std::stoll(counts.text(i, 1));
        (st == "queued" ? s.queued : st == "running" ? s.running : st == "done" ? s.done : s.failed) = n;
    }
    // A worker's rate: its jobs done over the time from its first start to its last finish.
    PgResult w = c.exec(
        "SELECT worker, COUNT(*), GREATEST(EXTRACT(EPOCH FROM MAX(finished_at) - MIN(started_at)), 0.001), "
        "MAX(finished_at) > now() - interval '10 minutes' FROM jobs WHERE state = 'done' GROUP BY worker ORDER BY 2 DESC, 1",
        {}, "cannot read worker rates");
    double recent_rate = 0;
    for (int i = 0; i < w.rows(); i++) {
        WorkerRate r{w.text(i, 0), std::stoll(w.text(i, 1)), 0};
        r.jobs_per_minute = 60.0 * (double)r.done / std::stod(w.text(i, 2));
        if (w.text(i, 3) == "t") recent_rate += r.jobs_per_minute;
        s.workers.push_back(r);
    }
    if (recent_rate > 0) s.eta_seconds = 60.0 * (double)(s.queued + s.running) / recent_rate;
    PgResult f =
        c.exec("SELECT id, last_error FROM jobs WHERE state = 'failed' ORDER BY id LIMIT 10", {}, "cannot read failures");
    for (int i = 0; i < f.rows(); i++) s.failures.push_back({std::stoll(f.text(i, 0)), f.text(i, 1)});
    return s;
}

QueueStatus JobQueue::status_of(const std::vector<TuningKey> &keys) {
    json list = json::array();
    for (const TuningKey &k : keys) list.push_back(k.to_json().dump());
    PgResult r = connection().exec(
        "SELECT DISTINCT ON (key_json) state, id, last_error FROM jobs WHERE key_json IN "
        "(SELECT jsonb_array_elements_text($1::jsonb)) ORDER BY key_json, id DESC",
        {list.dump()}, "cannot read the jobs' states");
    QueueStatus s;
    for (int i = 0; i < r.rows(); i++) {
        const std::string st = r.text(i, 0);
        (st == "queued" ? s.queued : st == "running" ? s.running : st == "done" ? s.done : s.failed)++;
        if (st == "failed") s.failures.push_back({std::stoll(r.text(i, 1)), r.text(i, 2)});
    }
    return s;
}

std::string QueueStatus::to_string() const {
    std::ostringstream os;
    os << "jobs: " << queued << " queued, " << running << " running, " << done << " done, " << failed << " failed\n";
    for (const WorkerRate &w : workers) {
        char rate[32];
        snprintf(rate, sizeof rate, "%.1f", w.jobs_per_minute);
        os << "  worker " << w.worker << ": " << w.done << " done, " << rate << " jobs/min\n";
    }
    if (queued + running == 0)
        os << "eta: nothing left\n";
    else if (eta_seconds)
        os << "eta: " << (int64_t)(*eta_seconds + 0.5) << " s at the last 10 minutes' rate\n";
    else
        os << "eta: unknown (no job finished in the last 10 minutes)\n";
    for (const auto &[id, error] : failures) os << "  failed job " << id << ": " << error << "\n";
    return os.str();
}

}  // namespace tessel::autosched
