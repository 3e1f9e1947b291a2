#include "dsl/passes/SiblingMatmulConcat.h"

#include <algorithm>

#include "dsl/analysis/WeightDerived.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

namespace {

/** Matmuls reading `h` as left operand whose right operand qualifies (see the header). */
std::vector<ValueId> concatenable_siblings(const Graph &g, ValueId h, const std::vector<char> &from_weights) {
    // Values this pass added are not in from_weights (computed before it ran); none is a candidate.
    auto weight_derived_value = [&](ValueId v) { return (size_t)v < from_weights.size() && from_weights[(size_t)v]; };
    std::vector<ValueId> out;
    for (ValueId u : g.users(h)) {
        const Node &m = g.node(u);
        if (m.op != Op::MatMul || m.inputs[0] != h || m.inputs[1] == h) continue;
        const Node &w = g.node(m.inputs[1]);
        if (w.type.rank() != 2 || !weight_derived_value(m.inputs[1]) || !resolve_dim(g, w.type.dims[1]).is_static() ||
            !w.layout.empty())
            continue;
        if (std::find(out.begin(), out.end(), u) == out.end()) out.push_back(u);
    }
    std::sort(out.begin(), out.end(), [&](ValueId a, ValueId b) { return g.position(a) < g.position(b); });
    if (out.empty()) return out;
    // One dtype and one K; every right operand defined before the first matmul.
    const Node &first_w = g.node(g.node(out[0]).inputs[1]);
    std::vector<ValueId> kept;
    for (ValueId m : out) {
        const Node &w = g.node(g.node(m).inputs[1]);
        if (w.type.dtype == first_w.type.dtype && same_dim(g, w.type.dims[0], first_w.type.dims[0]) &&
            g.position(g.node(m).inputs[1]) < g.position(out[0]))
            kept.push_back(m);
    }
    return kept;
}

}  // namespace

bool concat_sibling_matmuls(Graph &g, RewriteLog *log) {
    const std::vector<char> from_weights = weight_derived(g);
    bool changed = false;
    const std::vector<ValueId> order = g.order();  // a copy: the loop inserts and erases
    for (ValueId h : order) {
        if (!g.contains(h) || !g.node(h).has_result()) continue;  // a sibling erased by an earlier rewrite
        const std::vector<ValueId> mms = concatenable_siblings(g, h, from_weights);
        if (mms.size() < 2) continue;
        // concat(concat(w1, w2), w3)... then one matmul, before the first sibling.
        const ValueId at = mms[0];
        Attrs along;
        along.axis = 1;
        ValueId wcat = g.node(mms[0]).inputs[1];
        std::string widths;
        for (size_t i = 0; i < mms.size(); i++) {
            const ValueId w = g.node(mms[i]).inputs[1];
            widths += (i ? " + " : "") + std::to_string(resolve_dim(g, g.node(w).type.dims[1]).size);
            if (i > 0) wcat = g.insert_before(at, make_node(g, Op::Concat, {wcat, w}, along));
        }
        const ValueId joined = g.insert_before(at, make_node(g, Op::MatMul, {h, wcat}));
        const int last = g.node(joined).type.rank() - 1;
        int64_t start = 0;
        std::vector<ValueId> slices;  // all inserted before `at` is erased
        for (ValueId m : mms) {
            Attrs cut;
            cut.axis = last;
            cut.start = start;
            const TensorType t = g.node(m).type;
            start += resolve_dim(g, t.dims[(size_t)last]).size;
            slices.push_back(g.insert_before(at, make_node(g, Op::Slice, {joined}, cut, t)));
        }
        std::string before, after;
        for (size_t i = 0; i < mms.size(); i++) {
            before += (before.empty() ? "" : "; ") + print_node(g, mms[i]);
            const std::string name = g.node(mms[i]).name;
            g.replace_all_uses(mms[i], slices[i]);
            g.erase(mms[i]);
            if (!name.empty()) g.set_name(slices[i], name);
            after += (after.empty() ? "" : "; ") + print_node(g, slices[i]);
        }
        if (log)
            log->record({"concat-sibling-matmuls", "concat-weights", before, print_node(g, joined) + "; " + after,
                         std::to_string(mms.size()) + " matmuls read %" + g.display_name(h) + " with weights (widths " + widths +
                             "): one matmul over their concatenation (prepared once with the weights) reads it once; "
                             "each result is a slice of the same dot products"});
        changed = true;
    }
    return changed;
}

}  // namespace tessel::dsl
