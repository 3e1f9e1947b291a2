/** \file
 * Attention's forward and backward (algorithms/Attention.h, attention_train_graph) as a
 * peer-benchmark system: planned by plan() at the shape's sizes — in fast mode the forward
 * attention group, rowsum(dO ∘ O) and one attention-backward group — and compiled group by
 * group (CompiledGraph, JIT). A call is CompiledGraph::run_buffers on buffers the system keeps:
 * q, k, v, do in, and o, dq, dk, dv out, four slices of one buffer so the check reads them as
 * one array [4, B, S, D].
 */
#pragma once

#include "algorithms/Attention.h"
#include "compiler/Plan.h"
#include "lowering/CompiledGraph.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessel::bench {

class AttentionTrainSystem {
public:
    /** Reads DIR/q.f32, k.f32, v.f32 and do.f32 (row-major float32, [B, S or L, D]); S == L. */
    AttentionTrainSystem(const AttentionShape &shape, const std::string &dir);
    /** Plans and compiles for target, then runs once. */
    void prepare(const Halide::Target &target);
    void run();
    /** o, dq, dk, dv of the latest run, one after the other. */
    const Halide::Buffer<float> &outputs() const { return out_; }
    /** Each group's name, kind and median seconds over `calls` calls timed group by group. */
    struct GroupTime {
        std::string name, kind;
        double seconds = 0;
    };
    std::vector<GroupTime> group_times(int calls);

private:
    AttentionShape shape_;
    Halide::Buffer<float> out_;                        ///< [4][B][S][D]
    std::map<std::string, Halide::Buffer<>> buffers_;  ///< inputs and the four output slices
    std::unique_ptr<PlannedProgram> program_;
    std::unique_ptr<CompiledGraph> compiled_;
};

}  // namespace tessel::bench
