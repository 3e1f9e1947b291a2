/** \file
 * CompiledKernel: one fusion group compiled under one schedule, for one target. It is the one
 * component every command goes through — `tessel compile`, `tessel run`, `tessel demo`,
 * `make bench`, the tuner's measuring child, the tuner's CUDA check, the PTX report and the
 * tests — so what is benchmarked and tuned is exactly what ships.
 *
 * For each guarded variant of the ScheduleSpec, then its fallback, it lowers the group afresh
 * (lowering/LowerToHalide.h: schedules mutate Funcs), applies the variant's steps (the only
 * Halide scheduling calls are in schedules/ApplySchedule), and compiles the pipeline:
 *  - KernelBackend::Jit: a Halide Callable per variant (a GPU target needs a GPU to run); run() picks the first
 *    variant whose guards hold for the buffers' extents (GroupExtents: M, K, N) and calls it.
 *    With the kernel cache on (codegen/KernelCache.h), a CPU variant compiled by an earlier
 *    process is loaded instead of compiled (Variant::from_cache), keyed by the printed graph,
 *    the group, the variant's schedule, the target and the build;
 *  - KernelBackend::JitOnFirstUse: as Jit, but each variant is compiled (or loaded from the
 *    cache) when run() first picks it, so a command that serves one shape does not wait for
 *    the variants of others (`tessel run`, `tessel demo`: a cold first result). Lowering and
 *    scheduling still happen up front, so a schedule that does not apply fails construction.
 *    Concurrent first calls compile a variant once; a failed compile is tried again next call;
 *  - KernelBackend::AheadOfTime: nothing is compiled yet; write_files() emits a static library
 *    and header (or object, assembly, statement, PTX) per variant, and ptx_report() assembles
 *    each variant's PTX with ptxas and judges it against one set of PtxLimits.
 * Halide errors at any step are reported as CompileError in Tessel's words with Halide's own
 * message attached; a schedule that does not apply throws sched::ScheduleError.
 *
 * Numeric mode `exact` keeps every reduction in program order: a guarded variant that splits a
 * reduction into partial sums (an rfactor step: split-K, vector partial sums) is left out, with a
 * note, and the next variant whose guards hold serves its shapes; a fallback that does so is
 * refused by ApplySchedule (ScheduleError naming the step and the mode).
 *
 * `only_for` compiles just the variant the dispatcher would pick for those extents (what the
 * measuring child needs: one shape, no time spent on variants it will not run); run() then
 * refuses buffers whose extents that variant's guards do not cover.
 *
 * A schedule with `program` set (sched::ScheduleSpec::program) compiles nothing: the group runs
 * as an elementwise program the runtime interprets (lowering/ElementwiseProgram.h), one variant
 * "elementwise program"; ahead of time it is a C function of the same signature over the
 * program as data (aot_functions), and its statement file is the program's text.
 *
 * `constant_arguments` lowers those scalar constants of the group as reads of a constants
 * argument (lower::LowerOptions): the kernel is then the code of every group that differs from
 * this one only in their values (compiler/KernelReuse.h), and run() takes the values to use.
 *
 * Example:
 *   CompiledKernel k(graph, plan.groups[0], sched::library_schedule("cpu_blocked", t), t);
 *   k.run({x.raw_buffer(), w.raw_buffer(), bias.raw_buffer(), y.raw_buffer()});
 */
#pragma once

#include "codegen/Compile.h"
#include "codegen/PtxReport.h"
#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"
#include "dsl/passes/GroupExtents.h"
#include "lowering/ElementwiseProgram.h"
#include "lowering/LowerToHalide.h"
#include "schedules/ApplySchedule.h"
#include "schedules/Schedule.h"

#include <Halide.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tessel {

enum class KernelBackend { Jit, JitOnFirstUse, AheadOfTime };

/** One argument of a compiled kernel, in call order: the group's inputs, then its outputs. */
struct KernelArgument {
    std::string name;  ///< the graph's output name for graph outputs, else the value's display name
    dsl::ValueId value = dsl::kNoValue;
    bool is_output = false;
    int dimensions = 0;  ///< Halide dimensions (reversed tensor axes; a scalar has 1)
};

class CompiledKernel {
public:
    struct Variant {
        std::string label;                           ///< "variant 1 (M == 1)" or "fallback"
        std::vector<sched::Guard> guards;            ///< empty for the fallback
        lower::LoweredGroup lowered;                 ///< scheduled
        sched::AppliedResources resources;           ///< what the schedule checks learned (GPU blocks, shared)
        Halide::Callable callable;                   ///< KernelBackend::Jit, compiled in this process
        std::shared_ptr<const LoadedKernel> loaded;  ///< KernelBackend::Jit, from the kernel cache
        bool from_cache = false;                     ///< loaded from the cache, not compiled
        std::string cache_note;                      ///< why a cache entry was not used, or the kernel not stored
        bool compiled = false;                       ///< JIT-compiled or loaded (JitOnFirstUse: once run picked it)
        double compile_seconds = 0;                  ///< compiling or loading it
    };

    /** Lowers, schedules and (Jit) compiles every variant. Preconditions: `group` was planned
     * on `g`; `g` outlives the kernel. */
    CompiledKernel(const dsl::Graph &g, dsl::FusionGroup group, sched::ScheduleSpec schedule, const Halide::Target &target,
                   KernelBackend backend = KernelBackend::Jit,
                   std::optional<std::map<std::string, int64_t>> only_for = std::nullopt,
                   std::vector<dsl::ValueId> constant_arguments = {});

