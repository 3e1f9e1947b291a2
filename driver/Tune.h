/** \file
 * `tessel tune FILE`: autoschedule every matmul+epilogue group of a graph on a set of shapes,
 * backed by the tuning database, and report workload coverage; and the schedule chooser that
 * `tessel compile`/`run` use (database hit, else the autoscheduler's model pick).
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
    /** "MxKxN" shapes; empty: the graph's fixed shape, else the suite shapes that fit it. */
    std::vector<std::string> shapes;
    std::string suite;      ///< shape suite file ("" = the repository's bench/shapes.txt)
    std::string db = "tessel-tuning.db";
    std::string target = "host";
    bool explain = false;   ///< print each cost term for the top candidates
    int explain_top = 5;
    bool coverage = true;   ///< print the coverage report and calibration experiment
    autosched::TunerParams params;
    /** Called after each shape with its tuned schedule (the CLI's --compare runs Halide's
     * autoschedulers and the library beside it, in the same run). */
    std::function<void(const dsl::Graph &, const dsl::FusionGroup &, const std::map<std::string, int64_t> &symbols,
                       const autosched::Workload &, const autosched::TuneResult &, std::ostream &)>
        after_each;
};

/** Runs the tuner; returns 0 when every shape got a schedule. */
int run_tune(const TuneOptions &options, std::ostream &out);

/** The workload of a matmul+epilogue group at concrete symbol sizes (its GroupExtents M, K, N
 * plus the epilogue's cost), or nullopt when a size is unbound or the group has no M, K or N. */
std::optional<autosched::Workload> group_workload(const dsl::Graph &g, const dsl::FusionGroup &group,
                                                  const std::map<std::string, int64_t> &symbols);

/** Autoschedules the planned `group` of `g` at `symbols`: a database hit, else the model's pick,
 * or (with `measure`) a measured tuning run. nullopt when the group is not a 2-D matmul+epilogue
 * group or a size is unbound. */
std::optional<autosched::TuneResult> autoschedule_group(const dsl::Graph &g, const dsl::FusionGroup &group,
                                                        const std::string &db, const Halide::Target &target,
                                                        const std::map<std::string, int64_t> &symbols, bool measure,
                                                        std::ostream *log);

}  // namespace tessel
