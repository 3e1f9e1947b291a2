/** \file
 * `tessel tune FILE`: autoschedule every group of a graph (matmul+epilogue, elementwise and
 * reduction groups alike) on a set of shapes, backed by the tuning database, and report workload
 * coverage per shape class; and the schedule chooser that `tessel compile`/`run` use (database
 * hit, else the autoscheduler's model pick).
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

namespace tessel::lower {
struct LoweredGroup;
}

namespace tessel {

struct TuneOptions {
    std::string file;
    /** "MxKxN" shapes; empty: the graph's fixed shape, else the suite shapes that fit it. */
    std::vector<std::string> shapes;
    std::string suite;      ///< shape suite file ("" = the repository's bench/shapes.txt)
    /** Symbol sizes for every shape (--dim): the sizes of groups the MxKxN shapes do not bind. */
    std::map<std::string, int64_t> dims;
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

/** The workload of a group at concrete symbol sizes: a matmul+epilogue group's GroupExtents M,
 * K, N plus the epilogue's cost (nullopt when it has no M, K or N); any other kind's GroupWork
 * (autoscheduler/GroupKindSpace.h). nullopt when a size is unbound. `lowered`: the group already
 * lowered and not yet scheduled (CompiledGraph's probe), read instead of lowering it again. */
std::optional<autosched::Workload> group_workload(const dsl::Graph &g, const dsl::FusionGroup &group,
                                                  const std::map<std::string, int64_t> &symbols,
                                                  const lower::LoweredGroup *lowered = nullptr);

/** Autoschedules the planned `group` of `g` at `symbols`: a database hit, else the model's pick,
 * or (with `measure`) a measured tuning run. nullopt when group_workload has none. */
std::optional<autosched::TuneResult> autoschedule_group(const dsl::Graph &g, const dsl::FusionGroup &group,
                                                        const std::string &db, const Halide::Target &target,
                                                        const std::map<std::string, int64_t> &symbols, bool measure,
                                                        std::ostream *log, const lower::LoweredGroup *lowered = nullptr);

}  // namespace tessel
