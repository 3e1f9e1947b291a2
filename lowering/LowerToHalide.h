/** \file
 * Lowering: one group of graph nodes becomes one Halide pipeline.
 *
 * Values read from outside the group become ImageParams (named after the value); values the
 * group exports become output Funcs ("y" for a single output, "y0", "y1"... otherwise; a matmul
 * group's same-shaped outputs become one Tuple Func "y", so matmul schedules address it).
 * Inside the group, elementwise, broadcast, permutation and reshape nodes are built as inline
 * Exprs, so no intermediate of theirs exists in memory: that is producer-consumer fusion.
 * Contractions and reductions become Funcs with update definitions that schedules address by
 * name: "matmul" (vars n, m, b0..., RDom k), "reduce"/"reduce1"..., "softmax_max"/"softmax_sum".
 * Max and min (max, min, relu, reduce_max, softmax's row maximum) follow IEEE maximum/minimum
 * (NaN wins, -0 < +0; docs/TSL.md "Special values"): they are computed as integer max/min on an
 * order key of the float's bits, so a reduce_max or softmax_max Func holds int32 keys that its
 * readers decode, and float flags of Halide or LLVM cannot drop a NaN.
 * Matmuls of one group that share their left operand and shape become ONE Tuple-valued Func
 * "matmul", so the shared operand is loaded once per reduction step (sibling fusion).
 *
 * Axis naming: a tensor's last axis is Halide dimension 0 and loop "n"; the one before is "m";
 * further leading axes are "b0", "b1", ...
 *
 * Layouts and storage types (dsl/ir/Layout.h). An input is an ImageParam of its physical
 * dimensions (panel index outermost, then the order, the offset within a panel innermost) and
 * its storage type (f32, f16, bf16); every read maps the logical index to physical coordinates,
 * so a transpose or a layout costs index arithmetic, never a copy. A matmul's right operand read
 * through a layout, a transpose or a widening cast is the view Func "w" in [K, N] orientation, so
 * matmul schedules stage and vectorize it as they do a row-major f32 w. A non-matmul group's output
 * with a layout is written over its physical dimensions (a last panel's padding is 0).
 * Arithmetic is f32: an f16/bf16 value is only stored, loaded and cast.
 *
 * Legal for pure float tensor ops whose dims are static or named symbols bound by a group input;
 * anything else (effects, integer tensors, unresolved shape code) is refused with LoweringError.
 */
#pragma once

#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"

#include <Halide.h>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessel::lower {

class LoweringError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct LoweredGroup {
    std::string name;
    dsl::GroupKind kind = dsl::GroupKind::Elementwise;  ///< the planned group's kind
    dsl::NumericMode mode = dsl::NumericMode::Strict;   ///< the graph's numeric mode; strict for a prepared group
    std::vector<dsl::ValueId> input_values;
    std::vector<Halide::ImageParam> inputs;   ///< parallel to input_values
    std::vector<dsl::ValueId> output_values;  ///< in the group's output order: one buffer each
    /** The output Funcs: one per output value, or, for a matmul group whose outputs share one
     * shape, a single Tuple Func "y" with one element per output value. */
    std::vector<Halide::Func> outputs;
    std::vector<std::string> output_names;  ///< schedule-facing names of `outputs` ("y", "y0"...)
    std::vector<size_t> output_func;        ///< per output value: its Func in `outputs`
    /** Every schedulable Func by its schedule-facing name. Halide may rename a Func whose name
     * is already taken in the process ("y$3"); schedules always use these names. */
    std::map<std::string, Halide::Func> funcs;
    int matmul_count = 0;  ///< contractions (a sibling tuple counts each)
    /** The group's one contraction reads its right operand [K, N] from a group input stored in
     * panels of this many columns (Layout panels(axis=1, width), row-major order, possibly through
     * a widening cast), whose last panel is padded: a nest whose column tiles start on panel
     * boundaries and span whole panels reads it in place, padding included. 0 otherwise (several
     * contractions, or any other layout). */
    int64_t rhs_panel_width = 0;
    /** Input buffers by the role schedules address them with: "x" and "w" are the left and
     * right operands of the first contraction when they are group inputs. */
    std::map<std::string, Halide::ImageParam> input_roles;
    /** For each Func with an update definition, by name: facts schedules need that the Halide
     * Func does not show (see sched::GroupReduction). */
    struct ReductionAxes {
        bool along_n = false;    ///< its innermost reduction loop walks the input's last axis, alone
        bool n_is_data = false;  ///< its pure loop "n" is not a reduced axis kept with extent 1
        bool row_local = false;  ///< it keeps its input's outermost axis
    };
    std::map<std::string, ReductionAxes> reduction_axes;

    /** Defined when LowerOptions::constant_arguments is not empty: a 1-D f32 buffer whose element
     * i is the value of constant_values[i], an argument after the inputs. */
    Halide::ImageParam constants;
    std::vector<dsl::ValueId> constant_values;

    /** The inputs, then `constants` when defined (Halide appends the outputs). */
    std::vector<Halide::Argument> arguments() const;
    Halide::Pipeline pipeline() const;
};

/** The f32 value the lowering gives scalar constant `n`, whether compiled into the code or passed
 * in a constants argument (LowerOptions::constant_arguments): its value rounded once. */
inline float scalar_constant_value(const dsl::Node &n) { return (float)n.attrs.value.at(0); }

struct LowerOptions {
    /** Scalar f32 constants of the group (dsl::Op::Constant members with one value) read from
     * the argument LoweredGroup::constants instead of compiled into the code, so the kernel is
     * the code of every group that differs from this one only in their values
     * (compiler/KernelReuse.h decides which; only ops that read an operand as any other value
     * may read them there). Empty: every constant is compiled in. */
    std::vector<dsl::ValueId> constant_arguments;
};

/** Lowers the planned `group` of `g` (its kind is taken from the plan). Every call builds fresh
 * Funcs, so each schedule variant gets its own lowering. Input extents that name the same
 * symbol are constrained equal (a mismatch fails at run time with Halide's message). Throws
 * LoweringError naming the node and the reason. */
LoweredGroup lower_group(const dsl::Graph &g, const dsl::FusionGroup &group, const LowerOptions &options = {});

/** Halide type a tensor of dtype `t` is stored in (f32, f16, bf16), or nullopt (integers). */
std::optional<Halide::Type> storage_type(dsl::DType t);

/** The group's axis name for tensor axis `axis` of a rank-`rank` value: "n", "m", "b0"... */
std::string axis_name(int axis, int rank);

/** Value `v`'s name as Halide and generated C headers accept it (its Funcs, parameters and the
 * stages schedules address start with it): '.' (legal in TSL names, Halide's separator) and any
 * other non-identifier character become '_', an unnamed value's id gets a letter in front
 * (Halide writes `<name>_buffer` parameters), and the id is appended to any changed name so
 * names stay distinct. */
std::string halide_name(const dsl::Graph &g, dsl::ValueId v);

}  // namespace tessel::lower
