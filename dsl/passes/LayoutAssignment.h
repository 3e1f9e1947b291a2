/** \file
 * Layout assignment: chooses the physical layout (dsl/ir/Layout.h) of every value whose layout
 * is Tessel's to choose, weighing the per-call cost of each of its readers over the whole
 * consumer graph, and writes the choice into the value's `layout` slot.
 *
 * Which values. A weight and a value prepared from weights (FusionGroup::prepared) is stored
 * once and read on every call, so converting it costs nothing per call: its layout is free to
 * choose, and the conversion's one-time cost (bytes moved when preparing) is reported. Never
 * changed: an activation input or a graph output (the caller's buffer, in the layout the text
 * states), a value whose layout the text or the builder already set (the user's decision; its
 * region is reported as forced), and a value a matmul group writes (its schedules address the
 * loops of a row-major output).
 *
 * Why it is legal. A layout changes where elements live, never their values: every kernel reads
 * and writes a value through its layout (lowering/LowerToHalide.h maps logical indices to
 * physical coordinates) and a weight is converted when it is prepared (CompiledGraph), so the
 * results are the same bit for bit under any assignment.
 *
 * The decision. A region is one such value with all its per-call readers. Each candidate layout
 * (row-major as the graph states it — the producer's layout, what "forcing one layout through"
 * means here —, and panels of the register block's width for a value read as a matmul's right
 * operand) gets a per-call cost: the sum over the expected shapes (a profile, or the fusion
 * estimate's symbol sizes) of each reader's bytes divided by the rate at which the loop nest
 * serving that shape reads the layout (LayoutCostModel). Regions are independent (a prepared
 * value's readers read it directly; there is no conversion between readers), so choosing each
 * region's cheapest candidate is exact for the whole graph. The plan logs, per region, the
 * chosen layout's cost, the cost of forcing the producer's layout, and the best alternative.
 *
 * Not assigned yet: layouts of intermediates between per-call groups (a conversion group would
 * be needed where readers disagree) — they stay row-major.
 */
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"

namespace tessel::dsl {

/** How fast each CPU loop-nest family reads a matmul's right operand in each layout, as a
 * fraction of reading it row-major front to back. The families are the CPU schedule's
 * (schedules/MatmulCpuSchedules.h): gemv (M == 1), decode (M < mr), split-K gemm
 * (mr <= M <= decode_max_m), gemm (larger M). Defaults: measured by `make bench` (the layout
 * rows, docs/results/layouts_cpu.txt); see LayoutCostModel::measured(). */
struct LayoutCostModel {
    int panel_width = 48;     ///< columns of the register block (CpuBlocking::nr)
    int mr = 8;               ///< rows of the register block
    int decode_max_m = 16;    ///< largest M of the split-K nests
    /** Read rate of panels relative to row-major, per family: gemv, decode, split-K gemm, gemm. */
    double panel_rate[4] = {1.0, 1.0, 1.0, 1.0};
    /** Extra bytes per byte of w the gemm nest moves packing a row-major w per call (read strided,
     * write the panel); panels are packed once, when the weight is prepared. */
    double gemm_pack_bytes = 1.0;
    static LayoutCostModel measured(int panel_width, int mr, int decode_max_m);
    int family(int64_t m) const;
};

struct LayoutCandidate {
    Layout layout;
    double per_call_bytes = 0;  ///< cost per call, in bytes read at the row-major rate
    int64_t one_time_bytes = 0; ///< converting when prepared (0: the layout it is computed in)
    std::string why;
};

struct LayoutRegion {
    ValueId value = kNoValue;
    std::vector<ValueId> readers;           ///< per-call ops that read the value
    std::vector<LayoutCandidate> candidates; ///< candidates[0] is the producer's (row-major)
    size_t chosen = 0;
    bool forced = false;                    ///< the text set the layout; not changed
    std::string reason;
};

struct LayoutPlan {
    std::vector<LayoutRegion> regions;
    /** Per region: the value, its readers, each candidate's cost, the choice and why. */
    std::string to_string(const Graph &g) const;
};

struct LayoutOptions {
    LayoutCostModel model;
    /** Expected calls: symbol bindings with a weight each (e.g. a shape profile's counts). Empty:
     * the fusion plan's symbol sizes, weight 1. */
    std::vector<std::pair<std::map<std::string, int64_t>, double>> shapes;
};

/** Assigns layouts to the weights and prepared values of `g` planned as `plan`, and returns the
 * regions with their costs. Changes only `layout` slots (see the file comment). */
LayoutPlan assign_layouts(Graph &g, const FusionPlan &plan, const LayoutOptions &options);

}  // namespace tessel::dsl
