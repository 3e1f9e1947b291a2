#include "dsl/passes/DCE.h"

#include <unordered_set>

#include "dsl/analysis/RunTimeFailures.h"
#include "dsl/ir/Printer.h"

namespace tessel::dsl {

namespace {

/** Kept whether or not anything reads it: inputs, effects, and ops that can raise at run time
 * (removing one would remove an error the program raises). */
bool is_root(const Graph &g, ValueId id) {
    const Node &n = g.node(id);
    Effect e = n.info().effect;
    return n.op == Op::Input || e == Effect::WritesState || e == Effect::Observable || e == Effect::Random ||
           run_time_failure(g, id).kind != Failure::Never;
}

}  // namespace

bool eliminate_dead_code(Graph &g, RewriteLog *log) {
    std::unordered_set<ValueId> live;
    std::vector<ValueId> work(g.outputs.begin(), g.outputs.end());
    for (ValueId id : g.order())
        if (is_root(g, id)) work.push_back(id);
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
                         "no output, state write, assert, print, random draw or op that can fail "
                         "at run time depends on it, and it cannot fail itself"});
    for (ValueId id : dead) g.erase(id);
    bool changed = !dead.empty();
    return changed;
}

}  // namespace tessel::dsl
