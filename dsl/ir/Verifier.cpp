#include "dsl/ir/Verifier.h"

#include <set>
#include <unordered_map>

#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

std::vector<std::string> verify(const Graph &g) {
    std::vector<std::string> errs;
    std::unordered_map<ValueId, size_t> pos;
    std::set<std::string> names;
    size_t i = 0;
    for (ValueId id : g.order()) {
        const Node &n = g.node(id);
        std::string where = "%" + g.display_name(id) + " (" + to_string(n.op) + ")";
        if (n.id != id) errs.push_back(where + ": node id " + std::to_string(n.id) + " != slot " + std::to_string(id));
        if (!names.insert(g.display_name(id)).second) errs.push_back(where + ": duplicate name");
        bool deps_ok = true;
        for_each_dependency(n, [&](ValueId v) {
            if (!g.contains(v) || !pos.count(v)) {
                errs.push_back(where + ": uses value " + std::to_string(v) + " that is not defined before it");
                deps_ok = false;
            } else if (!g.node(v).has_result()) {
                errs.push_back(where + ": uses %" + g.display_name(v) + " which has no value");
                deps_ok = false;
            }
        });
        if (deps_ok) {
            try {
                TensorType t = infer_type(g, n);
                if (n.has_result() && !same_type(g, t, n.type))
                    errs.push_back(where + ": type " + print_type(g, n.type) + " but inferred " + print_type(g, t));
            } catch (const TypeError &e) {
                errs.push_back(where + ": " + e.what());
            }
        }
        pos[id] = i++;
    }
    for (ValueId o : g.outputs)
        if (!g.contains(o) || !pos.count(o) || !g.node(o).has_result())
            errs.push_back("output " + std::to_string(o) + " is not a value of the graph");
    if (g.output_names.size() > g.outputs.size())
        errs.push_back(std::to_string(g.output_names.size()) + " output names for " + std::to_string(g.outputs.size()) +
                       " outputs");
    for (size_t k = 0; k < g.outputs.size() && k < g.output_names.size(); ++k) {
        // A bound name must not also name a value: `output %a = %x` next to a value %a is ambiguous.
        const std::string &name = g.output_names[k];
        if (name.empty() || !g.contains(g.outputs[k])) continue;
        for (ValueId other : g.order())
            if (other != g.outputs[k] && g.node(other).has_result() && g.display_name(other) == name)
                errs.push_back("output %" + name + " = %" + g.display_name(g.outputs[k]) +
                               ": the name also belongs to another value");
    }
    return errs;
}

void verify_or_throw(const Graph &g, const std::string &context) {
    auto errs = verify(g);
    if (errs.empty()) return;
    std::string msg = context + ": invalid graph:";
    for (const auto &e : errs) msg += "\n  " + e;
    throw InternalError(msg + "\n" + print(g));
}

}  // namespace tessel::dsl
