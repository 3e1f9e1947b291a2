/** \file
 * GeluLayer: the running example y = gelu(x @ w + bias) compiled through the one path every
 * command uses — the graph from the C++ builder (algorithms/GeluMlp.h), simplified, planned
 * for the requested target, and its one matmul+epilogue group compiled by CompiledKernel — with
 * a call that takes the four buffers by role. `tessel demo`, `make bench`, the
 * Halide-autoscheduler comparison and the schedule tests time and check exactly the kernel
 * `tessel compile algorithms/gelu_mlp.tsl` ships for the same schedule.
 *
 * Example:
 *   GeluLayer layer(GeluForm::Tanh, dsl::NumericMode::Fast, library_schedule("cpu_blocked", t), t);
 *   layer.run(x, w, bias, y);   // Buffer(K, M), Buffer(N, K), Buffer(N), Buffer(N, M)
 */
#pragma once

#include "baselines/GeluReference.h"
#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"
#include "lowering/CompiledKernel.h"
#include "schedules/Schedule.h"

#include <HalideBuffer.h>

#include <array>
#include <memory>

namespace tessel {

class GeluLayer {
public:
    /** Compiles the layer's group under `schedule` (every guarded variant). Throws
     * sched::ScheduleError when the schedule does not apply, CompileError on Halide errors. */
    GeluLayer(GeluForm form, dsl::NumericMode mode, const sched::ScheduleSpec &schedule, const Halide::Target &target,
              KernelBackend backend = KernelBackend::Jit);

    /** y = gelu(x @ w + bias); x is Buffer(K, M), w Buffer(N, K), bias Buffer(N), y Buffer(N, M). */
    void run(Halide::Runtime::Buffer<float> &x, Halide::Runtime::Buffer<float> &w, Halide::Runtime::Buffer<float> &bias,
             Halide::Runtime::Buffer<float> &y) const;

    const dsl::Graph &graph() const { return *graph_; }
    const dsl::FusionGroup &group() const { return kernel_->group(); }
    const CompiledKernel &kernel() const { return *kernel_; }

private:
    std::unique_ptr<dsl::Graph> graph_;  // the kernel points into it
    std::unique_ptr<CompiledKernel> kernel_;
    std::array<size_t, 4> slot_{};  // x, w, bias, y -> position in kernel_->arguments()
};

/** The planned matmul+epilogue group of the layer's graph for `target` (what GeluLayer compiles). */
dsl::FusionGroup gelu_layer_group(const dsl::Graph &layer_graph, const Halide::Target &target);

}  // namespace tessel
