#include "driver/PlannedGraph.h"

#include "dsl/Simplify.h"
#include "lowering/ScheduleGroup.h"

namespace tessel {

PlannedGraph plan_graph(const std::string &file, const Halide::Target &target,
                        const std::map<std::string, int64_t> &symbols, bool remat,
                        std::optional<int64_t> memory_budget) {
    PlannedGraph p{dsl::simplify_file(file).graph, {}, symbols, std::nullopt, {}};
    for (dsl::ValueId v : p.graph.order())
        for (const auto &d : p.graph.node(v).type.dims)
            if (d.kind == dsl::Dim::Kind::Symbol) p.sizes.emplace(d.symbol, dsl::kDefaultSymbolSize);
    const dsl::FusionOptions fusion = lower::fusion_options(target, symbols);
    if (remat || memory_budget) {
        dsl::RematOptions ro;
        ro.fusion = fusion;
        ro.symbols = p.sizes;
        ro.memory_budget = memory_budget;
        p.remat = dsl::rematerialize(p.graph, ro);
    }
    p.plan = dsl::plan_fusion(p.graph, fusion);
    // Layouts last, for the groups as planned; the conversions they insert are groups of their own.
    if (!target.has_gpu_feature()) {
        p.layouts = dsl::assign_layouts(p.graph, p.plan, lower::layout_options(target));
        if (p.layouts.conversions > 0) p.plan = dsl::plan_fusion(p.graph, fusion);
    }
    return p;
}

}  // namespace tessel
