/** \file
 * Specialization glue of `tessel lib --profile` (driver/KernelLibrary.h): the profile's shapes
 * checked against the graph's symbols, and the variants each group keeps, measured on the profile
 * (driver/VariantCosts.h) and chosen under the budgets by autoscheduler/SpecializationPlanner.h.
 */
#pragma once

#include "autoscheduler/SpecializationPlanner.h"
#include "driver/KernelLibrary.h"
#include "dsl/ir/Graph.h"
#include "lowering/CompiledGraph.h"

#include <Halide.h>

#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace tessel {

/** The profile's shapes must bind exactly the graph's symbols; throws std::invalid_argument
 * naming `file`, the shape and the symbol otherwise. */
void check_profile_symbols(const autosched::ShapeProfile &profile, const std::set<std::string> &symbols, const std::string &file);

/** Measures every group's variants on the profile (on `measure_on`, a target this machine runs;
 * code bytes and compile seconds for every code target), plans under o.budgets and returns, by
 * group, the indices of the variants to keep. Prints the measured costs and the plan to `out`;
 * throws std::invalid_argument for a plan over budget. With o.db on a server, costs stored there
 * (measured by workers) are used instead of measuring; with o.enqueue, missing ones are enqueued
 * and nullopt returned (unless o.wait: then it waits for them). */
std::optional<std::map<std::string, std::vector<size_t>>> plan_library_variants(const dsl::Graph &g, const CompiledGraph &program,
                                                                                const autosched::ShapeProfile &profile,
                                                                                const Halide::Target &measure_on,
                                                                                const std::vector<Halide::Target> &code_targets,
                                                                                const KernelLibraryOptions &o, std::ostream &out);

}  // namespace tessel
