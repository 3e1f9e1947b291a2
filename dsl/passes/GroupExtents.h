/** \file
 * GroupExtents: the one definition of the extents a fusion group is described by. Schedule
 * guards ("M == 1"), the tuner's workload, the tuning key's shapes, the measuring child and the
 * run-time dispatcher all read a group's extents from here, so they cannot disagree.
 *
 *  - "M": rows of the group's first output (its second-to-last axis; absent for rank 1);
 *  - "N": columns of the first output (its last axis);
 *  - "K": the reduction extent of the group's first contraction in program order (its left
 *         operand's last axis); absent when the group has no contraction.
 *
 * Each extent is kept as the value and axis it is read from and as its dimension resolved
 * through shape code (static, a symbol such as M, or an unresolved shape-code value).
 *
 * Example: for gelu(x @ w + b) with x f32[M, K], w f32[K, 4096]:
 *   GroupExtents e = group_extents(g, plan.groups[0]);
 *   e.concrete(g, {{"M", 1}, {"K", 4096}})   // {{"K", 4096}, {"M", 1}, {"N", 4096}}
 */
#pragma once

#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace tessel::dsl {

struct GroupExtent {
    ValueId value = kNoValue;  ///< a value of the group (or one of its operands)
    int axis = 0;              ///< tensor axis of `value`, outermost first
    Dim dim;                   ///< that axis's dim, resolved through shape code
};

struct GroupExtents {
    std::map<std::string, GroupExtent> extents;  ///< by name: "M", "N", "K"

    bool has(const std::string &name) const { return extents.count(name) > 0; }
    /** Every extent as a number: static sizes, and symbols bound by `symbols`; nullopt when a
     * symbol is unbound or a dim depends on shape code that did not fold. */
    std::optional<std::map<std::string, int64_t>> concrete(const std::map<std::string, int64_t> &symbols) const;
    /** "M=1 K=4096 N=4096" style text of the symbolic form: "M=M K=K N=4096". */
    std::string to_string(const Graph &g) const;
};

/** The extents of `group` of `g` (see the file comment). Does not modify g. */
GroupExtents group_extents(const Graph &g, const FusionGroup &group);

}  // namespace tessel::dsl
