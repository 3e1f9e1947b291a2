/** \file
 * The phases before lowering, one definition for `tessel compile`, `tessel run` and
 * `tessel lib`: simplify (its last passes are CSE and DCE), then rematerialize (nothing after it
 * may merge equal nodes), then plan fusion, then, on CPU targets, assign layouts
 * (dsl/passes/LayoutAssignment.h); when that inserts conversions, fusion is planned again (each
 * copy is a group of its own, every other group as before). Symbols without a size take
 * kDefaultSymbolSize, as fusion's estimates do.
 */
#pragma once

#include <Halide.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"
#include "dsl/passes/LayoutAssignment.h"
#include "dsl/passes/Rematerialize.h"

namespace tessel {

struct PlannedGraph {
    dsl::Graph graph;
    dsl::FusionPlan plan;
    std::map<std::string, int64_t> sizes;  ///< every symbol, for the memory plan
    std::optional<dsl::RematResult> remat;
    dsl::LayoutPlan layouts;  ///< layout regions and the conversions inserted (CPU targets)
};

/** Plans the graph in `file` for `target`; `symbols` are the sizes fusion estimates with.
 * Rematerializes when `remat` or a `memory_budget` (bytes) is given. */
PlannedGraph plan_graph(const std::string &file, const Halide::Target &target,
                        const std::map<std::string, int64_t> &symbols, bool remat,
                        std::optional<int64_t> memory_budget);

}  // namespace tessel
