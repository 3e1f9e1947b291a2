/** \file
 * GraphProgram: a whole graph compiled group by group and run on the CPU by Halide's JIT,
 * or written ahead of time as one static library + header per group.
 *
 * Each group is lowered (LowerToHalide.h), given a schedule — the caller's choice through
 * ScheduleChooser, else `default_group_schedule` (a group-generic library schedule) — and
 * compiled once. Values that cross group
 * boundaries are real buffers, allocated per run from the concrete symbol sizes.
 */
#pragma once

#include "dsl/interp/Tensor.h"
#include "dsl/ir/Graph.h"
#include "lowering/LowerToHalide.h"
#include "schedules/GroupSchedules.h"
#include "schedules/Schedule.h"

#include <functional>
#include <map>
#include <optional>

namespace tessel::lower {

/** The group as group-generic schedules see it (schedules/GroupSchedules.h); `group` must
 * not be scheduled yet (its reduction loops are read from the Halide Funcs). */
sched::GroupShape group_shape(const LoweredGroup &group);

/** Library schedule `name` for `group`: group-generic entries (cpu_rows...) are generated
 * from its shape, fixed ones (matmul+epilogue) returned as they are. Throws
 * std::invalid_argument for an unknown name. */
sched::ScheduleSpec library_schedule_for(const std::string &name, const LoweredGroup &group,
                                         const Halide::Target &target);

/** The schedule a group gets when none is chosen or the chosen one does not apply: the
 * always-applicable group-generic library schedule for its kind and the target's device
 * (cpu_elementwise or cpu_rows; cuda_elementwise or cuda_rows). */
sched::ScheduleSpec default_group_schedule(const LoweredGroup &group, const Halide::Target &target);

/** Applies `steps` to `group`'s Funcs for `target` (the Halide calls happen in ApplySchedule). */
void apply_to_group(const std::vector<sched::Directive> &steps, LoweredGroup &group, const Halide::Target &target,
                    const std::string &schedule_name);

/** Picks a schedule for a group, or nullopt for the default; may return one that does not
 * apply (the program then falls back to the default and records why). */
using ScheduleChooser = std::function<std::optional<sched::ScheduleSpec>(const LoweredGroup &)>;

class GraphProgram {
public:
    struct CompiledGroup {
        GroupSpec spec;
        sched::ScheduleSpec schedule;
        std::string schedule_note;  ///< why this schedule (e.g. fallback reason)
        /** One lowering per schedule variant, then the fallback; each JIT-compiled. */
        std::vector<LoweredGroup> variants;
        std::vector<Halide::Pipeline> pipelines;
        double compile_seconds = 0;
        const LoweredGroup &lowered() const { return variants.back(); }
    };

    /** Lowers, schedules and (with `jit`, on CPU targets) JIT-compiles every group, in the
     * order given, which must be a topological order of the groups. Without `jit` the
     * scheduled pipelines are only ready for ahead-of-time compilation. */
    GraphProgram(const dsl::Graph &g, const std::vector<GroupSpec> &groups, const Halide::Target &target,
                 const ScheduleChooser &choose = {}, bool jit = true);

    /** Runs the graph. `inputs` by input name; `symbols` binds every symbolic dimension.
     * Returns the graph outputs in Graph::outputs order. */
    std::vector<dsl::Tensor> run(const std::map<std::string, dsl::Tensor> &inputs,
                                 const std::map<std::string, int64_t> &symbols) const;

    const std::vector<CompiledGroup> &groups() const { return groups_; }

private:
    const dsl::Graph &graph_;
    Halide::Target target_;
    std::vector<CompiledGroup> groups_;
};

/** Concrete shape of `v` under `symbols` (row-major, outermost first). */
std::vector<int64_t> concrete_shape(const dsl::Graph &g, dsl::ValueId v, const std::map<std::string, int64_t> &symbols);

}  // namespace tessel::lower
