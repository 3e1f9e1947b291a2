/** \file
 * The tuning job queue on the PostgreSQL server (the 'queue' component beside the records of
 * PostgresTuningDatabase.h): `tessel tune --enqueue` writes jobs instead of measuring, `tessel
 * worker`s on many hosts claim and measure them, `tessel jobs` shows the progress.
 *
 * A job is one group at one shape: the key its result must be stored under (TuningKey), the
 * target and machine class that may measure it, the Tessel build that computed the key, and a
 * payload the worker plans and tunes from (the graph's text, the symbols, the group, the
 * tuner's budget). States: queued -> running -> done, or failed.
 *
 * Exactly once: claim() takes the oldest claimable job with SELECT ... FOR UPDATE SKIP LOCKED
 * (two workers never take one row) and sets a lease (server clock) and a new lease token;
 * heartbeat() renews the lease while the job runs; finish() stores the results and ends the job
 * in one transaction, and only while the token is still the job's. A worker that dies or stops
 * heartbeating loses the job when its lease expires: the next claim takes it again with a new
 * token, and the old worker's finish() is refused (JobLost). So every job ends done once, with
 * one set of results, whatever is killed when. A job that fails (fail(), or its lease expiring)
 * max_attempts times is marked failed with the last error.
 *
 * Claims match exactly: a worker takes only jobs for its target string (features included: an
 * AVX2 host never measures for AVX-512), for its machine class or for any class (""), and of its
 * own build (the key's versions), so the result it commits is the key's. finish() refuses a
 * result whose key is not the job's, or of another key schema version.
 *
 * Legal from one thread per object (it holds one connection); workers heartbeat from a second
 * object on their own connection.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autoscheduler/PostgresTuningDatabase.h"
#include "autoscheduler/TuningKey.h"
#include "autoscheduler/TuningRecord.h"

namespace tessel::autosched {

/** finish() or fail() for a job this worker no longer holds (its lease expired and another
 * worker claimed it, or it was ended). The results are discarded, nothing stored. */
class JobLost : public TuningDatabaseError {
public:
    using TuningDatabaseError::TuningDatabaseError;
};

/** What to measure, as enqueued. */
struct JobSpec {
    TuningKey key;              ///< the key the result is stored under
    std::string machine_class;  ///< "" = any host of the target; else machine_identity()
    nlohmann::json payload;     ///< what the worker plans and tunes (driver/FleetTuning.h)
    int max_attempts = 3;
};

/** Who claims: jobs are matched on all three. */
struct WorkerIdentity {
    std::string name;           ///< "host:pid", shown by `tessel jobs`
    std::string target;         ///< the full Halide target string this worker measures for
    std::string machine_class;  ///< machine_identity()
};

struct ClaimedJob {
    int64_t id = 0;
    int64_t lease_token = 0;
    int attempt = 0;  ///< 1 for the first claim
    JobSpec spec;
};

struct WorkerRate {
    std::string worker;
    int64_t done = 0;
    double jobs_per_minute = 0;
};

struct QueueStatus {
    int64_t queued = 0, running = 0, done = 0, failed = 0;
    std::vector<WorkerRate> workers;  ///< workers that finished a job, most productive first
    /** Seconds until queued + running jobs are done at the recent rate; nullopt: no rate yet. */
    std::optional<double> eta_seconds;
    std::vector<std::pair<int64_t, std::string>> failures;  ///< failed jobs' ids and last errors (up to 10)
    std::string to_string() const;
};

/** "tessel 0.1.0 halide 21.0.0 key 1": the versions a key of this build carries. */
std::string build_of(const TuningKey &key);

class JobQueue {
public:
    /** Connects to `url` and creates or migrates the tuning and queue components. */
    explicit JobQueue(const std::string &url);

    /** Adds the jobs whose key has no queued, running or done job already. Returns how many were
     * added. One transaction. */
    int64_t enqueue(const std::vector<JobSpec> &jobs);

    /** The oldest claimable job for `who` (queued, or running with an expired lease and attempts
     * left), now running under a new lease of `lease_seconds`; nullopt when there is none. Jobs
     * whose lease expired with no attempts left are marked failed first. */
    std::optional<ClaimedJob> claim(const WorkerIdentity &who, double lease_seconds);
    /** Renews the lease; false when the job is no longer this claim's (lease lost). */
    bool heartbeat(const ClaimedJob &job, double lease_seconds);
    /** Stores `results` and marks the job done, in one transaction. Throws JobLost when the claim
     * is no longer the job's, TuningDatabaseError (nothing stored, the job still running) for a
     * result whose key or key schema version is not the job's. Idempotent for a claim that
     * already finished (a retry after the connection dropped during COMMIT). */
    void finish(const ClaimedJob &job, const std::vector<TuningRecord> &results);
    /** finish() for a variant-costs job (driver/FleetVariantCosts.h): stores `costs` under the
     * job's key in variant_costs and ends the job, in one transaction, under the same checks. */
    void finish_costs(const ClaimedJob &job, const nlohmann::json &costs, const std::string &worker);
    /** The variant costs stored under `key`, or nullopt. */
    std::optional<nlohmann::json> variant_costs(const TuningKey &key);
    /** Ends this attempt with `error`: back to the queue, or failed when no attempts are left.
     * Throws JobLost when the claim is no longer the job's. */
    void fail(const ClaimedJob &job, const std::string &error);

    /** Jobs that no worker may claim now and none will: nothing queued or running for `who`. */
    bool idle_for(const WorkerIdentity &who);
    QueueStatus status();
    /** The counts of the latest job of each of `keys` (keys without a job are not counted), and
     * the failed ones' errors: what an enqueuing command waits on. */
    QueueStatus status_of(const std::vector<TuningKey> &keys);

    PgConnection &connection() { return store_.connection(); }
    PostgresTuningDatabase &store() { return store_; }

private:
    bool lock_for_finish(const ClaimedJob &job, const std::string &where);
    PostgresTuningDatabase store_;
};

}  // namespace tessel::autosched
