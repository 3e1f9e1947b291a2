#include "apps/Commands.h"
#include "driver/FleetTuning.h"

#include <iostream>

namespace tessel::apps {

void add_worker_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<WorkerOptions>();
    CLI::App *cmd = app.add_subcommand("worker",
                                       "Measure the tuning jobs queued on a PostgreSQL server (tessel tune --enqueue) for "
                                       "this host's target, one at a time, committing each result to the server");
    cmd->add_option("--db", o->db, "the server: postgresql://user@host:port/dbname")->required();
    cmd->add_option("--target", o->target, "the target to measure for (host: this CPU's full target string)")
        ->capture_default_str();
    cmd->add_option("--lease", o->lease_seconds, "seconds a claimed job is held without a heartbeat")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--poll", o->poll_seconds, "seconds between claims when nothing is queued")->capture_default_str();
    cmd->add_flag("--exit-when-idle", o->exit_when_idle, "stop when nothing is queued or running for this worker");
    cmd->add_option("--max-jobs", o->max_jobs, "stop after this many jobs");
    cmd->add_option("--reconnect", o->reconnect_seconds, "seconds to keep reconnecting to a server that went away")
        ->capture_default_str();
    // Hooks for tests/ and bench/queue_throughput.py, left out of --help (an empty group hides them).
    cmd->add_option("--stub-measure-ms", o->stub_measure_ms,
                    "tests and bench/ only: sleep this long instead of tuning, and store a stub record")
        ->group("");
    cmd->callback([&action, o] { action = [o] { return run_worker(*o, std::cout); }; });
}

void add_jobs_command(CLI::App &app, std::function<int()> &action) {
    auto db = std::make_shared<std::string>();
    auto stub = std::make_shared<int64_t>(0);
    CLI::App *cmd = app.add_subcommand("jobs",
                                       "The tuning job queue on a server: queued, running, done, failed; per-worker "
                                       "rates and an ETA");
    cmd->add_option("--db", *db, "the server: postgresql://user@host:port/dbname")->required();
    cmd->add_option("--enqueue-stub", *stub, "tests and bench/ only: first enqueue this many stub jobs for this host's target")
        ->group("");  // hidden from --help, as --stub-measure-ms
    cmd->callback([&action, db, stub] { action = [db, stub] { return show_jobs(*db, std::cout, std::cerr, *stub); }; });
}

}  // namespace tessel::apps
