/** \file
 * CompiledGraph: a whole graph's fusion groups, each a CompiledKernel (lowering/CompiledKernel.h),
 * run group by group on the CPU (JIT) or written ahead of time, one set of files per group.
 *
 * Each group gets a schedule — the caller's choice through ScheduleChooser, else
 * `default_group_schedule` (a group-generic library schedule); a chosen schedule that does not
 * apply falls back to the default and the reason is kept in the group's note. Values that cross
 * group boundaries are real buffers, allocated per run from the concrete symbol sizes.
 */
#pragma once

#include "dsl/interp/Interpreter.h"
#include "dsl/interp/Tensor.h"
#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"
#include "lowering/CompiledKernel.h"
#include "lowering/LowerToHalide.h"
#include "schedules/Schedule.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>

namespace tessel {

/** Picks a schedule for a planned group (given also its unscheduled lowering, for group-generic
 * library schedules), or nullopt for the default; may return one that does not apply (the graph
 * then falls back to the default and records why). */
using ScheduleChooser =
    std::function<std::optional<sched::ScheduleSpec>(const dsl::FusionGroup &, const lower::LoweredGroup &)>;

class CompiledGraph {
public:
    struct Group {
        std::unique_ptr<CompiledKernel> kernel;
        std::string schedule_note;  ///< why this schedule (e.g. fallback reason)
    };

    /** Lowers, schedules and compiles every group of `plan` (planned on `g`, which must outlive
     * this object) in plan order, a topological order of the groups. */
    CompiledGraph(const dsl::Graph &g, const dsl::FusionPlan &plan, const Halide::Target &target,
                  const ScheduleChooser &choose = {}, KernelBackend backend = KernelBackend::Jit);

    /** Runs the graph: its groups on their kernels, any other op in the interpreter (see
     * as_external_groups). `inputs` by input name; `symbols` binds every symbolic dimension.
     * Returns the graph outputs in Graph::outputs order. */
    std::vector<dsl::Tensor> run(const std::map<std::string, dsl::Tensor> &inputs,
                                 const std::map<std::string, int64_t> &symbols) const;

    /** The groups as the interpreter's external groups (dsl/interp/Interpreter.h): interpreting
     * the graph with these runs every group on its compiled kernel and everything else — effects
     * (print, assert, state, random draws) and shape code — in the interpreter, in program order. */
    std::vector<dsl::ExternalGroup> as_external_groups() const;

    const std::vector<Group> &groups() const { return groups_; }

private:
    const dsl::Graph &graph_;
    std::vector<Group> groups_;
};

/** Concrete shape of `v` under `symbols` (row-major, outermost first). */
std::vector<int64_t> concrete_shape(const dsl::Graph &g, dsl::ValueId v, const std::map<std::string, int64_t> &symbols);

}  // namespace tessel
