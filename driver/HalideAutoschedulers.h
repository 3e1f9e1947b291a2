/** \file
 * Halide's own autoschedulers on the same GELU(x @ w + bias) algorithm (algorithms/Gelu.h),
 * for the comparison the autoscheduler issue asks for: Mullapudi2016, Adams2019 and Li2018 on
 * CPU targets, Anderson2021 on CUDA targets.
 *
 * The plugins are the shared libraries in Halide 21's Python wheel, next to libHalide.so
 * (`.venv/.../halide/lib64/libautoschedule_<name>.so`); the directory is found at run time from
 * the loaded libHalide.so (dladdr), with the build's Halide directory as a fallback. Adams2019
 * runs with the baseline cost-model weights compiled into the plugin (no weights file needed).
 *
 *   HalideScheduledGelu k = schedule_gelu_with_halide("Mullapudi2016", {512, 1024, 4096},
 *                                                     parse_target("host"));
 *   if (k.ok) k.callable(x, w, bias, y);
 *   compare_autoschedulers({{512, 1024, 4096}, {1, 4096, 4096}}, std::cout);
 */
#pragma once

#include "algorithms/Gelu.h"
#include "schedules/Schedule.h"

#include <Halide.h>

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace tessel::autosched {

/** A GEMM shape: x f32[M,K], w f32[K,N]. */
struct GemmShape {
    int M = 1, K = 1, N = 1;
};

/** Halide's autoscheduler names, in table order. */
const std::vector<std::string> &halide_autoscheduler_names();

/** Directory holding libHalide.so and the autoscheduler plugins ("" if unknown). */
std::string halide_plugin_directory();

/** Loads libautoschedule_<lowercase name>.so once per process. Returns "" on success, else why
 * it could not be loaded (file missing, dlopen error). */
std::string load_halide_autoscheduler(const std::string &name);

/** The GELU MLP scheduled by one Halide autoscheduler and JIT-compiled. */
struct HalideScheduledGelu {
    std::string autoscheduler;
    bool ok = false;
    std::string message;           ///< why not ok (plugin missing, wrong device kind, Halide error)
    double search_seconds = 0;     ///< apply_autoscheduler()
    double compile_seconds = 0;    ///< compile_to_callable()
    std::string schedule_source;   ///< the schedule it chose, as Halide C++
    Halide::Callable callable;     ///< (x Buffer(K,M), w Buffer(N,K), bias Buffer(N), y Buffer(N,M)) -> int
};

/** Defines the algorithm afresh, sets estimates for `shape` on x, w, bias (dim().set_estimate)
 * and y (set_estimates), runs `autoscheduler` with "parallelism" = this machine's hardware
 * threads (plus `extra` parameters, which win), and JIT-compiles the result. Anderson2021 is
 * refused for targets without CUDA (it schedules GPUs only). Never throws for Halide errors. */
HalideScheduledGelu schedule_gelu_with_halide(const std::string &autoscheduler, const GemmShape &shape,
                                              const Halide::Target &target, GeluForm form = GeluForm::Tanh,
                                              NumericMode mode = NumericMode::Fast,
                                              const std::map<std::string, std::string> &extra = {});

/** One row of the comparison: a contender on one shape. */
struct ContenderResult {
    std::string name;          ///< "Mullapudi2016", ..., "tessel:cpu_blocked"
    GemmShape shape;
    bool ok = false;
    std::string message;
    double search_seconds = 0; ///< 0 for library schedules
    double compile_seconds = 0;
    double median_ms = 0;
    double gflops = 0;         ///< 2 M K N / median
    double max_rel_error = 0;  ///< vs the float64 reference on sampled rows
};

struct CompareOptions {
    std::string target = "host";
    int repeats = 5;           ///< timed runs after one warm-up (driver/Timing.h)
    GeluForm form = GeluForm::Tanh;
    NumericMode mode = NumericMode::Fast;
    std::vector<std::string> autoschedulers;  ///< empty = all of halide_autoscheduler_names()
    std::vector<std::string> tessel_schedules = {"cpu_blocked"};  ///< library names, same run
    /** Further Tessel schedules by label (e.g. "tuned" for the autoscheduler's pick), same run. */
    std::vector<std::pair<std::string, sched::ScheduleSpec>> tessel_specs;
    int verify_rows = 4;       ///< rows of y checked against the float64 reference
};

/** Every contender on one shape, on the same random inputs (seed 1): each Halide autoscheduler,
 * then each Tessel library schedule. A contender that cannot run has ok == false and a message. */
std::vector<ContenderResult> benchmark_gelu_contenders(const GemmShape &shape, const CompareOptions &options = {});

/** Runs benchmark_gelu_contenders on each shape and prints one table: contender, search s,
 * compile s, median ms, GFLOP/s, and the speed relative to the best Halide autoscheduler; the
 * reasons for contenders that could not run follow the table. Returns 0 when every Tessel
 * schedule and at least one Halide autoscheduler ran and verified, else 1. */
int compare_autoschedulers(const std::vector<GemmShape> &shapes, std::ostream &out, const CompareOptions &options = {});

}  // namespace tessel::autosched
