/** \file
 * AttentionLayer: scaled dot-product attention (algorithms/Attention.h) planned through the one
 * front door (compiler/Plan.h) and, when fusion makes it one attention group, compiled as that
 * group's CompiledKernel, with a call that takes q, k, v and o by role. The peer benchmark
 * (bench/peers) times exactly the kernel `tessel compile` ships for the same graph.
 *
 *   AttentionLayer a({.batch = 8, .queries = 1024, .keys = 1024, .depth = 64}, Halide::get_host_target());
 *   a.run(q, k, v, o);   // Buffer(D, S, B), Buffer(D, L, B), Buffer(D, L, B), Buffer(D, S, B)
 */
#pragma once

#include "algorithms/Attention.h"
#include "lowering/CompiledKernel.h"

#include <HalideBuffer.h>

#include <array>
#include <memory>
#include <string>

namespace tessel {

class AttentionLayer {
public:
    /** Plans and compiles the layer. Throws std::logic_error with the fusion plan when it does not
     * plan as one attention group (strict mode, say), CompileError on Halide errors. */
    AttentionLayer(const AttentionShape &shape, const Halide::Target &target);

    void run(Halide::Runtime::Buffer<float> &q, Halide::Runtime::Buffer<float> &k, Halide::Runtime::Buffer<float> &v,
             Halide::Runtime::Buffer<float> &o) const;

    const CompiledKernel &kernel() const { return *kernel_; }
    /** The schedule's name and nest, as `tessel compile` prints them. */
    std::string schedule_summary() const;

private:
    std::unique_ptr<dsl::Graph> graph_;  // the kernel points into it
    std::unique_ptr<CompiledKernel> kernel_;
    std::array<size_t, 4> slot_{};  // q, k, v, o -> position in kernel_->arguments()
};

}  // namespace tessel
