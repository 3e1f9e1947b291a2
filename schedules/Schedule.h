/** \file
 * ScheduleSpec: a schedule as a plain value.
 *
 * A schedule is an ordered list of directives (split, reorder, vectorize, parallel,
 * compute_at, GPU blocks/threads, staging of inputs, memory placement, rfactor...) that
 * address stages and loop variables by name, like a TVM trace or a Halide .schedule.h.
 * Hand-written library schedules and autoscheduler output are the same type: they print
 * as readable text, serialize to JSON (schedules/ScheduleJson.h) and are applied to Halide
 * in exactly one place (schedules/ApplySchedule.h).
 *
 * Guarded variants: a ScheduleSpec may carry alternative schedules for shapes that matter
 * (e.g. M == 1 for decode); each is compiled separately and picked at run time when its
 * guard holds, with the main schedule as the general fallback.
 *
 * Example (compiled as a test in tests/schedules/test_schedule_json.cpp):
 *   const StageRef y{"y"};
 *   ScheduleSpec s("cpu_tiled");
 *   s.split(y, "n", "no", "ni", 16).split(y, "m", "mo", "mi", 8)
 *    .reorder(y, {"ni", "mi", "no", "mo"}).vectorize(y, "ni").parallel(y, "mo")
 *    .compute_at("matmul", "y", "no");
 */
#pragma once

