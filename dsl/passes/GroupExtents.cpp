#include "dsl/passes/GroupExtents.h"

#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

std::optional<std::map<std::string, int64_t>> GroupExtents::concrete(const std::map<std::string, int64_t> &symbols) const {
    std::map<std::string, int64_t> out;
    for (const auto &[name, e] : extents) {
        if (e.dim.is_static()) {
            out[name] = e.dim.size;
        } else if (e.dim.kind == Dim::Kind::Symbol) {
            auto it = symbols.find(e.dim.symbol);
            if (it == symbols.end()) return std::nullopt;
            out[name] = it->second;
        } else {
            return std::nullopt;
        }
    }
    return out;
}

std::string GroupExtents::to_string(const Graph &g) const {
    std::string s;
    for (const char *name : {"M", "K", "N"}) {
        auto it = extents.find(name);
        if (it == extents.end()) continue;
        s += (s.empty() ? "" : " ") + std::string(name) + "=" + print_dim(g, it->second.dim);
    }
    return s;
}

GroupExtents group_extents(const Graph &g, const FusionGroup &group) {
    GroupExtents e;
    auto add = [&](const char *name, ValueId v, int axis) {
        e.extents[name] = {v, axis, resolve_dim(g, g.node(v).type.dims[axis])};
    };
    if (!group.outputs.empty()) {
        const ValueId y = group.outputs.front();
        const int rank = g.node(y).type.rank();
        if (rank >= 1) add("N", y, rank - 1);
        if (rank >= 2) add("M", y, rank - 2);
    }
    for (ValueId v : group.nodes) {
        const Node &n = g.node(v);
        if (n.op != Op::MatMul) continue;
        const ValueId a = n.inputs[0];
        add("K", a, g.node(a).type.rank() - 1);
        break;
    }
    return e;
}

}  // namespace tessel::dsl