    const dsl::FusionGroup &group() const { return group_; }
    const sched::ScheduleSpec &schedule() const { return schedule_; }
    const Halide::Target &target() const { return target_; }
    /** Every variant; under JitOnFirstUse, those not yet run are not `compiled`. Read it while
     * no run() is in flight (a first call fills in its variant). */
    const std::vector<Variant> &variants() const { return variants_; }
    const std::vector<KernelArgument> &arguments() const { return arguments_; }
    const dsl::GroupExtents &extents() const { return extents_; }
    /** The constants read from the constants argument (empty: every constant compiled in). */
    const std::vector<dsl::ValueId> &constant_arguments() const { return constant_arguments_; }
    /** The elementwise program the group runs as (schedule().program), else null. */
    const lower::ElementwiseProgram *program() const { return program_.get(); }
    /** Why variants of the schedule were left out (numeric mode), one line each. */
    const std::vector<std::string> &notes() const { return notes_; }
    /** Lowering + scheduling + JIT compilation of every variant (JitOnFirstUse: of those
     * compiled so far). */
    double compile_seconds() const;

    /** The position in arguments() of each of `names` (a layer's buffers by role, in the caller's
     * order). Throws std::logic_error naming the kernel and the argument when one is missing or
     * the kernel has arguments the names do not cover. */
    std::vector<size_t> argument_positions(const std::vector<std::string> &names) const;

    /** M, K, N of one call, read from its buffers (in arguments() order). */
    std::map<std::string, long> call_extents(const std::vector<halide_buffer_t *> &buffers) const;
    /** Index in variants() of the variant serving `extents`: the first whose guards hold. */
    size_t pick_variant(const std::map<std::string, long> &extents) const;

    /** Why these buffers cannot be passed to run() — a wrong count, a null buffer or host
     * pointer, an element type other than float32, a wrong number of dimensions, or a shape
     * other than the graph's (static sizes, and each symbolic size equal everywhere, bound by
     * the first buffer that has it) — naming the argument, its shape and the expected one; ""
     * when they can. Example: "argument 'w' (input) has shape [33,96]; the kernel expects
     * [64,96] (K = 64 from 'x')". */
    std::string check_buffers(const std::vector<halide_buffer_t *> &buffers) const;

    /** Runs the variant serving these buffers (arguments() order). Throws CompileError naming
     * the kernel, the argument and both shapes when check_buffers() refuses them (nothing is
     * read or written then), Halide's message and every buffer's shape when the kernel fails,
     * or when only_for excluded the variant these extents need. Never aborts the process:
     * Halide's runtime errors are returned to it (codegen/Compile.h). */
    void run(const std::vector<halide_buffer_t *> &buffers) const;
    /** run() for a kernel with constant_arguments: `constants` holds their values, as a 1-D
     * float32 buffer of exactly that many. */
    void run(const std::vector<halide_buffer_t *> &buffers, const halide_buffer_t *constants) const;

    /** The name variant `i` (of variants()) is written under: `<base>` for the fallback,
     * `<base>_v<k>` for the schedule's guarded variant k (1-based). */
    std::string variant_function(size_t i, const std::string &base) const;
    /** Ahead-of-time files of every variant into `dir`: the fallback as `<base>`, variant i as
     * `<base>_v<i>`. Returns the paths written. */
    std::vector<std::filesystem::path> write_files(const std::filesystem::path &dir, const std::string &base,
                                                   const std::set<AotOutput> &outputs) const;
    /** Every variant as a function of a library (compile_aot_library), named as write_files names them. */
    std::vector<AotFunction> aot_functions(const std::string &base) const;
    /** As above, each variant lowered again with `constant_arguments` read from its constants
     * argument (lower::LowerOptions) and scheduled by the same steps: the code of every group
     * that differs from this one only in those constants' values, internal (aliases call it). */
    std::vector<AotFunction> aot_functions(const std::string &base, const std::vector<dsl::ValueId> &constant_arguments) const;
    /** PTX of variant `i` (CUDA targets). */
    std::string ptx(size_t i) const;
    /** Every variant assembled by ptxas for the target's architecture (sched::TargetFacts:
     * "host-cuda" is sm_86), or for `arch` (needs ptxas: check find_ptxas()). */
    PtxScheduleReport ptx_report() const;
    PtxScheduleReport ptx_report(const std::string &arch) const;
    /** The limits the target's chip sets (sched::CudaFacts), for PtxScheduleReport::verdict. */
    PtxLimits ptx_limits() const;

private:
    /** Where an extent of a call comes from: a constant, or a buffer's dimension. */
    struct ExtentSource {
        std::string name;
        long constant = -1;
        size_t argument = 0;
        int dimension = 0;
    };
    const dsl::Graph *graph_;
    dsl::FusionGroup group_;
    sched::ScheduleSpec schedule_;
    Halide::Target target_;
    KernelBackend backend_;
    dsl::GroupExtents extents_;
    std::vector<KernelArgument> arguments_;
    std::vector<dsl::ValueId> constant_arguments_;
    std::vector<ExtentSource> extent_sources_;
    mutable std::vector<Variant> variants_;  ///< JitOnFirstUse: compiled in run(), once each (compile_once_)
    std::unique_ptr<std::once_flag[]> compile_once_;
    /** variant index -> schedule variant index (variants_.size() - 1 is the fallback) */
    std::vector<size_t> schedule_variant_;
    std::vector<std::string> notes_;
    double compile_seconds_ = 0;
    std::shared_ptr<const lower::ElementwiseProgram> program_;

    std::string describe_call(const std::vector<halide_buffer_t *> &buffers) const;
    /** JIT-compiles variant `i` (or loads it from the kernel cache). */
    void compile_variant(size_t i) const;
};

}  // namespace tessel
