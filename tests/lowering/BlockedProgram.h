/** \file
 * For the quantized-weight tests: a graph compiled as the compiler compiles it, cpu_blocked
 * fitted to its matmul groups; its matmul groups lowered; the interpreter's outputs on given inputs. */
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/passes/FusionPolicy.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/Library.h"

namespace tessel::testing {

struct BlockedProgram {
    dsl::Graph g;  ///< simplified; the kernels point into it
    std::unique_ptr<CompiledGraph> compiled;
};

inline std::unique_ptr<BlockedProgram> compile_blocked(dsl::Graph graph, const Halide::Target &target) {
    auto p = std::make_unique<BlockedProgram>();
    p->g = dsl::simplify_graph(std::move(graph)).graph;
    const dsl::FusionPlan plan = dsl::plan_fusion(p->g, lower::fusion_options(target));
    ScheduleChooser choose = [&](const dsl::FusionGroup &fg,
                                 const lower::LoweredGroup &lg) -> std::optional<sched::ScheduleSpec> {
        if (fg.kind != dsl::GroupKind::MatmulEpilogue) return std::nullopt;
        return lower::library_schedule_for("cpu_blocked", lg, target);
    };
    p->compiled = std::make_unique<CompiledGraph>(p->g, plan, target, choose);
    return p;
}

/** The lowered matmul groups of g (simplified) as fusion plans them for `target`. */
inline std::vector<lower::LoweredGroup> lowered_matmul_groups(const dsl::Graph &g, const Halide::Target &target) {
    std::vector<lower::LoweredGroup> out;
    for (const auto &fg : dsl::plan_fusion(g, lower::fusion_options(target)).groups)
        if (fg.kind == dsl::GroupKind::MatmulEpilogue) out.push_back(lower::lower_group(g, fg));
    return out;
}

inline std::vector<dsl::Tensor> interpreted(const dsl::Graph &g, const std::map<std::string, dsl::Tensor> &inputs,
                                            const std::map<std::string, int64_t> &symbols) {
    dsl::RunOptions ro;
    ro.symbol_sizes = symbols;
    return dsl::interpret(g, inputs, ro).outputs;
}

}  // namespace tessel::testing
