/** \file
 * The size of a fused group as its compile sees it, and the budget plan_fusion() keeps every
 * group within (Fusion.h, rule `size`). Halide's compile time grows faster than linearly in the
 * size of one pipeline (its common-subexpression pass compares expressions structurally, so a
 * chain of n inlined ops costs about n^2), and every group pays a fixed cost in LLVM; a graph of
 * 100,000 ops compiles in bounded time only as many groups of bounded size. XLA bounds fusions
 * the same way (ProducerConsumerMergedTooLarge), Inductor by max_fusion_size.
 *
 * Two measures:
 *  - ops: members that are kernel ops (constants are cloned into readers and not counted);
 *  - expression nodes: an upper bound of the ops the lowering builds when it inlines the group
 *    (ExprBuilder::at). A pure value is built once per distinct index it is read at: a reader of
 *    the same shape reading it element for element shares the reader's index, any other reader
 *    (broadcast, transpose, slice, concat, reshape) may read it at new ones, so a value's count
 *    is 1 when only same-index readers read it, plus the counts of its other readers. A
 *    contraction or reduction is a Func: built once, whatever reads it. Chains of element-wise
 *    ops count one node per op; `%b = slice(%a) + slice(%a, start=1)` repeated doubles per step.
 *
 * Legal on any node set of a graph; program order is not required.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dsl/ir/Graph.h"

namespace tessel::dsl {

struct GroupSize {
    int64_t ops = 0;
    int64_t expression_nodes = 0;  ///< saturates at INT64_MAX / 4
};

/** The budget per fused group; a limit of 0 is not checked. */
struct GroupBudget {
    int64_t max_ops = 64;
    int64_t max_expression_nodes = 1024;
    /** "" when `s` is within the budget, else what is over: "96 ops, over the budget of 64". */
    std::string over(const GroupSize &s) const;
};

GroupSize group_size(const Graph &g, const std::vector<ValueId> &nodes);

}  // namespace tessel::dsl
