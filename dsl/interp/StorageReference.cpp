#include "dsl/interp/StorageReference.h"

#include <map>
#include <set>

#include "dsl/ir/Diagnostics.h"
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
    std::map<ValueId, ValueId> packed;  // a widened pack_int4 -> the values it packed
    for (ValueId v : out.order()) {
        Node &n = out.node(v);
        if (!n.has_result() || n.op == Op::Input || !is_narrow_storage(n.type.dtype)) continue;
        bool reads_widened = false;
        for (ValueId in : n.inputs) reads_widened = reads_widened || widened.count(in);
        if (n.op != Op::Cast && !reads_widened) continue;
        // In f32 there are no nibbles: unpack_int4(pack_int4(q)) reads q itself, and the pack
        // keeps its shape as a slice of q that nothing but the unpack reads.
        if (n.op == Op::PackInt4) {
            packed[v] = n.inputs[0];
            n.op = Op::Slice;
            n.attrs.start = 0;
        } else if (n.op == Op::UnpackInt4) {
            const auto source = packed.find(n.inputs[0]);
            if (source == packed.end())
                throw UserError("unpack_int4 %" + out.display_name(v) +
                                " reads packed values other than one pack_int4's: no f32 counterpart");
            n.op = Op::Copy;
            n.inputs = {source->second};
        }
        n.type.dtype = DType::F32;
        n.type = infer_type(out, n);
        widened.insert(v);
    }
    return out;
}

}  // namespace tessel::dsl
