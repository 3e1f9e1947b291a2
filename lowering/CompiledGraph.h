/** \file
 * CompiledGraph: a whole graph's fusion groups, each a CompiledKernel (lowering/CompiledKernel.h),
 * run group by group on the CPU (JIT) or written ahead of time, one set of files per group.
 *
 * Each group gets a schedule — the caller's choice through ScheduleChooser, else
 * `default_group_schedule` (a group-generic library schedule); a chosen schedule that does not
 * apply falls back to the default and the reason is kept in the group's note.
 *
 * Running. When every op of the graph is in a kernel (no effects, no shape code left after
 * simplification), run() follows the memory plan (dsl/analysis/BufferAssignment.h): one arena
 * per run (or the caller's workspace) holds every intermediate at its planned offset, a view
 * group runs no kernel (its result is a buffer descriptor over the operand's storage, with
 * permuted strides for a transpose), and an in-place group's output descriptor points at the
 * input it overwrites. Graph inputs and outputs are separate buffers of the caller. Every buffer
 * is in its value's layout and storage type (lowering/TensorBuffers.h).
 *
 * Weights are prepared once: on the first planned run, and again only when a weight changes
 * (another tensor, or its Tensor::version bumped), the weights are converted to the layout and
 * storage type kernels read and the prepared groups (FusionGroup::prepared: values computed from
 * weights alone) run; their results are kept and every later call reads them. Otherwise
 * the interpreter drives the run (as_external_groups): effects and shape code are interpreted
 * and each group's outputs come back as tensors.
 *
 * Shared kernels. Groups that are the same code (a repeated layer; compiler/KernelReuse.h decides)
 * can run on one kernel (share_kernels): each passes its own buffers, and groups that differ only
 * in scalar constants pass their own values to code that reads them from an argument. Under
 * JitOnFirstUse only the kernels run on are compiled: `tessel run` compiles each distinct
 * kernel once.
 */
#pragma once

#include "dsl/analysis/BufferAssignment.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/interp/Tensor.h"
#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"
#include "lowering/CompiledKernel.h"
#include "lowering/LowerToHalide.h"
#include "schedules/Schedule.h"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>

namespace tessel {

/** Picks a schedule for a planned group (given also its unscheduled lowering, for group-generic
 * library schedules), or nullopt for the default; may return one that does not apply (the graph
 * then falls back to the default and records why). */
using ScheduleChooser = std::function<std::optional<sched::ScheduleSpec>(const dsl::FusionGroup &, const lower::LoweredGroup &)>;

/** How run() places intermediates (planned runs only). */
struct ArenaOptions {
    dsl::ReusePolicy policy = dsl::ReusePolicy::Serial;
    /** Inputs whose storage the run may overwrite (in-place updates); the caller's tensors are
     * converted to kernel buffers first, so a donated tensor itself is never changed. */
    std::set<std::string> donated_inputs;
    /** The caller's workspace: at least memory_plan(...).planned_peak bytes, 64-byte aligned;
     * null: run() allocates the arena. */
    void *workspace = nullptr;
    size_t workspace_bytes = 0;
    /** Run groups the dependence graph leaves unordered at the same time, one thread each (their
     * kernels share Halide's thread pool); needs policy NoConcurrentReuse. */
    bool concurrent_groups = false;
    /** Time each group's kernel (and its cache copy, if any) into RunStats::group_seconds; the
     * groups run one after another. */
    bool time_groups = false;
    /** memory_plan(): the prepared groups' outputs are kept between calls, outside the arena
     * (what run() does). False: planned like any other value, for a caller that computes them
     * on every call (a generated library's whole-graph entry). */
    bool keep_prepared = true;
};

/** What a run did. */
struct RunStats {
    bool planned = false;  ///< placed by the memory plan (else interpreter-driven)
    std::string interpreted_because;
    int64_t arena_bytes = 0;  ///< planned peak used
    int kernels_run = 0, views = 0, in_place = 0, waves = 0;
    std::string printed;  ///< what `print` ops wrote (interpreter-driven runs)
    /** This call converted the weights and ran the prepared groups (first call, or a weight
     * changed: another tensor, or its version bumped), taking prepare_seconds. */
    bool prepared_weights = false;
    double prepare_seconds = 0;
    /** Wall time of this call's kernels, from the first kernel's start to the last one's end
     * (planned runs): no input or output conversion, no preparing. */
    double kernel_seconds = 0;
    /** With ArenaOptions::time_groups: seconds per group (plan order; 0 for a view or a prepared
     * group, which run nothing per call). */
    std::vector<double> group_seconds;
};

class CompiledGraph {
public:
    struct Group {
        /** This group lowered and scheduled: its arguments, its schedule. Compiled on
         * construction (Jit), or when a group first runs on it (JitOnFirstUse; see runner()). */
        std::unique_ptr<CompiledKernel> kernel;
        /** The group whose kernel runs this one: itself, or an earlier group whose kernel is
         * the same code (share_kernels). */
        size_t runs_on = 0;
        /** When groups share this group's code with their own constants (share_kernels): the
         * code, this group lowered with those constants read from an argument. */
        std::unique_ptr<CompiledKernel> lifted_code;
        /** When this group runs lifted code: the values it passes (lifted_code's order). */
        Halide::Buffer<float> constants;
        std::string schedule_note;  ///< why this schedule (e.g. fallback reason)
        /** When the chosen schedule did not apply: why (the ScheduleError naming the step), and
         * the group runs the default schedule instead. Empty otherwise. */
        std::string refused;
    };