#include "dsl/passes/GroupKind.h"
#include "schedules/GuardOp.h"

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tessel::sched {

/** How a split handles extents not divisible by the factor (Halide's TailStrategy). */
enum class Tail { Auto, GuardWithIf, ShiftInwards, RoundUp, Predicate };

/** Where an intermediate (or a staged copy of an input) lives. */
enum class MemoryLevel { Auto, Register, Stack, Heap, GpuShared, GpuGlobal };

/** A stage of a Func: its pure definition (update == -1) or update definition `update`. */
struct StageRef {
    std::string func;
    int update = -1;
    bool operator==(const StageRef &) const = default;
};

struct Split {
    StageRef stage;
    std::string var, outer, inner;
    int factor = 1;
    Tail tail = Tail::Auto;
    bool operator==(const Split &) const = default;
};
struct Fuse {
    StageRef stage;
    std::string inner, outer, fused;
    bool operator==(const Fuse &) const = default;
};
struct Reorder {
    StageRef stage;
    std::vector<std::string> vars;
    bool operator==(const Reorder &) const = default;
};  ///< innermost first
struct Vectorize {
    StageRef stage;
    std::string var;
    bool operator==(const Vectorize &) const = default;
};
struct Unroll {
    StageRef stage;
    std::string var;
    bool operator==(const Unroll &) const = default;
};
struct Parallel {
    StageRef stage;
    std::string var;
    bool operator==(const Parallel &) const = default;
};
struct GpuBlocks {
    StageRef stage;
    std::vector<std::string> vars;
    bool operator==(const GpuBlocks &) const = default;
};  ///< innermost first
struct GpuThreads {
    StageRef stage;
    std::vector<std::string> vars;
    bool operator==(const GpuThreads &) const = default;
};  ///< innermost first
/** Compute `func` inside the loop `var` of `at`'s pure stage. */
struct ComputeAt {
    std::string func, at, var;
    bool operator==(const ComputeAt &) const = default;
};
struct ComputeRoot {
    std::string func;
    bool operator==(const ComputeRoot &) const = default;
};
struct ComputeInline {
    std::string func;
    bool operator==(const ComputeInline &) const = default;
};
struct StoreAt {
    std::string func, at, var;
    bool operator==(const StoreAt &) const = default;
};
struct StoreIn {
    std::string func;
    MemoryLevel level = MemoryLevel::Auto;
    bool operator==(const StoreIn &) const = default;
};
/** Stage input `input` (an ImageParam or Func) through a wrapper Func named `wrapper`
 * (Halide's in()); later directives address the wrapper by that name. */
struct StageInput {
    std::string input, wrapper, consumer;
    bool operator==(const StageInput &) const = default;
};
/** Split a reduction: factor out reduction var `rvar` (after a split) into pure var
 * `new_var` of a new intermediate Func named `intermediate` (Halide's rfactor). */
struct RFactor {
    StageRef stage;
    std::string rvar, new_var, intermediate;
    bool operator==(const RFactor &) const = default;
};
/** Assume the extent of `var` of `func` is exactly `extent` starting at `min`. */
struct Bound {
    std::string func, var;
    int min = 0, extent = 1;
    bool operator==(const Bound &) const = default;
};
/** Assume the extent of `var` of `func` is exactly `extent`, wherever it starts (Halide's
 * bound_extent): gives a staged tile a constant size. The region computed grows to `extent`,
 * so the tile must never reach past its input's edge (guard the variant on divisibility). */
struct BoundExtent {
    std::string func, var;
    int extent = 1;
    bool operator==(const BoundExtent &) const = default;
};
/** Promise that `buffer` (an input, or the output Func: every buffer of a Tuple) starts at index
 * 0 in every dimension and that its dimension-0 extent and every row stride are multiples of
 * `lanes` elements (lanes = 1: only the start, so tiles of a split from 0 start at multiples).
 * Halide asserts this when the pipeline runs (a buffer that breaks it is refused, never
 * misread) and can then prove `lanes`-wide loads and stores aligned (e.g. float4 ld.global.v4
 * on CUDA). Guard the variant on the extents' divisibility so dense buffers always qualify. */
struct AssumeAligned {
    std::string buffer;
    int lanes = 4;
    bool operator==(const AssumeAligned &) const = default;
};
/** Store `func`'s dimensions in the order `vars`, innermost first (Halide's reorder_storage):
 * e.g. an rfactor intermediate's new lane variable innermost, so its vectors are dense. */
struct ReorderStorage {
    std::string func;
    std::vector<std::string> vars;
    bool operator==(const ReorderStorage &) const = default;
};
/** Run `stage`'s loops down to and including `var` as `with`'s (Halide's compute_with): the
 * two stages share those loops, and what both read at a level inside them is computed once.
 * Legal when neither stage reads the other (e.g. two outputs of one nest). */
struct ComputeWith {
    StageRef stage, with;
    std::string var;
    bool operator==(const ComputeWith &) const = default;
};
/** Prefetch `input` `distance` iterations ahead of loop `var`. */
struct Prefetch {
    StageRef stage;
    std::string input, var;
    int distance = 1;
    bool operator==(const Prefetch &) const = default;
};

using Directive =
    std::variant<Split, Fuse, Reorder, Vectorize, Unroll, Parallel, GpuBlocks, GpuThreads, ComputeAt, ComputeRoot, ComputeInline,
                 StoreAt, StoreIn, StageInput, RFactor, Bound, Prefetch, BoundExtent, AssumeAligned, ReorderStorage, ComputeWith>;

/** A runtime guard over the extents of the pipeline's inputs, e.g. {"M", GuardOp::Eq, 1}
 * or {"N", GuardOp::Divisible, 16}. Extents are named by the algorithm (M, K, N). */
struct Guard {
    std::string extent;
    GuardOp op = GuardOp::Eq;
    long value = 0;
    bool holds(const std::map<std::string, long> &extents) const;
    bool operator==(const Guard &) const = default;
    std::string to_string() const;
};

/** Which kind of machine a schedule is written for. */
enum class Device { Cpu, Cuda };

class ScheduleSpec {
public:
    ScheduleSpec() = default;
    explicit ScheduleSpec(std::string name, Device device = Device::Cpu) : name(std::move(name)), device(device) {}

    std::string name;
    Device device = Device::Cpu;
    /** The kind of fusion group it is written for: matmul+epilogue schedules address the stages
     * "matmul" and "y"; the others are generated from a group's shape (GroupSchedules.h). */
    dsl::GroupKind group = dsl::GroupKind::MatmulEpilogue;
    std::string description;
    std::vector<Directive> steps;  ///< applied in order
    /** No code is generated: the group runs as an elementwise program that the runtime
     * interprets (lowering/ElementwiseProgram.h), with no steps and no variants. The planner
     * chooses it for groups past the compile budget (compiler/Plan.h). */
    bool program = false;

    /** Alternative schedules tried in order; the first whose guards all hold is used. */
    struct Variant {
        std::vector<Guard> guards;
        std::vector<Directive> steps;
        bool operator==(const Variant &) const = default;
    };
    std::vector<Variant> variants;

    /** Index of the first variant whose guards all hold, or variants.size() for the fallback. */
    size_t pick_variant(const std::map<std::string, long> &extents) const;
    /** This schedule keeping only the variants at `indices` (in their order), fallback unchanged. */
    ScheduleSpec keeping_variants(const std::vector<size_t> &indices) const;
    /** Variant `i`'s steps as a schedule of its own: no variants, no guards (to measure it alone). */
    ScheduleSpec variant_alone(size_t i) const;

    // Fluent builders: each only appends a directive. Stage defaults to the pure definition;
    // use the StageRef overloads or `update` argument for update definitions.
    ScheduleSpec &split(const StageRef &s, const std::string &var, const std::string &outer, const std::string &inner, int factor,
                        Tail tail = Tail::Auto);
    ScheduleSpec &fuse(const StageRef &s, const std::string &inner, const std::string &outer, const std::string &fused);
    ScheduleSpec &reorder(const StageRef &s, std::vector<std::string> vars);
    ScheduleSpec &vectorize(const StageRef &s, const std::string &var);
    ScheduleSpec &unroll(const StageRef &s, const std::string &var);
    ScheduleSpec &parallel(const StageRef &s, const std::string &var);
    ScheduleSpec &gpu_blocks(const StageRef &s, std::vector<std::string> vars);
    ScheduleSpec &gpu_threads(const StageRef &s, std::vector<std::string> vars);
    ScheduleSpec &compute_at(const std::string &func, const std::string &at, const std::string &var);
    ScheduleSpec &compute_root(const std::string &func);
    ScheduleSpec &compute_inline(const std::string &func);
    ScheduleSpec &store_at(const std::string &func, const std::string &at, const std::string &var);
    ScheduleSpec &store_in(const std::string &func, MemoryLevel level);
    ScheduleSpec &stage_input(const std::string &input, const std::string &wrapper, const std::string &consumer = "");
    ScheduleSpec &rfactor(const StageRef &s, const std::string &rvar, const std::string &new_var,
                          const std::string &intermediate);
    ScheduleSpec &bound(const std::string &func, const std::string &var, int min, int extent);
    ScheduleSpec &bound_extent(const std::string &func, const std::string &var, int extent);
    ScheduleSpec &prefetch(const StageRef &s, const std::string &input, const std::string &var, int distance);
    ScheduleSpec &reorder_storage(const std::string &func, std::vector<std::string> vars);
    ScheduleSpec &compute_with(const StageRef &stage, const StageRef &with, const std::string &var);
    ScheduleSpec &assume_aligned(const std::string &buffer, int lanes);

    bool operator==(const ScheduleSpec &) const = default;
};

/** The schedule of a group that runs as an elementwise program (ScheduleSpec::program): no
 * steps, no variants; the planner gives it past the compile budget (compiler/CompileBudget.h). */
ScheduleSpec elementwise_program_schedule();

/** Whether every variant of `s` computes each output element exactly once, after reading the
 * inputs at its index: no split with a shifted or rounded tail (ShiftInwards, and Auto, which
 * becomes ShiftInwards for outputs, recompute elements already written) and no bound_extent
 * (which grows the region computed). Makes an in-place update legal; false with the directive
 * in *why. */
bool writes_each_element_once(const ScheduleSpec &s, std::string *why);

std::string to_string(Tail t);
std::string to_string(MemoryLevel m);
std::string to_string(Device d);
Tail parse_tail(const std::string &s);
MemoryLevel parse_memory_level(const std::string &s);
Device parse_device(const std::string &s);

/** One directive as a line of Halide-flavoured C++, e.g. `y.update(0).vectorize(ni);`. */
std::string to_string(const Directive &d);
/** The whole schedule as readable text: a header, then one directive per line. */
std::string to_string(const ScheduleSpec &s);

/** Stage text: "y" or "y.update(0)". */
std::string to_string(const StageRef &s);

}  // namespace tessel::sched
