#include "dsl/passes/Reassociate.h"

#include <algorithm>

#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

namespace {

/** Operand slots that read `v` (a node reading it twice counts twice), plus graph outputs. */
int use_count(const Graph &g, ValueId v) {
    int uses = 0;
    for (ValueId u : g.users(v)) {
        const Node &n = g.node(u);
        uses += (int)std::count(n.inputs.begin(), n.inputs.end(), v);
        for (const Dim &d : n.type.dims) uses += d.kind == Dim::Kind::Value && d.value == v;
    }
    return uses + (int)std::count(g.outputs.begin(), g.outputs.end(), v);
}

/** An interior node is read exactly once, by its chain parent. Counting users instead of uses
 * took %s in %s + %s for interior: it was collected (and erased) twice. */
bool interior(const Graph &g, ValueId v, const Node &root) {
    const Node &n = g.node(v);
    return n.op == root.op && same_type(g, n.type, root.type) && use_count(g, v) == 1;
}

/** Leaves of the chain rooted at `id`, left to right; `shape` gets its bracketing. */
void collect(const Graph &g, ValueId id, const Node &root, bool is_root, std::vector<ValueId> *leaves,
             std::vector<ValueId> *inner, std::string *shape) {
    if (!is_root && !interior(g, id, root)) {
        leaves->push_back(id);
        *shape += "%" + g.display_name(id);
        return;
    }
    inner->push_back(id);
    const Node &n = g.node(id);
    *shape += "(";
    collect(g, n.inputs[0], root, false, leaves, inner, shape);
    *shape += root.op == Op::Add ? " + " : " * ";
    collect(g, n.inputs[1], root, false, leaves, inner, shape);
    *shape += ")";
}

std::string plan_shape(const Graph &g, const std::vector<ValueId> &vars, const std::vector<ValueId> &consts, Op op) {
    const char *sym = op == Op::Add ? " + " : " * ";
    auto chain = [&](const std::vector<ValueId> &xs) {
        std::string s = "%" + g.display_name(xs[0]);
        for (size_t i = 1; i < xs.size(); ++i) s = "(" + s + sym + "%" + g.display_name(xs[i]) + ")";
        return s;
    };
    if (consts.empty()) return chain(vars);
    return "(" + chain(vars) + sym + chain(consts) + ")";
}

}  // namespace

bool reassociate(Graph &g, RewriteLog *log) {
    if (g.mode != NumericMode::Fast) return false;
    bool changed = false;
    std::vector<ValueId> order = g.order();
    for (ValueId id : order) {
        if (!g.contains(id)) continue;
        Node root = g.node(id);
        if (root.op != Op::Add && root.op != Op::Mul) continue;
        auto users = g.users(id);
        if (users.size() == 1 && interior(g, id, g.node(users[0])))
            continue;  // not the top of its chain: its one user continues it
        std::vector<ValueId> leaves, inner;
        std::string before;
        collect(g, id, root, true, &leaves, &inner, &before);
        if (leaves.size() < 3) continue;
        std::vector<ValueId> vars, consts;
        for (ValueId l : leaves) (g.node(l).op == Op::Constant ? consts : vars).push_back(l);
        if (vars.empty()) continue;  // all constants: constant folding's job
        std::sort(vars.begin(), vars.end());
        std::string after = plan_shape(g, vars, consts, root.op);
        if (after == before) continue;
        auto combine = [&](const std::vector<ValueId> &xs) {
            ValueId acc = xs[0];
            for (size_t i = 1; i < xs.size(); ++i) acc = g.insert_before(id, make_node(g, root.op, {acc, xs[i]}));
            return acc;
        };
        ValueId v = combine(vars);
        if (!consts.empty()) v = g.insert_before(id, make_node(g, root.op, {v, combine(consts)}));
        g.replace_all_uses(id, v);
        for (ValueId x : inner) g.erase(x);
        if (log)
            log->record({"reassociate", root.op == Op::Add ? "reassociate-add" : "reassociate-mul", before,
                         after + "  (as " + print_node(g, v) + ")",
                         "fast mode allows reassociation (it may change rounding); variables "
                         "ordered by id and constants grouped to expose folding and CSE"});
        changed = true;
    }
    return changed;
}

}  // namespace tessel::dsl
