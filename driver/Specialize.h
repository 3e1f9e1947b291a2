/** \file
 * `tessel specialize`: which guarded variants the running example's kernel should carry for a
 * shape profile, from measured costs (autoscheduler/SpecializationPlanner.h does the choosing).
 *
 * For the layer the demo and benchmark ship (driver/GeluLayer.h) under a library schedule with
 * guarded variants, every variant is compiled on its own and measured by driver/VariantCosts.h
 * (JIT compile seconds, code bytes from its object, ms per call on the profiled shapes its guards
 * admit, variants interleaved call by call, results checked against the fallback). The planner
 * then picks, and the choice is checked by measurement: the plan's kernel (its variants in
 * dispatch order + the fallback), the fallback alone and the schedule with every variant are
 * each compiled whole and timed on the profile, interleaved; their measured expected totals give
 * the plan's regret against the best measured. `tessel lib --profile` plans any graph's groups
 * the same way (driver/KernelLibrary.h).
 */
#pragma once

#include "autoscheduler/SpecializationPlanner.h"

#include <ostream>
#include <string>

namespace tessel {

struct SpecializeOptions {
    std::string profile_file;  ///< shape profile (SpecializationPlanner.h text form: M, K, N)
    std::string schedule = "cpu_blocked";
    std::string target = "host";
    autosched::PlannerBudgets budgets;
    int repeats = 5;
};

/** Measures, plans, verifies; prints the report. Returns 0 (1 when the plan is infeasible). */
int specialize(const SpecializeOptions &options, std::ostream &out);

}  // namespace tessel
