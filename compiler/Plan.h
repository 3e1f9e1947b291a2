/** \file
 * plan(): the one front door from a graph to everything lowering needs. Every command
 * (`tessel compile`, `run`, `lib`, `tune`, `specialize`), the demo, GeluLayer, the benchmarks and
 * the peer worker plan through it, so the groups tuned are the groups run and shipped.
 *
 *   dsl::Graph (parsed or built with the C++ builder)
 *     simplify           fold constants, algebraic rules, reassociate (fast mode), CSE, DCE
 *     rematerialize      after the last CSE (which would merge clones back); decides on the memory
 *                        plan it would get, with the same in-place check as the final plan
 *     plan_fusion        with the target's limits and the sizes given
 *     assign_layouts     CPU targets, at this machine's measured rates when the database has them;
 *                        conversions it inserts are groups of their own (fusion again)
 *     compile budget     past PlanOptions::max_compiled_kernels distinct kernels, the elementwise
 *                        groups with the least work run as elementwise programs (CompileBudget.h)
 *     select schedules   ScheduleSelection: user -> database -> autoscheduler -> library default;
 *                        asked once per structure at the sizes: a repeated layer, or a group apart
 *                        from an earlier one only in scalar constants' values (unless the database
 *                        holds a record of its own), takes the earlier group's choice
 *     memory plan        BufferAssignment at the planning sizes, in-place checked per schedule
 *
 * Symbols without a size take kDefaultSymbolSize for the estimates and the memory plan; the
 * autoscheduler serves only groups whose every size is given.
 *
 *   PlannedProgram p = plan(graph, Halide::get_host_target(), {.symbols = {{"M", 16}}, .db = "t.db"});
 *   CompiledGraph program(p.graph, p.fusion, target, p.chooser());
 */
#pragma once

#include "compiler/CompileBudget.h"
#include "compiler/ScheduleSelection.h"
#include "dsl/analysis/BufferAssignment.h"
#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"
#include "dsl/passes/LayoutAssignment.h"
#include "dsl/passes/Rematerialize.h"
#include "lowering/CompiledGraph.h"
#include "support/PhaseTimes.h"

#include <Halide.h>

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace tessel {

struct PlanOptions {
    /** Sizes of the graph's symbols (--dim); each must name a symbol of the graph. */
    std::map<std::string, int64_t> symbols;
    bool simplify = true;
    bool remat = true;                     ///< rematerialize where it pays (dsl/passes/Rematerialize.h)
    std::optional<int64_t> memory_budget;  ///< bytes of planned arena; remat recomputes until it fits
    bool layouts = true;                   ///< assign layouts (CPU targets)
    /** Expected calls for the layout costs (a shape profile); empty: the planning sizes. */
    std::vector<std::pair<std::map<std::string, int64_t>, double>> layout_shapes;
    ScheduleSelectionOptions schedules;  ///< user schedule, database, measuring
    /** The layout pass's rates. Unset: this machine's, stored in schedules.db by `tessel db
     * probe`, else dsl::LayoutRates::defaults(); the plan's layout log says which. */
    std::optional<dsl::LayoutRates> layout_rates;
    /** Distinct kernels compiled at most; past it, the elementwise groups with the least work run
     * as elementwise programs (compiler/CompileBudget.h). Negative: no limit. */
    int64_t max_compiled_kernels = kDefaultMaxCompiledKernels;

    // Alternatives the benchmarks compare the planner's choices with.
    const dsl::FusionPolicy *fusion_policy = nullptr;  ///< nullptr: default_fusion_policy()
    std::set<std::string> recompute;                   ///< values (display names) rematerialized whatever the costs
    dsl::LayoutOptions::Conversions conversions = dsl::LayoutOptions::Conversions::Chosen;
};

/** Everything after planning, as values: the graph as it will be compiled, its fusion plan,
 * the decisions with their reasons, one schedule choice per group, and the memory plan. */
struct PlannedProgram {
    dsl::Graph graph;
    dsl::FusionPlan fusion;
    Halide::Target target;
    std::map<std::string, int64_t> symbols;  ///< the sizes given
    std::map<std::string, int64_t> sizes;    ///< every symbol (given, else kDefaultSymbolSize)
    std::optional<dsl::RematResult> remat;
    dsl::LayoutPlan layouts;
    CompileBudgetPlan budget;               ///< which groups run as elementwise programs, and why
    std::vector<ScheduleChoice> schedules;  ///< one per fusion.groups, same order
    dsl::BufferAssignment memory;           ///< at `sizes`, prepared values kept (as run() places them)
    PhaseTimes times;                       ///< each phase's wall time (tessel compile --time-report)

    /** The choices as CompiledGraph's chooser (by group name). */
    ScheduleChooser chooser() const;
    const ScheduleChoice &schedule_of(const dsl::FusionGroup &group) const;
    /** Fusion decisions, remat, layouts and schedules, as `tessel compile` prints them. */
    std::string to_string() const;
};

/** Plans `graph` for `target`. Throws std::invalid_argument for a --dim naming no symbol of the
 * graph, a user schedule that cannot be read or does not apply (without user_fallback). */
PlannedProgram plan(const dsl::Graph &graph, const Halide::Target &target, const PlanOptions &options = {});

/** Parses the graph text file at `path` (errors name file:line:col), then plan(). */
PlannedProgram plan_file(const std::string &path, const Halide::Target &target, const PlanOptions &options = {});

/** Schedule choices for every group of `program` on another target (a library compiled for
 * several targets shares one plan). */
std::vector<ScheduleChoice> select_schedules(const PlannedProgram &program, const Halide::Target &target,
                                             const ScheduleSelectionOptions &options);

/** The graph's shape symbols, sorted. */
std::set<std::string> graph_symbols(const dsl::Graph &g);

/** Every name in `sizes` must be a symbol of `g`: `--dim m=512` for a graph of M is a typo, not a
 * size to ignore. Throws std::invalid_argument listing the graph's symbols. */
void check_symbols(const dsl::Graph &g, const std::map<std::string, int64_t> &sizes);

}  // namespace tessel
