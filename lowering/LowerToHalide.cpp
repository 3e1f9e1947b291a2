// LowerToHalide.h's entry points: lower_group() binds the group's inputs and outputs around an
// ExprBuilder (ExprBuilder.h: values through layouts; Contractions.cpp and Reductions.cpp: the
// Funcs with update definitions; IeeeMath.h: IEEE special values), plus the axis names and the
// storage types that schedules and buffers share.
#include "lowering/LowerToHalide.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "dsl/ir/TypeInference.h"
#include "lowering/ExprBuilder.h"

namespace tessel::lower {

using dsl::Graph;
using dsl::Node;
using dsl::ValueId;
using Halide::Expr;
using Halide::Func;

std::string axis_name(int axis, int rank) {
    const int from_end = rank - 1 - axis;
    if (from_end == 0) return "n";
    if (from_end == 1) return "m";
    return "b" + std::to_string(from_end - 2);
}

std::string halide_name(const Graph &g, ValueId v) {
    std::string s = g.display_name(v);
    bool changed = false;
    for (char &c : s)
        if (!std::isalnum((unsigned char)c) && c != '_') c = '_', changed = true;
    if (s.empty() || std::isdigit((unsigned char)s[0])) s = "v" + s, changed = true;
    return changed ? s + "_" + std::to_string(v) : s;
}

std::vector<Halide::Argument> LoweredGroup::arguments() const {
    std::vector<Halide::Argument> args;
    for (const auto &p : inputs) args.push_back(p);
    if (constants.defined()) args.push_back(constants);
    return args;
}

Halide::Pipeline LoweredGroup::pipeline() const { return Halide::Pipeline(outputs); }

std::optional<Halide::Type> storage_type(dsl::DType t) {
    switch (t) {
    case dsl::DType::F32: return Halide::Float(32);
    case dsl::DType::F16: return Halide::Float(16);
    case dsl::DType::BF16: return Halide::BFloat(16);
    case dsl::DType::I8: return Halide::Int(8);
    default: return std::nullopt;
    }
}

namespace {

/** The group's {dK, dV} Tuple "y0" and dQ "y1" (lowering/AttentionBackward.cpp). */
void lower_attention_backward(const Graph &g, const dsl::FusionGroup &group, ExprBuilder &b, LoweredGroup &out) {
    std::optional<dsl::AttentionBackwardPattern> p;
    std::string why_not;
    for (ValueId v : group.nodes)
        if (!p && (g.node(v).op == dsl::Op::Softmax || g.node(v).op == dsl::Op::Div || g.node(v).op == dsl::Op::Exp))
            p = dsl::match_attention_backward(g, v, &why_not);
    std::vector<ValueId> outs = group.outputs;
    std::vector<ValueId> expected = p ? p->outputs() : std::vector<ValueId>{};
    std::sort(outs.begin(), outs.end());
    std::sort(expected.begin(), expected.end());
    if (!p || outs != expected)
        refuse(g, group.outputs.back(),
               "an attention-backward group's outputs are dQ, dK and dV of softmax(q @ k^T)" +
                   (why_not.empty() ? "" : ": " + why_not));
    const AttentionBackwardFuncs f = b.attention_backward(*p);
    out.funcs["y0"] = f.dkv;
    out.funcs["y1"] = f.dq;
    out.output_names = {"y0", "y1"};
    out.outputs = {f.dkv, f.dq};
    out.output_values = p->outputs();  // dk, dv (y0's elements), dq
    out.output_func = {0, 0, 1};
}

/** Says `v`'s static extents to Halide on output `y` (row-major values only), so loops over them
 * need no tails; the wrapper checks the caller's buffers against them. A cache write's output is
 * the window of new positions (CompiledGraph's tail_window), not the cache's extent. */
void constrain_static_extents(const Graph &g, ValueId v, const Func &y) {
    const Node &n = g.node(v);
    if (!n.layout.empty() || n.op == dsl::Op::UpdateTail || y.dimensions() != n.type.rank()) return;
    // A Tuple's other buffers share the first one's extents (Halide refuses constraints on them).
    const Halide::OutputImageParam buf = y.output_buffers().front();
    for (int a = 0; a < n.type.rank(); a++)
        if (const dsl::Dim d = dsl::resolve_dim(g, n.type.dims[a]); d.is_static())
            buf.dim(n.type.rank() - 1 - a).set_extent((int)d.size);
}

/** The buffer of a group's lifted constants (LowerOptions::constant_arguments), under a name no
 * input of the group has. */
Halide::ImageParam constants_argument(const Graph &g, const dsl::FusionGroup &group, const std::vector<ValueId> &values) {
    const std::set<ValueId> members(group.nodes.begin(), group.nodes.end());
    for (ValueId v : values) {
        const Node &n = g.node(v);
        if (!members.count(v) || n.op != dsl::Op::Constant || n.attrs.value.size() != 1 || n.type.dtype != dsl::DType::F32)
            refuse(g, v, "only a scalar f32 constant of the group can be read from its constants argument");
    }
    std::set<std::string> taken;
    for (ValueId v : group.nodes)
        for (ValueId in : g.node(v).inputs) taken.insert(halide_name(g, in));
    std::string name = "constants";
    while (taken.count(name)) name += "_";
    Halide::ImageParam p(Halide::Float(32), 1, name);
    p.dim(0).set_bounds(0, (int)values.size());
    return p;
}

}  // namespace

LoweredGroup lower_group(const Graph &g, const dsl::FusionGroup &group, const LowerOptions &options) {
    LoweredGroup out;
    out.name = group.name;
    out.kind = group.kind;
    if (!options.constant_arguments.empty()) {
        out.constants = constants_argument(g, group, options.constant_arguments);
        out.constant_values = options.constant_arguments;
    }
    // A prepared group runs once per weight version: fast math would buy nothing, and strict
    // math stores what the interpreter computes (a quantized weight's every rounding tie).
    out.mode = group.prepared ? dsl::NumericMode::Strict : g.mode;
    for (ValueId v : group.nodes) {
        const Node &n = g.node(v);
        if (!n.is_pure())
            refuse(g, v, std::string("effectful op (") + dsl::to_string(n.info().effect) + ") runs in the interpreter only");
    }
    try {
        ExprBuilder b(g, group, out);
        if (group.kind == dsl::GroupKind::Attention) {
            std::string why_not;
            const auto a = dsl::match_attention(g, group.outputs.back(), &why_not);
            std::vector<ValueId> expected = {a ? a->output : dsl::kNoValue};
            if (a && a->lse != dsl::kNoValue) expected.insert(expected.begin(), a->lse);  // lse precedes pv
            if (!a || group.outputs != expected)
                refuse(g, group.outputs.back(),
                       "an attention group's outputs are softmax(q @ k^T) @ v and the rows' logsumexp" +
                           (why_not.empty() ? "" : ": " + why_not));
            const AttentionFuncs f = b.attention(*a);
            if (f.lse.defined()) {
                // The logsumexp has y's rows and batch entries: said, so y's task loop and the
                // logsumexp's (compute_with) split one extent and share each task's state.
                for (int d = 1; d < f.out.dimensions(); d++)
                    f.lse.output_buffer().dim(d).set_bounds(f.out.output_buffer().dim(d).min(),
                                                            f.out.output_buffer().dim(d).extent());
            }
            for (ValueId v : group.outputs) {
                const std::string name = v == a->output ? "y" : "lse";
                out.funcs[name] = v == a->output ? f.out : f.lse;
                out.output_names.push_back(name);
                out.outputs.push_back(out.funcs[name]);
                out.output_values.push_back(v);
                out.output_func.push_back(out.outputs.size() - 1);
            }
            return out;
        }
        if (group.kind == dsl::GroupKind::AttentionBackward) {
            lower_attention_backward(g, group, b, out);
            return out;
        }
        for (ValueId v : group.outputs)
            if (g.node(v).type.rank() == 0) refuse(g, v, "scalar outputs are not lowered");
        // A matmul group's outputs of one shape (an epilogue whose intermediate is exported too,
        // sibling matmuls both exported) become ONE Tuple Func "y": the matmul schedules address
        // "y", and every output is written in the same loop nest as the tile that computes it.
        bool one_tuple = group.kind == dsl::GroupKind::MatmulEpilogue && group.outputs.size() > 1;
        for (ValueId v : group.outputs) one_tuple = one_tuple && dsl::same_type(g, g.node(v).type, g.node(group.outputs[0]).type);
        const size_t funcs = one_tuple ? 1 : group.outputs.size();
        for (size_t i = 0; i < funcs; i++) {
            const int rank = g.node(group.outputs[i]).type.rank();
            const std::string name = funcs == 1 ? "y" : "y" + std::to_string(i);
            Func y(name);
            auto vs = b.vars(rank);
            std::vector<Expr> idx;
            for (auto it = vs.rbegin(); it != vs.rend(); ++it) idx.push_back(*it);
            const std::vector<Halide::Var> args(vs.begin(), vs.end());
            if (one_tuple) {
                std::vector<Expr> elements;
                for (ValueId v : group.outputs) elements.push_back(b.at(v, idx));
                y(args) = Halide::Tuple(elements);
            } else if (const ValueId v = group.outputs[i]; !g.node(v).layout.empty()) {
                if (group.kind == dsl::GroupKind::MatmulEpilogue)
                    refuse(g, v,
                           "a matmul group writes its outputs row-major (its schedules address the loops n and m); "
                           "give the layout to a value of a separate group");
                y = b.laid_out(v, name);
            } else {
                y(args) = b.at(v, idx);
            }
            out.funcs[name] = y;
            out.output_names.push_back(name);
            out.outputs.push_back(y);
        }
        for (size_t i = 0; i < group.outputs.size(); i++) {
            out.output_values.push_back(group.outputs[i]);
            out.output_func.push_back(one_tuple ? 0 : i);
            constrain_static_extents(g, group.outputs[i], out.outputs[one_tuple ? 0 : i]);
        }
        // Panel facts hold for a single contraction only: a sibling or a second contraction
        // reads other operands, whose columns past N are not padding.
        if (out.matmul_count != 1) out.rhs_panel_width = 0;
    } catch (const Halide::Error &e) {
        throw LoweringError("Halide rejected the lowering of group '" + group.name + "': " + e.what());
    }
    return out;
}

}  // namespace tessel::lower
