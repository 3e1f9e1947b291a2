/** \file
 * `tessel tune FILE`: autoschedule every matmul+epilogue group of a graph on a set of shapes,
 * backed by the tuning database, and report workload coverage; and the schedule chooser that
 * `tessel compile`/`run` use (database hit, else the autoscheduler's model pick).
 */
#pragma once

#include "autoscheduler/Tuner.h"
#include "dsl/ir/Graph.h"
#include "lowering/GraphProgram.h"

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
    std::function<void(const autosched::Workload &, const autosched::TuneResult &, const dsl::Graph &, std::ostream &)>
        after_each;
};

/** Runs the tuner; returns 0 when every shape got a schedule. */
int run_tune(const TuneOptions &options, std::ostream &out);

/** The workload of a matmul+epilogue group at concrete symbol sizes (M, N of its output, K of
 * its first contraction), or nullopt when a size is unbound. */
std::optional<autosched::Workload> group_workload(const dsl::Graph &g, const lower::GroupSpec &group,
                                                  const std::map<std::string, int64_t> &symbols);

/** Autoschedules the group named `group_name` of `g` at `symbols`: a database hit, else the
 * model's pick, or (with `measure`) a measured tuning run. nullopt when the group is not a
 * 2-D matmul+epilogue group or a size is unbound. */
std::optional<autosched::TuneResult> autoschedule_group(const dsl::Graph &g, const std::string &graph_text,
                                                        const std::string &graph_name, const std::string &group_name,
                                                        const std::string &db, const std::string &target,
                                                        const std::map<std::string, int64_t> &symbols, bool measure,
                                                        std::ostream *log);

/** GELU(x @ w + bias) as graph text (symbolic M, K, N), in the given form and numeric mode. */
std::string gelu_mlp_graph_text(bool tanh_form, bool fast_mode);

/** Chooses a schedule for lowered matmul+epilogue groups from the tuning database at `db`
 * (exact key), else the autoscheduler's model pick; `measure` tunes on a miss instead. Used by
 * `tessel compile/run/demo` when no schedule is named. Other groups get the default. */
lower::ScheduleChooser autoschedule_chooser(const dsl::Graph &g, const std::string &graph_text,
                                            const std::string &graph_name, const std::string &db,
                                            const std::string &target, const std::map<std::string, int64_t> &symbols,
                                            bool measure, std::ostream *log);

}  // namespace tessel
