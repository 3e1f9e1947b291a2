/** \file
 * Reference interpreter: runs any graph on concrete inputs with plain loops. It is the oracle for
 * every later pass and schedule, so it favours obviously-correct code over speed.
 *
 * Numerics: each op computes in double from operands that are exact in their dtype and rounds
 * its result once to the result dtype (Numerics.h). For f32 add/sub/mul/div/sqrt this equals the
 * correctly rounded IEEE f32 operation. Reductions and matmul accumulate in double in row-major
 * order of the reduced indices and round once at the end (wider accumulation, as the issue
 * allows). Transcendentals use the C library in double. f16/bf16 are emulated by rounding.
 *
 * Random draws (documented generator, deterministic from the seed only): with
 * splitmix64(x) the standard 64-bit finalizer and h(s, i) = splitmix64(splitmix64(s) + i),
 *   random_uniform element i = (h(seed, i) >> 40) * 2^-24           in [0, 1)
 *   random_normal  element i = sqrt(-2 ln u1) * cos(2 pi u2), u1 = ((h(seed, 2i) >> 11) + 1) * 2^-53,
 *                              u2 = (h(seed, 2i + 1) >> 11) * 2^-53
 * then rounded to the dtype. Two draws with the same seed and shape give the same values.
 *
 * State: `state_read` returns the variable's current value from InterpreterState (zeros of the
 * declared type if never written); `state_write` replaces it. `print` appends
 * "label: <tensor>\n" to RunResult::printed. `assert` throws AssertionFailure when any element of
 * its operand is zero.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dsl/interp/Tensor.h"
#include "dsl/ir/Graph.h"

namespace tessel::dsl {

/** Most elements of one tensor the interpreter allocates (2^28: 2 GiB of doubles). A value,
 * input or generated input past it is a RuntimeError naming it, its shape and this limit,
 * raised before any allocation. */
constexpr int64_t kMaxInterpreterElements = int64_t(1) << 28;
/** Throws that RuntimeError when `shape` (of `what`, dtype text `dtype`) has a non-positive
 * extent or more than kMaxInterpreterElements elements. */
void check_element_limit(const std::string &what, const std::string &dtype, const std::vector<int64_t> &shape);

/** Mutable state variables, kept across runs when the caller reuses it. */
struct InterpreterState {
    std::map<std::string, Tensor> vars;
};

/** A group of pure nodes whose values something else computes (a compiled kernel): the
 * interpreter does not evaluate its members; as soon as every value the group reads from outside
 * is computed it calls `run` with the values so far and stores what `run` returns as the group's
 * `outputs` (in that order). Effects and shape code around the group still run here, in program
 * order, and see the group's outputs. */
struct ExternalGroup {
    std::vector<ValueId> members;
    std::vector<ValueId> outputs;
    std::function<std::vector<Tensor>(const std::map<ValueId, Tensor> &values, const std::map<std::string, int64_t> &symbols)>
        run;
};

struct RunOptions {
    /** Sizes for shape symbols that no given input binds (e.g. {"M", 3}). */
    std::map<std::string, int64_t> symbol_sizes;
    int64_t default_symbol_size = 4;
    /** Generate missing inputs: floats uniform in [-2, 2), ints in [0, 8), from input_seed; a
     * weight of rank >= 2 uniform in +-sqrt(3 / fan_in), fan_in its element count over its last
     * extent (as a trained model's weights are scaled). */
    bool random_missing_inputs = false;
    uint64_t input_seed = 1;
    /** Groups computed outside the interpreter (`tessel run` runs compiled kernels this way).
     * A node that reads a group's output before the group can run (it reads a value computed
     * later) is a RuntimeError. */
    std::vector<ExternalGroup> external_groups;
};

struct RunResult {
    std::vector<Tensor> outputs;             ///< in Graph::outputs order
    std::vector<std::string> output_names;   ///< Graph::output_name(i) of each output: the interface
    std::map<std::string, Tensor> inputs;    ///< every input used, given or generated, by name
    std::map<std::string, int64_t> symbols;  ///< symbol bindings used
    std::string printed;                     ///< everything `print` wrote
};

/** Run g. Inputs are keyed by the input value's name (`%x` -> "x"). Throws RuntimeError for a
 * missing input (unless random_missing_inputs), a shape that contradicts the graph's types, an
 * extent that is not positive (an input or symbol size of 0, shape code computing <= 0: zero-size
 * tensors are not supported), or shape code dividing by zero; AssertionFailure when an assert
 * fails.
 * Example: interpret(g, {{"x", Tensor::filled(DType::F32, {2, 4}, 1.0)}}).outputs[0] */
RunResult interpret(const Graph &g, const std::map<std::string, Tensor> &inputs, InterpreterState &state,
                    const RunOptions &options = {});
/** Same with a fresh state. */
RunResult interpret(const Graph &g, const std::map<std::string, Tensor> &inputs = {}, const RunOptions &options = {});

/** Evaluate one pure, non-input node on concrete operands with the given result shape (used by
 * constant folding so folded values are bit-identical to interpreted ones). */
Tensor evaluate_pure(const Node &n, const std::vector<const Tensor *> &operands, const std::vector<int64_t> &result_shape);

/** A unary element-wise op's formula in double, before rounding to the result dtype: the
 * reference the compiled kernels' math is measured against (tests/lowering/test_strict_math). */
double unary_formula(Op op, double x);

/** The generator documented above: element `index` of a draw of `op` (RandomUniform or
 * RandomNormal) with `seed`, before rounding to the dtype. */
double random_element(Op op, uint64_t seed, uint64_t index);

}  // namespace tessel::dsl
