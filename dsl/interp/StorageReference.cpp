#include "dsl/interp/StorageReference.h"

#include <set>

#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

bool has_narrow_storage(const Graph &g) {
    for (ValueId v : g.order()) {
        const Node &n = g.node(v);
        if (n.has_result() && n.op != Op::Input && is_narrow_storage(n.type.dtype)) return true;
    }
    return false;
}

Graph widen_storage(const Graph &g) {
    Graph out = g;
    std::set<ValueId> widened;
    for (ValueId v : out.order()) {
        Node &n = out.node(v);
        if (!n.has_result() || n.op == Op::Input || !is_narrow_storage(n.type.dtype)) continue;
        bool reads_widened = false;
        for (ValueId in : n.inputs) reads_widened = reads_widened || widened.count(in);
        if (n.op != Op::Cast && !reads_widened) continue;
        n.type.dtype = DType::F32;
        n.type = infer_type(out, n);
        widened.insert(v);
    }
    return out;
}

}  // namespace tessel::dsl
