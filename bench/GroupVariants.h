/** \file
 * The running example's work in the other group shapes and layouts fusion and the layout pass
 * build, for the benchmark: the matmul's result exported beside y ("two outputs": one Tuple Func
 * y in the lowering); w stored [N, K] read through a transpose per call ("x @ w.T": a view Func
 * w the schedules pack); and w declared a weight, prepared once: stored [N, K] and transposed
 * when prepared ("x_wT_prepared"), narrowed to bf16 ("w_bf16": the kernel reads half the bytes
 * and widens in registers), packed in panels of the register block's width ("w_panels"), or
 * both ("w_bf16_panels"); int8 per column ("w_int8"); int4 in groups of 32 or 128 loaded already
 * quantized ("w_int4", "w_int4_g128": packed pairs and scales made on the host as
 * quantize_int4 says, read through unpack_int4 and repeat_interleave).
 * Each is a graph from the C++ builder compiled by CompiledKernel under the schedule being
 * benchmarked, fitted to the group as the compiler fits it (a panel-stored w gets the panel
 * nests; its prepared groups under the default schedule), so the benchmark compares them
 * with the one-output layer in the same run; preparing is timed apart and reported.
 */
#pragma once

#include "dsl/ir/Graph.h"
#include "lowering/CompiledKernel.h"
#include "schedules/Library.h"

#include <HalideBuffer.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessel::bench {

struct GroupVariant {
    std::string label;                                     ///< "two_outputs", "x_wT", "w_bf16"...
    std::unique_ptr<dsl::Graph> graph;                     ///< the kernels point into it
    std::unique_ptr<CompiledKernel> kernel;                ///< the group that runs per call
    std::vector<std::unique_ptr<CompiledKernel>> prepare;  ///< groups run once from the weights
    /** Weights in the layout the kernel reads and prepared values, by kernel argument name. */
    struct Prepared {
        std::map<std::string, Halide::Buffer<>> buffers;
        double seconds = 0;      ///< converting the weights and running the prepared groups
        int64_t read_bytes = 0;  ///< bytes of the largest prepared buffer the kernel reads (w)
    };
    /** Converts the weights among `buffers` (by name: w or wt) and runs the prepared groups. */
    Prepared prepare_weights(std::map<std::string, Halide::Runtime::Buffer<float> *> &buffers) const;
    /** Runs the kernel on buffers by argument name (x, w or wt, bias, t, y), prepared values
     * from `prepared`. */
    void run(std::map<std::string, Halide::Runtime::Buffer<float> *> &buffers, const Prepared &prepared) const;
    void run(std::map<std::string, Halide::Runtime::Buffer<float> *> &buffers) const { run(buffers, Prepared()); }
};

/** Bytes per element of the w a variant's kernel reads: 2 for the bf16 ones, 1 for int8, 0.5 plus
 * an f32 scale per group for int4, else 4. */
double weight_element_bytes(const std::string &label);

/** The group size of an int4 variant ("w_int4": 32, "w_int4_g128": 128), 0 for the others. */
int int4_group(const std::string &label);

/** w [K][N] quantized as dsl::quantized_int4 does it, groups of `group` rows: scale s [G][N] =
 * max |w| / 7 over the group, q = round(w / s) saturated to [-8, 7], rows 2j and 2j + 1 packed in
 * byte j of p [ceil(K / 2)][N] (low nibble first). `dequantized`, when given, gets q * s. */
void quantize_int4(const float *w, int K, int N, int group, int8_t *p, float *s, float *dequantized = nullptr);

/** The variants' labels, in the order make_group_variants builds them. */
const std::vector<std::string> &group_variant_labels();

/** One variant by label, tanh GELU in fast mode (as the benchmark's main rows), under
 * `schedule`; throws std::invalid_argument for an unknown label. */
GroupVariant make_group_variant(const std::string &label, const sched::GroupScheduleChoice &schedule,
                                const Halide::Target &target);

/** Every variant, in group_variant_labels() order. */
std::vector<GroupVariant> make_group_variants(const sched::GroupScheduleChoice &schedule, const Halide::Target &target);

}  // namespace tessel::bench
