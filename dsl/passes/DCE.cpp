#include "dsl/passes/DCE.h"

#include <unordered_set>

#include "dsl/ir/Printer.h"

namespace tessel::dsl {

namespace {

bool is_root(const Node &n) {
    Effect e = n.info().effect;
    return n.op == Op::Input || e == Effect::WritesState || e == Effect::Observable ||
           e == Effect::Random;
}

}  // namespace

bool eliminate_dead_code(Graph &g, RewriteLog *log) {
    std::unordered_set<ValueId> live;
    std::vector<ValueId> work(g.outputs.begin(), g.outputs.end());
    for (ValueId id : g.order())
        if (is_root(g.node(id))) work.push_back(id);
    while (!work.empty()) {
        ValueId v = work.back();
        work.pop_back();
        if (!live.insert(v).second) continue;
        for_each_dependency(g.node(v), [&](ValueId d) { work.push_back(d); });
    }
    std::vector<ValueId> dead;
    for (ValueId id : g.order())
        if (!live.count(id)) dead.push_back(id);
    for (ValueId id : dead)
        if (log)
            log->record({"dce", "dead-value", print_node(g, id), "(removed)",
                         "no output, state write, assert, print or random draw depends on it"});
    for (ValueId id : dead) g.erase(id);
    bool changed = !dead.empty();
    return changed;
}

}  // namespace tessel::dsl
