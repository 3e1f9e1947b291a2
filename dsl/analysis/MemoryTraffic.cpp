#include "dsl/analysis/MemoryTraffic.h"

#include <cstdio>
#include <set>

#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

int64_t dim_size(const Graph &g, const Dim &d0, const SymbolSizes &sizes) {
    const Dim d = resolve_dim(g, d0);
    if (d.is_static()) return d.size;
    if (d.kind == Dim::Kind::Symbol) {
        auto it = sizes.find(d.symbol);
        if (it != sizes.end()) return it->second;
    }
    return kDefaultSymbolSize;
}

int64_t value_numel(const Graph &g, ValueId v, const SymbolSizes &sizes) {
    int64_t n = 1;
    for (const Dim &d : g.node(v).type.dims) n = saturating_mul(n, dim_size(g, d, sizes));
    return n;
}

int64_t value_bytes(const Graph &g, ValueId v, const SymbolSizes &sizes) {
    return saturating_mul(value_numel(g, v, sizes), byte_size(g.node(v).type.dtype));
}

TrafficEstimate estimate_traffic_unfused(const Graph &g, const std::vector<ValueId> &ops, const SymbolSizes &sizes) {
    TrafficEstimate t;
    for (ValueId v : ops) {
        const Node &n = g.node(v);
        std::set<ValueId> read(n.inputs.begin(), n.inputs.end());
        for (ValueId in : read) t.bytes_read = saturating_add(t.bytes_read, value_bytes(g, in, sizes));
        if (n.has_result() && n.op != Op::Constant) t.bytes_written = saturating_add(t.bytes_written, value_bytes(g, v, sizes));
    }
    return t;
}

TrafficEstimate estimate_traffic_grouped(const Graph &g, const std::vector<FusionGroup> &groups, const SymbolSizes &sizes) {
    TrafficEstimate t;
    for (const FusionGroup &grp : groups) {
        std::set<ValueId> members(grp.nodes.begin(), grp.nodes.end()), read;
        // A cache write's kernel reads none of its cache and writes only the new positions.
        for (ValueId v : grp.nodes) {
            const Node &n = g.node(v);
            for (size_t i = 0; i < n.inputs.size(); i++)
                if (!members.count(n.inputs[i]) && !(n.op == Op::UpdateTail && i == 0)) read.insert(n.inputs[i]);
        }
        for (ValueId in : read) t.bytes_read = saturating_add(t.bytes_read, value_bytes(g, in, sizes));
        for (ValueId out : grp.outputs) {
            const ValueId written = g.node(out).op == Op::UpdateTail ? g.node(out).inputs[1] : out;
            t.bytes_written = saturating_add(t.bytes_written, value_bytes(g, written, sizes));
        }
    }
    return t;
}

std::string format_bytes(int64_t bytes) {
    char buf[64];
    const double b = (double)bytes;
    if (bytes < 1024)
        std::snprintf(buf, sizeof buf, "%lld B", (long long)bytes);
    else if (bytes < (1 << 20))
        std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
    else if (bytes < (int64_t(1) << 30))
        std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1 << 20));
    else
        std::snprintf(buf, sizeof buf, "%.2f GiB", b / (int64_t(1) << 30));
    return buf;
}

}  // namespace tessel::dsl
