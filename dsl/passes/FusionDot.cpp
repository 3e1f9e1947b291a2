// fusion_plan_to_dot: the graph as Graphviz, one cluster per fusion group, cut edges labelled.
#include <set>
#include <sstream>

#include "dsl/ir/Printer.h"
#include "dsl/passes/Fusion.h"
#include "dsl/passes/FusionPolicy.h"

namespace tessel::dsl {

namespace {

std::string esc(const std::string &s) {
    std::string out;
    for (char ch : s) {
        if (ch == '"' || ch == '\\') out += '\\';
        if (ch == '\n') {
            out += "\\n";
            continue;
        }
        out += ch;
    }
    return out;
}

std::string node_label(const Graph &g, ValueId v) {
    const Node &n = g.node(v);
    return "%" + g.display_name(v) + " = " + to_string(n.op) + "\n" + (n.has_result() ? print_type(g, n.type) : "");
}

}  // namespace

std::string fusion_plan_to_dot(const Graph &g, const FusionPlan &p) {
    std::ostringstream os;
    os << "digraph \"" << esc(g.name) << "\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n"
       << "  edge [fontsize=9];\n";
    std::set<ValueId> placed;
    for (const FusionGroup &grp : p.groups) {
        // The cluster label keeps the estimate's summary; its breakdown is in FusionPlan::to_string.
        std::string estimate = grp.estimate.to_string();
        estimate = estimate.substr(0, estimate.find(" ("));
        os << "  subgraph cluster_g" << grp.id << " {\n    label=\""
           << esc("group " + std::to_string(grp.id) + " " + grp.name + " (" + std::string(dsl::to_string(grp.kind)) + ")\n" +
                  estimate)
           << "\";\n    style=filled; color=\"#c0c0c0\"; fillcolor=\"#f0f4ff\";\n";
        for (ValueId v : grp.nodes)
            if (placed.insert(v).second) os << "    n" << v << " [label=\"" << esc(node_label(g, v)) << "\"];\n";
        os << "  }\n";
    }
    for (ValueId v : g.order()) {
        if (placed.count(v)) continue;
        const Node &n = g.node(v);
        const bool input = n.op == Op::Input;
        os << "  n" << v << " [label=\"" << esc(node_label(g, v)) << (input ? "" : "\n(runs outside kernels)") << "\""
           << (input ? ", shape=ellipse" : ", style=dashed") << "];\n";
    }
    std::map<std::pair<ValueId, ValueId>, const FusionDecision *> cut;
    for (const FusionDecision &d : p.decisions)
        if (!d.fused && d.consumer != kNoValue) cut[{d.producer, d.consumer}] = &d;
    for (ValueId v : g.order()) {
        std::set<ValueId> seen;
        for_each_dependency(g.node(v), [&](ValueId d) {
            if (!seen.insert(d).second) return;
            os << "  n" << d << " -> n" << v;
            auto it = cut.find({d, v});
            if (it != cut.end())
                os << " [style=dashed, color=red, fontcolor=red, label=\"" << esc(it->second->rule + ": " + it->second->reason)
                   << "\"]";
            os << ";\n";
        });
    }
    int i = 0;
    for (ValueId out : g.outputs) {
        os << "  out" << i << " [label=\"output " << i << "\", shape=plaintext];\n  n" << out << " -> out" << i << ";\n";
        i++;
    }
    os << "}\n";
    return os.str();
}

}  // namespace tessel::dsl
