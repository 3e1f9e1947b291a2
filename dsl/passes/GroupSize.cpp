// Map: ops counted -> readers inside the set -> read counts from the last member back -> sum.
#include "dsl/passes/GroupSize.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "dsl/ir/TypeInference.h"
#include "dsl/passes/FusionPolicy.h"

namespace tessel::dsl {

namespace {

constexpr int64_t kSaturated = INT64_MAX / 4;

int64_t add_saturating(int64_t a, int64_t b) { return std::min(kSaturated, a + b); }

bool is_func(FusionClass c) { return c == FusionClass::Contraction || c == FusionClass::Reduction; }

}  // namespace

std::string GroupBudget::over(const GroupSize &s) const {
    if (max_ops && s.ops > max_ops) return std::to_string(s.ops) + " ops, over the budget of " + std::to_string(max_ops);
    if (max_expression_nodes && s.expression_nodes > max_expression_nodes)
        return "about " + std::to_string(s.expression_nodes) + " expression nodes once inlined, over the budget of " +
               std::to_string(max_expression_nodes);
    return "";
}

GroupSize group_size(const Graph &g, const std::vector<ValueId> &nodes) {
    GroupSize s;
    std::unordered_map<ValueId, FusionClass> cls;  // the members' classes, each worked out once
    cls.reserve(nodes.size());
    for (ValueId v : nodes) cls.emplace(v, fusion_class(g, v));
    const auto &in = cls;
    std::unordered_map<ValueId, std::vector<ValueId>> readers;
    for (ValueId v : nodes) {
        if (cls.at(v) == FusionClass::Constant) continue;
        s.ops++;
        std::vector<ValueId> seen;
        for (ValueId p : g.node(v).inputs)
            if (in.count(p) && std::find(seen.begin(), seen.end(), p) == seen.end()) {
                seen.push_back(p);
                readers[p].push_back(v);
            }
    }
    // Readers come after what they read: visit from the last member back.
    std::vector<ValueId> order;
    order.reserve(cls.size());
    for (const auto &[v, c] : cls) order.push_back(v);
    std::sort(order.begin(), order.end(), [&](ValueId a, ValueId b) { return g.position(a) > g.position(b); });
    std::unordered_map<ValueId, int64_t> builds;
    std::unordered_set<ValueId> only_own_index;  // built once, at its own output index
    // Whether `reader` reads a value of its own type element for element (no index arithmetic).
    auto reads_at_same_index = [&](ValueId reader, ValueId v) {
        return cls.at(reader) == FusionClass::Elementwise && same_type(g, g.node(reader).type, g.node(v).type);
    };
    for (ValueId v : order) {
        if (cls.at(v) == FusionClass::Constant) continue;
        const auto r = readers.find(v);
        int64_t n = 0;
        bool at_own_index = r == readers.end();  // a group output is read at its own index
        if (r != readers.end())
            for (ValueId u : r->second) {
                if (is_func(cls.at(u)) || (reads_at_same_index(u, v) && only_own_index.count(u))) {
                    at_own_index = true;
                    continue;
                }
                n = add_saturating(n, builds[u]);
            }
        builds[v] = is_func(cls.at(v)) ? 1 : add_saturating(n, at_own_index ? 1 : 0);
        if (is_func(cls.at(v)) || n == 0) only_own_index.insert(v);
        s.expression_nodes = add_saturating(s.expression_nodes, builds[v]);
    }
    return s;
}

}  // namespace tessel::dsl
