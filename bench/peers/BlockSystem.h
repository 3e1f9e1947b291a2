/** \file
 * The transformer block over a KV cache (algorithms/TransformerBlock.h, kv_cache) as a
 * peer-benchmark system: T new tokens after `past` positions already in the caches (prefill:
 * past 0; decode: T of 1 to 16 after past of 512 and more), planned by plan() at those sizes and
 * compiled group by group (CompiledGraph, JIT), weights prepared on the first call. A call is
 * CompiledGraph::run_buffers on buffers the system keeps (x, cos, sin, the caches of past + T positions,
 * y): every kernel, no conversion; the caches are donated and passed as their own updates, so
 * each call writes the new keys and values in place (the same positions every call).
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
    /** Reads DIR/<input>.f32 (row-major float32) for x [T, hidden], cos and sin [T, head_dim],
     * k_cache and v_cache [past + T, kv_heads, head_dim] (the first `past` positions the past's
     * keys and values) and every weight. */
    BlockSystem(const TransformerBlockShape &shape, int64_t tokens, int64_t past, const std::string &dir);
    /** Plans and compiles for target, then runs once (weights prepared). */
    void prepare(const Halide::Target &target);
    void run();
    /** y [T, hidden] of the latest run, row-major float32. */
    std::vector<float> output() const;
    /** Each group's median seconds over `calls` calls timed group by group, with its ideal work:
     * flops and bytes read and written (dsl/analysis/MemoryTraffic.h). */
    struct GroupTime {
        std::string name, kind;
        double seconds = 0, flops = 0, bytes = 0;
    };
    std::vector<GroupTime> group_times(int calls);

private:
    TransformerBlockShape shape_;
    int64_t tokens_, past_;
    std::map<std::string, dsl::Tensor> weights_;
    std::map<std::string, Halide::Buffer<>> buffers_;  ///< per-call inputs, the caches and y
    std::unique_ptr<PlannedProgram> program_;
    std::unique_ptr<CompiledGraph> compiled_;
};

}  // namespace tessel::bench
