/** \file
 * `tessel compile` and `tessel run`: a graph file through the whole pipeline.
 *
 *   parse -> plan() (compiler/Plan.h: simplify, rematerialize, fusion, layouts, schedule
 *   selection, memory plan) -> one CompiledKernel per group (lowering/) -> JIT (run,
 *   intermediates placed by the memory plan) or files (compile).
 *
 * Schedules (compiler/ScheduleSelection.h): `--schedule NAME|FILE.json` applies to every group of
 * the kind it is for (a library entry's group, e.g. cpu_rows to reduction groups; a file's
 * "group" field, else matmul+epilogue); every other group gets its kind's library default.
 * Without `--schedule`, a group whose sizes are all given (--dim; `run` binds the rest to 64)
 * gets a tuning-database hit, else the autoscheduler's model pick (`--tune`: measured);
 * otherwise the library default for its kind and device (guarded variants or guarded tails
 * cover every shape). A `--schedule` that cannot be read (bad JSON, a field of the wrong type or
 * out of range) or does not apply to a group of its kind (a tile of 0, an unknown loop or func)
 * is an error naming the group and the step, unless `schedule_fallback` asks for the default
 * there instead (the reason is then printed with the group). Any other schedule that does not
 * fit falls back the same way. Each group's line names where its schedule came from and why.
 *
 * `--dim NAME=N` must name a symbol of the graph; an unknown one is an error listing them.
 */
#pragma once

#include "compiler/CompileBudget.h"

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>

namespace tessel {

struct GraphCompileOptions {
    std::string file;
    std::string target = "host";
    std::string out_dir = "tessel-out";
    /** Any of: dot, stmt, html, asm, lib (`<graph>.a` with every group and one runtime, a header
     * per function), obj, ptx, ptx-report, memplan (the memory plan as text, timeline SVG and
     * JSON; lib writes the JSON too). */
    std::set<std::string> emit = {"lib"};
    std::string schedule;  ///< library name or .json file; "" = tuning database / autoscheduler / library default
    std::map<std::string, int64_t> symbols;  ///< sizes for estimates (M=512 ...); with all sizes known the autoscheduler applies
    std::string db = "tessel-tuning.db";     ///< tuning database consulted when no schedule is named
    bool tune = false;                       ///< on a database miss, measure candidates instead of the model's pick
    bool remat = true;                       ///< rematerialize where it pays (dsl/passes/Rematerialize.h)
    std::optional<int64_t> memory_budget;    ///< bytes of planned arena; remat recomputes until it fits
    int64_t max_compiled_kernels = kDefaultMaxCompiledKernels;  ///< compiler/CompileBudget.h
    bool schedule_fallback = false;          ///< a `schedule` that does not apply: default schedule instead of an error
    std::set<std::string> donated;           ///< inputs the memory plan may write in place (a KV cache)
    /** Seconds the whole compile may take: checked before each group's files and each function
     * of the library (codegen/Compile.h compile_aot_library); past it the compile stops, keeps
     * what it wrote, lists what it did not, and returns kCompileBudgetSpent. */
    std::optional<double> compile_budget_seconds;
    bool time_report = false;  ///< print each phase's wall time at the end (support/PhaseTimes.h)
};

/** compile_graph's status when the compile budget ran out (what was done is on disk). */
constexpr int kCompileBudgetSpent = 3;

/** Compiles every group of the graph and writes the requested files; prints the fusion plan,
 * each group's schedule and the files written. Returns 0 on success, kCompileBudgetSpent when
 * the budget stopped it. */
int compile_graph(const GraphCompileOptions &options, std::ostream &out);

struct GraphRunOptions {
    std::string file;
    std::string target = "host";
    std::string schedule;                    ///< "" = tuning database hit, else the autoscheduler's model pick
    std::map<std::string, int64_t> symbols;  ///< unbound symbols default to 64
    std::string db = "tessel-tuning.db";
    std::string kernel_cache;        ///< "" = beside the database, "off", or a directory (codegen/KernelCache.h)
    bool tune = false;               ///< on a database miss, measure candidates
    std::set<std::string> donated;   ///< inputs the run may write in place (a KV cache)
    bool schedule_fallback = false;  ///< a `schedule` that does not apply: default schedule instead of an error
    uint64_t seed = 1;
    double tolerance = 1e-4;  ///< max |got - want| / (1 + |want|)
    bool remat = true;
    std::optional<int64_t> memory_budget;
    int64_t max_compiled_kernels = kDefaultMaxCompiledKernels;  ///< compiler/CompileBudget.h
};

/** Runs the graph on random inputs: the simplified graph in program order, its fused groups on
 * JIT-compiled kernels and every op outside kernels (print, assert, state, random draws, shape
 * code) in the interpreter; compares every output with the reference interpreter on the graph
 * as parsed, before any pass, so a wrong rewrite shows. Returns 0 when all outputs match within
 * the tolerance. */
int run_graph(const GraphRunOptions &options, std::ostream &out);

/** Known --emit names, for help and validation. */
const std::set<std::string> &graph_emit_kinds();

}  // namespace tessel
