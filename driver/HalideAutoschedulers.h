/** \file
 * Halide's own autoschedulers on a fusion group of the graph being tuned, beside Tessel's
 * schedules, for `tessel tune --compare`: Mullapudi2016, Adams2019 and Li2018 on CPU targets,
 * Anderson2021 on CUDA targets. Every contender schedules the same lowered pipeline (lowering/
 * LowerToHalide.h) of the same planned group and runs on the same buffers, so the table compares
 * schedules and nothing else. A driver-level job: it compiles, runs and times whole kernels.
 *
 * The plugins are the shared libraries in Halide 21's Python wheel, next to libHalide.so
 * (`.venv/.../halide/lib64/libautoschedule_<name>.so`); the directory is found at run time from
 * the loaded libHalide.so (dladdr), with the build's Halide directory as a fallback. Adams2019
 * runs with the baseline cost-model weights compiled into the plugin (no weights file needed).
 *
 *   HalideScheduledGroup k = schedule_group_with_halide("Mullapudi2016", g, group, {{"M", 512}, ...}, t);
 *   compare_autoschedulers(g, group, {{{"M", 512}, {"K", 1024}, {"N", 4096}}}, std::cout);
 */
#pragma once

#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"
#include "schedules/Schedule.h"

#include <Halide.h>

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace tessel::autosched {

using Symbols = std::map<std::string, int64_t>;

/** Halide's autoscheduler names, in table order. */
const std::vector<std::string> &halide_autoscheduler_names();

/** Directory holding libHalide.so and the autoscheduler plugins ("" if unknown). */
std::string halide_plugin_directory();

/** Loads libautoschedule_<lowercase name>.so once per process. Returns "" on success, else why
 * it could not be loaded (file missing, dlopen error). */
std::string load_halide_autoscheduler(const std::string &name);

/** The group's lowered pipeline scheduled by one Halide autoscheduler and JIT-compiled. */
struct HalideScheduledGroup {
    std::string autoscheduler;
    bool ok = false;
    std::string message;          ///< why not ok (plugin missing, wrong device kind, Halide error)
    double search_seconds = 0;    ///< apply_autoscheduler()
    double compile_seconds = 0;   ///< compile_to_callable()
    std::string schedule_source;  ///< the schedule it chose, as Halide C++
    Halide::Callable callable;    ///< the group's inputs, then outputs (CompiledKernel::arguments() order)
};

/** Lowers `group` of `g` afresh, sets estimates at `symbols` on every input and output, runs
 * `autoscheduler` with "parallelism" = this machine's hardware threads (plus `extra`
 * parameters, which win), and JIT-compiles the result. Anderson2021 is refused for targets
 * without CUDA (it schedules GPUs only). Never throws for Halide errors. */
HalideScheduledGroup schedule_group_with_halide(const std::string &autoscheduler, const dsl::Graph &g,
                                                const dsl::FusionGroup &group, const Symbols &symbols,
                                                const Halide::Target &target,
                                                const std::map<std::string, std::string> &extra = {});

/** One row of the comparison: a contender on one shape. */
struct ContenderResult {
    std::string name;   ///< "Mullapudi2016", ..., "tessel:cpu_blocked"
    std::string shape;  ///< "M=512 K=1024 N=4096"
    bool ok = false;
    std::string message;
    double search_seconds = 0;  ///< 0 for library schedules
    double compile_seconds = 0;
    double median_ms = 0;
    double gflops = 0;            ///< 2 M K N / median (0 for groups without a contraction)
    double max_rel_error = 0;     ///< vs the reference kernel's outputs
    double spread = 0;            ///< (75th - 25th percentile) / median of its rounds
    std::vector<double> samples;  ///< ms, one per timed round (round i of every contender is the same round)
};

struct CompareOptions {
    Halide::Target target = Halide::get_host_target();
    int repeats = 5;                          ///< timed rounds after one warm-up round, contenders interleaved
    std::vector<std::string> autoschedulers;  ///< empty = all of halide_autoscheduler_names()
    std::vector<std::string> tessel_schedules = {"cpu_blocked"};  ///< library names, same run
    /** Further Tessel schedules by label (e.g. "tuned" for the autoscheduler's pick), same run. */
    std::vector<std::pair<std::string, sched::ScheduleSpec>> tessel_specs;
};

/** Every contender on one shape, on the same random inputs (seeds 1, 2, ... per input): each
 * Halide autoscheduler, then each Tessel schedule (compiled by CompiledKernel, as shipped). Each
 * contender's outputs are checked against the group's default library schedule (itself checked
 * against the reference interpreter by the tests). A contender that cannot run, or computes
 * something else, has ok == false and a message. */
std::vector<ContenderResult> benchmark_contenders(const dsl::Graph &g, const dsl::FusionGroup &group, const Symbols &symbols,
                                                  const CompareOptions &options = {});

/** Runs benchmark_contenders at each symbol binding and prints one table: contender, search s,
 * compile s, median ms, GFLOP/s, and the speed relative to the best Halide autoscheduler; the
 * reasons for contenders that could not run follow the table. Returns 0 when every Tessel
 * schedule and at least one Halide autoscheduler ran and verified, else 1. */
int compare_autoschedulers(const dsl::Graph &g, const dsl::FusionGroup &group, const std::vector<Symbols> &shapes,
                           std::ostream &out, const CompareOptions &options = {});

}  // namespace tessel::autosched