    /** Lowers, schedules and compiles every group of `plan` (planned on `g`, which must outlive
     * this object) in plan order, a topological order of the groups. */
    CompiledGraph(const dsl::Graph &g, const dsl::FusionPlan &plan, const Halide::Target &target,
                  const ScheduleChooser &choose = {}, KernelBackend backend = KernelBackend::Jit);

    /** Runs the graph: its groups on their kernels, any other op in the interpreter (see
     * as_external_groups). `inputs` by input name; `symbols` binds every symbolic dimension.
     * Returns the graph outputs in Graph::outputs order. */
    std::vector<dsl::Tensor> run(const std::map<std::string, dsl::Tensor> &inputs, const std::map<std::string, int64_t> &symbols,
                                 const ArenaOptions &options = {}, RunStats *stats = nullptr) const;

    /** run() without conversions, for a caller that keeps kernel-ready buffers: `buffers` by
     * input and output name, each row-major in its value's storage type (an output left out is
     * allocated, or for an in-place cache write takes its donated cache's storage); `weights`
     * as tensors, prepared as run() does. Sizes come from the buffers. Donated inputs (options)
     * may be overwritten: a cache write given one buffer as its cache and its output updates it
     * in place. Planned runs only. */
    void run_buffers(const std::map<std::string, dsl::Tensor> &weights, const std::map<std::string, Halide::Buffer<>> &buffers,
                     const ArenaOptions &options = {}, RunStats *stats = nullptr) const;

    /** The memory plan a planned run uses for these symbol sizes, with each group's in-place
     * legality checked against its kernel's schedule (sched::writes_each_element_once). */
    dsl::BufferAssignment memory_plan(const std::map<std::string, int64_t> &symbols, const ArenaOptions &options = {}) const;
    /** Whether run() follows the memory plan; false with the op that prevents it in *why. */
    bool runs_planned(std::string *why = nullptr) const;
    const dsl::FusionPlan &plan() const { return plan_; }

    /** Count calls per binding of the graph's symbols from now on (thread-safe). */
    void record_shapes(bool on = true) { recording_ = on; }
    /** The calls counted so far, in the shape-profile text form `tessel specialize` reads
     * (autoscheduler/SpecializationPlanner.h): `M=1 K=4096 calls=12000`, one line per binding. */
    std::string shape_profile() const;

