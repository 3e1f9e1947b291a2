#include "dsl/passes/ConstantFolding.h"

#include <cstring>

#include "dsl/analysis/RunTimeFailures.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

namespace {

const char *kPass = "fold-constants";

std::string explain_dim(const Graph &g, const Dim &from, const Dim &to) {
    const Node &v = g.node(from.value);
    if (v.op == Op::ShapeOf)
        return "%" + g.display_name(from.value) + " = shape_of(%" + g.display_name(v.inputs[0]) + ")[" +
               std::to_string(v.attrs.axis) + "] is dim " + std::to_string(v.attrs.axis) + " of %" + g.display_name(v.inputs[0]) +
               ", which is " + print_dim(g, to);
    return "%" + g.display_name(from.value) + " evaluates to the constant " + print_dim(g, to);
}

/** Rewrite dims that refer to shape code into the static size or symbol they resolve to. */
bool fold_dims(Graph &g, Node &n, RewriteLog *log) {
    bool changed = false;
    for (size_t i = 0; i < n.type.dims.size(); ++i) {
        Dim d = n.type.dims[i];
        if (d.kind != Dim::Kind::Value) continue;
        Dim r = resolve_dim(g, d);
        if (r.kind == Dim::Kind::Value) continue;
        std::string before = print_node(g, n.id), why = explain_dim(g, d, r);
        n.type.dims[i] = r;
        changed = true;
        if (log) log->record({kPass, "fold-dim", before, print_node(g, n.id), why});
    }
    return changed;
}

Tensor constant_tensor(const Graph &g, const Node &c) {
    std::vector<int64_t> shape;
    for (const Dim &d : c.type.dims) shape.push_back(resolve_dim(g, d).size);
    return evaluate_pure(c, {}, shape);
}

bool foldable(const Graph &g, const Node &n, std::vector<int64_t> *shape) {
    // An op without operands is a leaf already (an input, a constant, an index function such as
    // causal_mask, which kernels compute inline: folded, it would become S x L stored values).
    if (!n.is_pure() || n.inputs.empty() || !n.has_result()) return false;
    for (ValueId v : n.inputs)
        if (g.node(v).op != Op::Constant) return false;
    int64_t numel = 1;
    for (const Dim &d : n.type.dims) {
        Dim r = resolve_dim(g, d);
        if (!r.is_static()) return false;
        shape->push_back(r.size);
        if (__builtin_mul_overflow(numel, r.size, &numel) || numel > kMaxFoldedElements) return false;
    }
    for (ValueId v : n.inputs)
        for (const Dim &d : g.node(v).type.dims)
            if (!resolve_dim(g, d).is_static()) return false;
    return numel <= kMaxFoldedElements;
}

Node constant_node(DType dt, const std::vector<int64_t> &shape, std::vector<double> data) {
    bool splat = !data.empty();
    for (double v : data) splat &= std::memcmp(&v, &data[0], sizeof v) == 0;
    Attrs a;
    a.value = splat ? std::vector<double>{data[0]} : std::move(data);
    TensorType t{dt, {}};
    for (int64_t s : shape) t.dims.push_back(Dim::fixed(s));
    return Node::make(Op::Constant, {}, t, {}, a);
}

void replace(Graph &g, ValueId old, Node c, const char *rule, const std::string &why, RewriteLog *log) {
    std::string before = print_node(g, old);
    c.loc = g.node(old).loc;  // later diagnostics about the value still point at its source
    ValueId id = g.insert_before(old, std::move(c));
    g.replace_all_uses(old, id);
    g.erase(old);
    if (log) log->record({kPass, rule, before, print_node(g, id), why});
}

}  // namespace

bool fold_constants(Graph &g, RewriteLog *log) {
    bool changed = false;
    std::vector<ValueId> order = g.order();
    for (ValueId id : order) {
        // An op certain to fail is reported now: the program fails on every run, and neither a
        // fold nor a later DCE may turn that into a program that runs.
        const FailureCheck failure = run_time_failure(g, id);
        if (failure.kind == Failure::Always) report_static_failure(g, id, failure.reason);
        if (g.node(id).op == Op::Assert) {
            if (failure.kind != Failure::Never) continue;
            // An assert on a constant with no zero can never fail: it is a no-op.
            if (log) log->record({kPass, "fold-assert", print_node(g, id), "(removed)", failure.reason});
            g.erase(id);
            changed = true;
            continue;
        }
        changed |= fold_dims(g, g.node(id), log);
        const Node &n = g.node(id);
        if (n.op == Op::ShapeOf) {
            Dim r = resolve_dim(g, g.node(n.inputs[0]).type.dims[(size_t)n.attrs.axis]);
            if (!r.is_static()) continue;
            replace(g, id, constant_node(DType::I64, {}, {(double)r.size}), "fold-shape-of",
                    "dim " + std::to_string(n.attrs.axis) + " of %" + g.display_name(n.inputs[0]) + " is statically " +
                        std::to_string(r.size),
                    log);
            changed = true;
            continue;
        }
        std::vector<int64_t> shape;
        if (!foldable(g, n, &shape)) continue;
        std::vector<Tensor> ts;
        for (ValueId v : n.inputs) ts.push_back(constant_tensor(g, g.node(v)));
        std::vector<const Tensor *> ptrs;
        for (const Tensor &t : ts) ptrs.push_back(&t);
        Tensor r;
        try {
            r = evaluate_pure(n, ptrs, shape);
        } catch (const RuntimeError &e) {
            // Evaluating it failed, so every run fails here: report it, never fold it away.
            report_static_failure(g, id, e.what());
        }
        replace(g, id, constant_node(n.type.dtype, shape, std::move(r.data)), "fold-constant",
                "all operands are constants; evaluated with the interpreter's kernel, so the "
                "result is bit-identical",
                log);
        changed = true;
    }
    return changed;
}

}  // namespace tessel::dsl
