/** \file
 * `tessel worker` and `tessel jobs`: measuring the server's queued tuning jobs
 * (autoscheduler/JobQueue.h) on this host, and showing the queue's progress. `tessel tune
 * --enqueue` (driver/Tune.h) writes the jobs.
 *
 * A worker claims one job at a time for its target and machine class, renews the job's lease
 * from a second connection while it measures (heartbeat), and commits the results and the job's
 * end in one transaction. Measuring a job is what `tessel tune` does for one group at one shape:
 * the payload's graph is planned through plan() at the payload's sizes, the key is computed again
 * and must be the job's (else the job fails: nothing is stored under a key it was not measured
 * for), and the tuner measures candidates in the isolated tessel-measure child. A job that throws
 * goes back to the queue (or fails after its attempts); a lost lease discards the result. A lost
 * connection (the server restarting) is retried until `reconnect_seconds` pass. A variant-costs
 * job (`tessel lib --profile --enqueue`, driver/FleetVariantCosts.h) is measured as `tessel lib
 * --profile` measures a group's variants, and its costs stored on the server.
 *
 * The stub measurer (WorkerOptions::stub_measure_ms, `--stub-measure-ms`) replaces the tuning by
 * a sleep of fixed cost and a record naming the worker: for the queue's tests and its throughput
 * benchmark, never for real results.
 */
#pragma once

#include <ostream>
#include <string>

namespace tessel {

struct WorkerOptions {
    std::string db;               ///< postgresql://... (required)
    std::string target = "host";  ///< the target this worker measures for ("host": this CPU's)
    double lease_seconds = 60;    ///< a job's lease; renewed every third of it
    double poll_seconds = 2;      ///< wait between claims when nothing is claimable
    bool exit_when_idle = false;  ///< stop when nothing is queued or running for this worker
    int64_t max_jobs = -1;        ///< stop after this many jobs (-1: no limit)
    double reconnect_seconds = 120;
    double stub_measure_ms = -1;  ///< >= 0: the stub measurer (tests, bench/)
};

/** Runs the worker loop; returns 0 when it stopped as asked, 1 on an error it cannot wait out
 * (bad URL, refused authentication, the server gone past reconnect_seconds). Logs one line per
 * job to `out`. */
int run_worker(const WorkerOptions &options, std::ostream &out);

/** Prints the queue's counts, per-worker rates, the ETA and the failures (QueueStatus). With
 * `stub_jobs` > 0, first enqueues that many stub jobs for this host's target (for the stub
 * measurer: bench/queue_throughput.py). */
int show_jobs(const std::string &db, std::ostream &out, std::ostream &err, int64_t stub_jobs = 0);

}  // namespace tessel
