/** \file
 * `tessel tune FILE`: autoschedule every group of a graph (matmul+epilogue, elementwise and
 * reduction groups alike) on a set of shapes, backed by the tuning database, and report workload
 * coverage per shape class. Each set of sizes is planned through plan() (compiler/Plan.h), as
 * `tessel run` and `tessel lib` plan it, so the groups tuned — layouts, prepared weights and
 * rematerialized values included — are the groups they compile, and their lookups hit.
 */
#pragma once

#include "autoscheduler/Tuner.h"
#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"

#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace tessel {

struct TuneOptions {
    std::string file;
    /** "MxKxN" shapes; empty: the graph's sizes (--dim and static), and when those leave a
     * symbol unbound, the suite shapes that fit it. */
    std::vector<std::string> shapes;
    std::string suite;  ///< shape suite file ("" = the repository's bench/shapes.txt)
    /** Symbol sizes for every shape (--dim): alone, they bind every group they size; beside
     * --shapes, the sizes the MxKxN shapes do not bind. */
    std::map<std::string, int64_t> dims;
    std::string db = "tessel-tuning.db";
    std::string target = "host";
    bool explain = false;  ///< print each cost term for the top candidates
    int explain_top = 5;
    bool coverage = true;  ///< print the coverage report and calibration experiment
    autosched::TunerParams params;
    /** Write one job per group and shape to the server's queue (--db must be a URL) instead of
     * measuring here; `tessel worker`s measure them (driver/FleetTuning.h). */
    bool enqueue = false;
    std::string machine_class;  ///< with enqueue: only workers of this machine_identity() ("" = any)
    int max_attempts = 3;       ///< with enqueue: a job failing this often is marked failed
    /** With enqueue: wait until every job is done (or failed), then tune as without --enqueue,
     * which finds the workers' results in the database (nothing measured here). */
    bool wait = false;
    double wait_poll_seconds = 2;
    /** Called after each shape with its tuned schedule (the CLI's --compare runs Halide's
     * autoschedulers and the library beside it, in the same run). */
    std::function<void(const dsl::Graph &, const dsl::FusionGroup &, const std::map<std::string, int64_t> &symbols,
                       const autosched::Workload &, const autosched::TuneResult &, std::ostream &)>
        after_each;
};

/** Runs the tuner; returns 0 when every shape got a schedule. */
int run_tune(const TuneOptions &options, std::ostream &out);

}  // namespace tessel
