/** \file
 * The transformer block (algorithms/TransformerBlock.h) as a peer-benchmark system: planned by
 * plan() at the loaded token count, compiled group by group (CompiledGraph, JIT), weights
 * prepared on the first call. A call is CompiledGraph::run on the loaded tensors: every group's
 * kernel plus converting x, cos and sin in and y, k and v out (float64 tensors at the interface; at
 * T x hidden elements each, small beside the block's weights) — counted against Tessel.
 */
#pragma once

#include "algorithms/TransformerBlock.h"
#include "compiler/Plan.h"
#include "lowering/CompiledGraph.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessel::bench {

class BlockSystem {
public:
    /** Reads DIR/<input>.f32 (row-major float32) for x, cos, sin and every weight. */
    BlockSystem(const TransformerBlockShape &shape, int64_t tokens, const std::string &dir);
    /** Plans and compiles for target, then runs once (weights prepared). */
    void prepare(const Halide::Target &target);
    void run();
    /** y [T, hidden] of the latest run, row-major float32. */
    std::vector<float> output() const;

private:
    TransformerBlockShape shape_;
    int64_t tokens_;
    std::map<std::string, dsl::Tensor> inputs_;
    std::unique_ptr<PlannedProgram> program_;
    std::unique_ptr<CompiledGraph> compiled_;
    std::vector<dsl::Tensor> outputs_;
};

}  // namespace tessel::bench
