/** \file
 * Which guarded variants a kernel should carry, chosen from a shape profile under compile-cost
 * budgets (the kernel-library issue's planner). Pure planning: the costs come in as data (from
 * measurement or the tuning database) and nothing is compiled here.
 *
 * The model. A profile is a histogram: calls per shape (a binding of the graph's symbols, or the
 * extents M, K, N of one kernel). A program has one or more kernels (a library's fusion groups);
 * each kernel has a fallback, which serves every shape and is always kept, and candidates:
 * specialized variants, each with its guards (for the report) and its time per call on exactly
 * the profiled shapes its guards admit (whoever measures decides admission: guards are written
 * over the kernel's extents, which need not be the profile's names), with one-time costs:
 * compile seconds, tuning seconds and code bytes. A plan keeps, per kernel, an ordered subset of
 * its candidates; a call of that kernel is served by the first kept candidate that has a time
 * for the shape, else by its fallback (the dispatch rule of sched::ScheduleSpec::pick_variant).
 * Every profiled call runs every kernel once. The expected total cost is
 *     sum over kernels and shapes of calls x time of the serving variant
 *   + sum over kept variants of compile / compiles_amortized_over + tuning / tunings_amortized_over
 * (a JIT compiles at every process start, so compiles_amortized_over = 1; a static library
 * compiles once per build). Budgets bound the kept variants' total compile seconds, tuning
 * seconds and code bytes, fallback included.
 *
 * The search. With at most kExhaustiveCandidates candidates in all kernels every subset is scored
 * (in the candidates' given order, which is the dispatch order, most specific first); with more, a greedy
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
    std::vector<sched::Guard> guards;            ///< empty: any shape (the fallback's)
    std::map<Extents, double> seconds_per_call;  ///< measured on the profiled shapes it may serve
    double compile_seconds = 0, tuning_seconds = 0;
    long long code_bytes = 0;
    /** Whether it serves `shape`: a time is known for it. */
    bool serves(const Extents &shape) const { return seconds_per_call.count(shape) > 0; }
    std::string guards_text() const;  ///< "M == 1 && N >= 48", or "any shape"
};

/** One kernel's choice: its candidates, in dispatch order, and its fallback. */
struct KernelChoices {
    std::string kernel;  ///< a group's name; "" for a single-kernel plan
    std::vector<VariantCosts> candidates;
    VariantCosts fallback;
};

/** Kept candidates per kernel (indices into its candidates, dispatch order). */
using KeptVariants = std::vector<std::vector<size_t>>;

struct PlannerBudgets {
    std::optional<double> compile_seconds, tuning_seconds;
    std::optional<long long> code_bytes;
    double compiles_amortized_over = 1;  ///< process starts (JIT) or builds sharing one compile
    double tunings_amortized_over = 1;   ///< process starts sharing one tuning run
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
    KeptVariants chosen;                                    ///< per kernel
    std::vector<std::map<Extents, std::string>> served_by;  ///< per kernel: profiled shape -> variant name
    PlanTotals totals, fallback_only, every_candidate;
    std::string search;   ///< "exhaustive over N subsets" or "greedy"
    size_t kept() const;  ///< candidates kept in all kernels
    std::string to_string(const std::vector<KernelChoices> &kernels) const;
};

constexpr size_t kExhaustiveCandidates = 12;

/** Chooses, per kernel, the candidates to keep beside its fallback for `profile` under
 * `budgets`. Every fallback must have a time for every profiled shape (std::invalid_argument
 * naming the kernel and the shape otherwise). */
SpecializationPlan plan_specializations(const ShapeProfile &profile, const std::vector<KernelChoices> &kernels,
                                        const PlannerBudgets &budgets = {});

/** Totals of keeping exactly `chosen` (per kernel, dispatch order) beside the fallbacks. */
PlanTotals plan_totals(const ShapeProfile &profile, const std::vector<KernelChoices> &kernels, const KeptVariants &chosen,
                       const PlannerBudgets &budgets);

/** measured(plan) / min(measured alternatives) - 1: 0 when the plan is the best measured. */
double regret(double plan_measured_total, const std::vector<double> &alternatives_measured_totals);

}  // namespace tessel::autosched
