/** \file
 * The running example's work in the other group shapes fusion builds, for the benchmark: the
 * matmul's result exported beside y ("two outputs": one Tuple Func y in the lowering) and w
 * stored [N, K] read through a transpose ("x @ w.T": a view Func w the schedules pack). Each is
 * a graph from the C++ builder compiled by CompiledKernel under the schedule being benchmarked,
 * so the benchmark compares them with the one-output layer in the same run.
 */
#pragma once

#include "dsl/ir/Graph.h"
#include "lowering/CompiledKernel.h"
#include "schedules/Schedule.h"

#include <HalideBuffer.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessel::bench {

struct GroupVariant {
    std::string label;                      ///< "two_outputs", "x_wT"
    std::unique_ptr<dsl::Graph> graph;      ///< the kernel points into it
    std::unique_ptr<CompiledKernel> kernel;
    /** Runs the kernel on buffers by argument name (x, w or wt, bias, t, y). */
    void run(std::map<std::string, Halide::Runtime::Buffer<float> *> &buffers) const;
};

/** Both variants, tanh GELU in fast mode (as the benchmark's main rows), under `schedule`. */
std::vector<GroupVariant> make_group_variants(const sched::ScheduleSpec &schedule, const Halide::Target &target);

}  // namespace tessel::bench