    /** The groups as the interpreter's external groups (dsl/interp/Interpreter.h): interpreting
     * the graph with these runs every group on its compiled kernel and everything else — effects
     * (print, assert, state, random draws) and shape code — in the interpreter, in program order. */
    std::vector<dsl::ExternalGroup> as_external_groups() const;

    const std::vector<Group> &groups() const { return groups_; }
    /** Each group's own kernel (Group::kernel), in plan order. */
    std::vector<const CompiledKernel *> kernels() const;
    /** The kernel group `i` runs on: its own, the earlier group's it shares, or that group's
     * lifted code. */
    const CompiledKernel &runner(size_t i) const;

    /** Runs group i on group same_code_as[i]'s kernel from now on: for a caller that found them
     * the same code (compiler/KernelReuse.h: same structure, schedule, target and argument
     * order, so the code takes the other group's buffers in its own argument order). Where
     * `lifted[i]` lists constants of group i, group same_code_as[i]'s code is lowered again with
     * its own lifted constants read from an argument (Group::lifted_code), and group i passes the
     * values of its own (lifted[i], in the same order; bit for bit the compiled-in results).
     * Under JitOnFirstUse a kernel no group runs on compiles nothing. Call it before the first
     * run. Throws std::invalid_argument when an entry is not an earlier group that runs its own
     * kernel with as many arguments, or lists another number of constants than its code's. */
    void share_kernels(const std::vector<size_t> &same_code_as, const std::vector<std::vector<dsl::ValueId>> &lifted = {});

private:
    const dsl::Graph &graph_;
    dsl::FusionPlan plan_;
    Halide::Target target_;
    KernelBackend backend_;
    std::vector<Group> groups_;
    std::atomic<bool> recording_{false};
    mutable std::mutex profile_lock_;
    mutable std::map<std::map<std::string, int64_t>, long long> calls_;
    /** Memory plans already made, by sizes, policy and donated inputs: a run at a known shape
     * plans nothing. */
    using PlanKey = std::tuple<std::map<std::string, int64_t>, dsl::ReusePolicy, std::set<std::string>>;
    mutable std::mutex plans_lock_;
    mutable std::map<PlanKey, std::shared_ptr<const dsl::BufferAssignment>> plans_;

    /** Weights and prepared values, keyed by each weight's (data address, size, version). */
    using PreparedKey = std::vector<std::tuple<const double *, int64_t, uint64_t>>;
    std::vector<dsl::ValueId> weights_;  ///< the graph's weights, program order (found once: keyed every call)
    struct Prepared {
        PreparedKey key;
        std::map<dsl::ValueId, Halide::Buffer<>> values;
        double seconds = 0;
    };
    mutable std::mutex prepared_lock_;
    mutable std::optional<Prepared> prepared_;
    std::map<dsl::ValueId, Halide::Buffer<>> prepared_values(const std::map<std::string, dsl::Tensor> &inputs,
                                                             const std::map<std::string, int64_t> &symbols,
                                                             RunStats &stats) const;

    /** Runs group i's kernel (runner(i)) on buffers in its arguments() order. */
    void run_group(size_t i, const std::vector<halide_buffer_t *> &buffers) const;
    /** Runs every per-call group over `storage` (inputs and prepared values in it; outputs and
     * intermediates placed by the memory plan unless already there). */
    void execute(std::map<dsl::ValueId, Halide::Buffer<>> &storage, const std::map<std::string, int64_t> &symbols,
                 const ArenaOptions &options, RunStats &stats) const;
    std::vector<dsl::Tensor> run_planned(const std::map<std::string, dsl::Tensor> &inputs, std::map<std::string, int64_t> symbols,
                                         const ArenaOptions &options, RunStats &stats) const;
};

/** Concrete shape of `v` under `symbols` (row-major, outermost first). */
std::vector<int64_t> concrete_shape(const dsl::Graph &g, dsl::ValueId v, const std::map<std::string, int64_t> &symbols);

}  // namespace tessel
