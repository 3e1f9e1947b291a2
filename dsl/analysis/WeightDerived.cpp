#include "dsl/analysis/WeightDerived.h"

#include <algorithm>

namespace tessel::dsl {

std::vector<char> weight_derived(const Graph &g) {
    ValueId largest = 0;
    for (ValueId v : g.order()) largest = std::max(largest, v);
    std::vector<char> derived(g.order().empty() ? 0 : largest + 1, 0);
    for (ValueId v : g.order()) {  // program order: operands before users
        const Node &n = g.node(v);
        if (is_weight(g, v)) {
            derived[v] = 1;
            continue;
        }
        if (!n.is_pure() || !n.has_result() || n.op == Op::Input || n.op == Op::Constant || n.inputs.empty()) continue;
        bool all = true, any_weight = false;
        for_each_dependency(n, [&](ValueId d) {
            const bool constant = g.node(d).op == Op::Constant;
            all = all && (derived[d] || constant);
            any_weight = any_weight || derived[d];
        });
        // A widening cast (bf16 -> f32), unpacking int4 pairs and repeating a group's scale run per
        // call: the kernel then reads the narrow prepared value (half or an eighth of the bytes)
        // and expands it in registers.
        const bool widens = (n.op == Op::Cast && byte_size(n.type.dtype) > byte_size(g.node(n.inputs[0]).type.dtype)) ||
                            n.op == Op::UnpackInt4 || n.op == Op::RepeatInterleave;
        derived[v] = all && any_weight && !widens;
    }
    return derived;
}

}  // namespace tessel::dsl
