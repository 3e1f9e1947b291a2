/** \file
 * Which guarded variants a kernel should carry, chosen from a shape profile under compile-cost
 * budgets (the kernel-library issue's planner). Pure planning: the costs come in as data (from
 * measurement or the tuning database) and nothing is compiled here.
 *
 * The model. A profile is a histogram: calls per shape (extents M, K, N...). A candidate is a
 * specialized variant — guards saying which shapes it may serve, and per shape its time per call
 * — with one-time costs: compile seconds, tuning seconds and code bytes. The fallback serves
 * every shape and is always kept. A plan is an ordered subset of candidates; a call is served
 * by the first chosen candidate whose guards hold and that has a time for the shape, else by the
 * fallback (the dispatch rule of sched::ScheduleSpec::pick_variant). Its expected total cost is
 *     sum over shapes of calls x time of the serving variant
 *   + sum over kept variants of compile / compiles_amortized_over + tuning / tunings_amortized_over
 * (a JIT compiles at every process start, so compiles_amortized_over = 1; a static library
 * compiles once per build). Budgets bound the kept variants' total compile seconds, tuning
 * seconds and code bytes, fallback included.
 *
 * The search. With at most kExhaustiveCandidates candidates every subset is scored (in the
 * candidates' given order, which is the dispatch order, most specific first); with more, a greedy
 * pass adds the candidate with the largest saving that fits the budgets until none saves. The
 * plan reports, beside its own total, two alternatives: the fallback alone, and every candidate
 * (one specialization per distinct shape when the candidates are that) — the latter marked when
 * it is over budget. A fallback that alone exceeds a budget makes the plan infeasible, with the
 * numbers. regret() compares a plan's measured total with the best measured alternative.
 *
 * Profiles as text: one shape per line, `M=1 K=4096 N=4096 calls=12000`; '#' starts a comment.
 */
#pragma once

#include "schedules/Schedule.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessel::autosched {

using Extents = std::map<std::string, long>;

struct ProfileEntry {
    Extents shape;
    double calls = 0;
};
using ShapeProfile = std::vector<ProfileEntry>;

/** Parses the text form above; throws std::invalid_argument naming the line and the problem. */
ShapeProfile parse_shape_profile(const std::string &text, const std::string &source = "<profile>");
std::string format_extents(const Extents &e);

struct VariantCosts {
    std::string name;
    std::vector<sched::Guard> guards;          ///< empty: any shape (the fallback's)
    std::map<Extents, double> seconds_per_call;  ///< measured on the shapes it may serve
    double compile_seconds = 0, tuning_seconds = 0;
    long long code_bytes = 0;
    /** Whether it serves `shape`: every guard holds and a time is known. */
    bool serves(const Extents &shape) const;
};

struct PlannerBudgets {
    std::optional<double> compile_seconds, tuning_seconds;
    std::optional<long long> code_bytes;
    double compiles_amortized_over = 1;   ///< process starts (JIT) or builds sharing one compile
    double tunings_amortized_over = 1;    ///< process starts sharing one tuning run
};

struct PlanTotals {
    double run_seconds = 0, one_time_seconds = 0;
    double compile_seconds = 0, tuning_seconds = 0;
    long long code_bytes = 0;
    bool within_budget = true;
    std::string over_budget;  ///< which budget and by how much
    double total() const { return run_seconds + one_time_seconds; }
};

struct SpecializationPlan {
    bool feasible = true;
    std::string infeasible_reason;
    std::vector<size_t> chosen;          ///< indices into the candidates, dispatch order
    std::map<Extents, std::string> served_by;  ///< profiled shape -> variant name
    PlanTotals totals, fallback_only, every_candidate;
    std::string search;                  ///< "exhaustive over N subsets" or "greedy"
    std::string to_string(const std::vector<VariantCosts> &candidates, const VariantCosts &fallback) const;
};

constexpr size_t kExhaustiveCandidates = 12;

/** Chooses the candidates to keep beside `fallback` for `profile` under `budgets`. The fallback
 * must have a time for every profiled shape (std::invalid_argument naming the shape otherwise). */
SpecializationPlan plan_specializations(const ShapeProfile &profile, const std::vector<VariantCosts> &candidates,
                                        const VariantCosts &fallback, const PlannerBudgets &budgets = {});

/** Totals of keeping exactly `chosen` (dispatch order) beside the fallback. */
PlanTotals plan_totals(const ShapeProfile &profile, const std::vector<VariantCosts> &candidates,
                       const std::vector<size_t> &chosen, const VariantCosts &fallback, const PlannerBudgets &budgets);

/** measured(plan) / min(measured alternatives) - 1: 0 when the plan is the best measured. */
double regret(double plan_measured_total, const std::vector<double> &alternatives_measured_totals);

}  // namespace tessel::autosched
