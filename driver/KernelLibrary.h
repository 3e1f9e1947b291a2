/** \file
 * `tessel lib`: one static library and one C header for a whole graph, usable without libHalide
 * or Tessel at run time (the consumer includes `<name>.h`, which includes the HalideRuntime.h
 * copied beside it, and links `lib<name>.a` with -lgomp -lpthread -ldl -lm).
 *
 * What the library holds:
 *  - every planned group's kernels (each guarded variant and the fallback) as objects compiled
 *    ahead of time without a runtime, and ONE Halide runtime object for the library;
 *  - the C runtime (runtime/tessel_runtime.h, its sources compiled into the archive) and
 *    generated tables over it (driver/LibraryTables.h): the generated C holds data and thin
 *    entries only, every rule is the runtime's;
 *  - the entry `int <name>(inputs..., outputs..., void *workspace, int64_t bytes)` (graph inputs
 *    in program order, then outputs by interface name). It checks every buffer (null,
 *    dimensions, type, each extent against the graph's static sizes and against the symbol it
 *    binds), places the intermediates in the caller's workspace or in one it allocates (the
 *    memory plan, dsl/analysis/BufferAssignment.h: live ranges, views and in-place updates are
 *    decided at generation and hold for every size; offsets are packed per call by the same
 *    best-fit packer, three orders, over the plan's conflict table, so at the planning sizes the
 *    workspace is the plan's), dispatches each group to the first variant whose guards hold for
 *    its extents (Guard::holds' rules: the runtime's evaluator), and runs the groups in plan order;
 *  - for a graph with values computed from weights alone (prepared groups, the `weight-prepare`
 *    rule of dsl/passes/Fusion.h: a transposed, narrowed or re-laid-out weight), the
 *    prepare-weights entries: `<name>_prepared_bytes(weights...)`, `<name>_prepare(weights...,
 *    void *block, int64_t bytes)`, which runs only the prepared groups into the caller's 64-byte
 *    aligned block (each prepared value at its offset, in its layout and storage type, e.g. bf16),
 *    and `<name>_run_prepared(the entry's buffers..., const void *block, workspace, bytes)`, which
 *    runs only the per-call groups and reads the block (memory plan with the prepared values
 *    kept: BufferAssignment's Kind::Prepared), plus `<name>_run_prepared_workspace_bytes`. The
 *    whole-graph entry still takes the weights and computes the prepared values on every call;
 *  - `<name>_workspace_bytes(...)` (same buffers) for a caller that brings its own workspace,
 *    `<name>_error()` (the message of the last failure on this thread: the argument and both
 *    shapes, or the kernel and Halide's message) and `<name>_variants()` (which variant served
 *    each group in the last call on this thread).
 * Return codes: 0, 1 bad argument, 2 workspace too small or not allocated, 3 a kernel failed.
 * With TESSEL_LIB_PROFILE=FILE in the environment the entry counts calls per binding of the
 * graph's symbols and writes the histogram to FILE at exit, in the shape-profile text form
 * (autoscheduler/SpecializationPlanner.h) that `tessel lib --profile` and `tessel specialize` read.
 *
 * Targets: one, or several (a comma list, or `x86-multi` = AVX-512 Skylake set, AVX2 + FMA,
 * baseline x86-64): every group is compiled for each, kernels named `<group>_<isa>[_v<k>]`, and
 * the entry runs, from its first call on, the first target whose features the CPU reports
 * (__builtin_cpu_supports; driver/LibraryTargets.h); TESSEL_LIB_ISA=avx2 (a target's suffix) restricts it to that one,
 * for tests and benchmarks. One runtime object, compiled for the least capable target.
 *
 * Specialization (`--profile FILE`, budgets; driver/LibrarySpecialization.h): every group's guarded variants and fallback are
 * measured on the profiled shapes (driver/VariantCosts.h: on the best listed target this machine
 * runs; code bytes and ahead-of-time compile seconds for every listed target), the planner
 * (autoscheduler/SpecializationPlanner.h) chooses per group the variants to keep under the
 * budgets, shared by all groups, and the library holds only those and the fallbacks. The report
 * gives the measured costs, the plan against the fallback-only and every-variant alternatives,
 * and for each profiled shape the variant the dispatcher will pick per group (what `_variants()`
 * then reports). A plan over budget is refused with the numbers. Shapes outside the profile run
 * on whatever kept variant admits them, else the fallback.
 *
 * Refused, with the reason: graphs with ops outside kernels (effects, shape code), an output
 * bound twice or bound to a graph input (they would need copies), inputs, weights or outputs
 * with a layout or an f16/bf16 type (the entry's buffers are f32 row-major: converting a caller's
 * weight into panels is done by the JIT only), non-x86 and GPU targets. Values inside the graph
 * may have any layout and storage type: the entry describes their buffers itself.
 *
 * Parallel loops run on OpenMP, as the JIT's do: the entry installs the loop of
 * codegen/ParallelLoop.h (its text is compiled into the entry) as Halide's do_par_for for the
 * duration of each call and restores the previous one after; HL_NUM_THREADS or OMP_NUM_THREADS
 * set the threads. Hence -lgomp.
 */
#pragma once

#include "autoscheduler/SpecializationPlanner.h"

#include "compiler/CompileBudget.h"

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>

namespace tessel {

struct KernelLibraryOptions {
    std::string file;  ///< graph (.tsl)
    std::string out_dir = "tessel-lib";
    std::string name;             ///< library and entry name; "" = the graph's name
    std::string target = "host";  ///< a target, a comma list, or "x86-multi"
    std::string schedule;         ///< library schedule or FILE.json for its group kind; "" = database, else each kind's default
    /** Tuning database: a group whose sizes are all given (symbols) gets its record there
     * (compiler/ScheduleSelection.h); "" = none. */
    std::string db = "tessel-tuning.db";
    std::map<std::string, int64_t> symbols;  ///< sizes for fusion estimates and rematerialization
    bool remat = true;
    int64_t max_compiled_kernels = kDefaultMaxCompiledKernels;  ///< compiler/CompileBudget.h
    /** Shape profile (bindings of the graph's symbols with calls): when given, every group's
     * guarded variants are measured and the library keeps those the planner chooses. */
    std::string profile_file;
    autosched::PlannerBudgets budgets;  ///< compiles_amortized_over = runs served by one build
    int repeats = 5;                    ///< timed rounds per profiled shape
    /** With a profile and db on a server: groups whose variant costs the server lacks become
     * jobs for `tessel worker`s (driver/FleetVariantCosts.h) instead of being measured here; no
     * library is written until every group's costs are there (rerun, or `wait`). */
    bool enqueue = false;
    bool wait = false;  ///< with enqueue: wait for the workers, then write the library
};

/** Writes `<out_dir>/lib<name>.a`, `<name>.h` and `HalideRuntime.h`; prints what it wrote and
 * the plan. Returns 0; throws std::invalid_argument for graphs it refuses. */
int write_kernel_library(const KernelLibraryOptions &options, std::ostream &out);

}  // namespace tessel
