// Map: fusion_class / group_kind (classification) -> rule helpers (reduction axes, sources, the
// reductions a consumer reads through a group, broadcast_conflict) -> DefaultFusionPolicy:
// producer_consumer (rule table), sibling, merge, estimate (resource model).
#include "dsl/passes/FusionPolicy.h"

#include <algorithm>
#include <map>
#include <set>

#include "dsl/analysis/MemoryTraffic.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

FusionClass fusion_class(const Graph &g, ValueId v) {
    const Node &n = g.node(v);
    if (!n.is_pure() || !n.has_result() || n.op == Op::Input || n.op == Op::ShapeOf || is_shape_arith(n.op))
        return FusionClass::Outside;
    if (!is_tensor_data(n.type.dtype)) return FusionClass::Outside;
    for (ValueId in : n.inputs)
        if (!is_tensor_data(g.node(in).type.dtype)) return FusionClass::Outside;
    switch (n.info().iter_space) {
    case IterSpace::Contraction: return FusionClass::Contraction;
    case IterSpace::Reduction: return FusionClass::Reduction;
    case IterSpace::Elementwise:
    case IterSpace::Broadcast: return FusionClass::Elementwise;
    case IterSpace::Permutation: return FusionClass::Permutation;
    case IterSpace::Opaque: break;
    }
    if (n.op == Op::Constant || n.op == Op::CausalMask) return FusionClass::Constant;
    if (n.op == Op::Reshape || n.op == Op::Slice || n.op == Op::Concat || n.op == Op::PackInt4 || n.op == Op::UnpackInt4 ||
        n.op == Op::RepeatInterleave)
        return FusionClass::Reshape;
    if (n.op == Op::UpdateTail) return FusionClass::CacheWrite;
    return FusionClass::Outside;
}

const char *to_string(FusionClass c) {
    switch (c) {
    case FusionClass::Outside: return "outside";
    case FusionClass::Constant: return "constant";
    case FusionClass::Contraction: return "contraction";
    case FusionClass::Reduction: return "reduction";
    case FusionClass::Elementwise: return "elementwise";
    case FusionClass::Permutation: return "permutation";
    case FusionClass::Reshape: return "reshape";
    case FusionClass::CacheWrite: return "cache-write";
    }
    return "?";
}

GroupKind group_kind(const Graph &g, const std::vector<ValueId> &nodes) {
    bool red = false;
    for (ValueId v : nodes) {
        FusionClass c = fusion_class(g, v);
        if (c == FusionClass::Contraction) return GroupKind::MatmulEpilogue;
        red |= c == FusionClass::Reduction;
    }
    return red ? GroupKind::Reduction : GroupKind::Elementwise;
}

namespace {

/** Whether a and b compute the same values: the same op, attributes and type over operands that
 * are the same values or (up to `depth` levels) the same computations. */
bool same_computation(const Graph &g, ValueId a, ValueId b, int depth) {
    if (a == b) return true;
    const Node &x = g.node(a), &y = g.node(b);
    if (depth == 0 || x.op != y.op || x.op == Op::Input || !x.is_pure() || x.attrs != y.attrs || x.type != y.type ||
        x.inputs.size() != y.inputs.size())
        return false;
    for (size_t i = 0; i < x.inputs.size(); i++)
        if (!same_computation(g, x.inputs[i], y.inputs[i], depth - 1)) return false;
    return true;
}

std::string nm(const Graph &g, ValueId v) { return "%" + g.display_name(v); }

std::vector<ValueId> of_class(const Graph &g, const std::vector<ValueId> &nodes, FusionClass c) {
    std::vector<ValueId> out;
    for (ValueId v : nodes)
        if (fusion_class(g, v) == c) out.push_back(v);
    return out;
}

/** Same dims, looked through shape code; dtype ignored. */
bool same_dims(const Graph &g, const TensorType &a, const TensorType &b) {
    if (a.rank() != b.rank()) return false;
    for (int i = 0; i < a.rank(); i++)
        if (!same_dim(g, a.dims[i], b.dims[i])) return false;
    return true;
}

/** Normalized reduced axes of a reduction or softmax. */
std::set<int64_t> reduced_axes(const Graph &g, ValueId r) {
    const Node &n = g.node(r);
    const int rank = g.node(n.inputs[0]).type.rank();
    std::set<int64_t> axes;
    if (n.op == Op::Softmax)
        axes.insert(n.attrs.axis < 0 ? n.attrs.axis + rank : n.attrs.axis);
    else
        for (int64_t a : n.attrs.axes) axes.insert(a < 0 ? a + rank : a);
    return axes;
}

std::string axes_text(const std::set<int64_t> &axes) {
    std::string s = "[";
    for (int64_t a : axes) s += (s.size() > 1 ? ", " : "") + std::to_string(a);
    return s + "]";
}

/** Do reductions a and b traverse the same rows (same reduced axes of same-shaped operands)? */
bool same_traversal(const Graph &g, ValueId a, ValueId b) {
    return reduced_axes(g, a) == reduced_axes(g, b) &&
           same_dims(g, g.node(g.node(a).inputs[0]).type, g.node(g.node(b).inputs[0]).type);
}

/** Tensors of q's shape that q derives from through elementwise ops (q itself if none). */
std::set<ValueId> row_sources(const Graph &g, ValueId q) {
    std::set<ValueId> out, seen;
    std::vector<ValueId> work{q};
    const TensorType &t = g.node(q).type;
    while (!work.empty()) {
        ValueId v = work.back();
        work.pop_back();
        if (!seen.insert(v).second) continue;
        if (fusion_class(g, v) == FusionClass::Elementwise) {
            bool any = false;
            for (ValueId in : g.node(v).inputs)
                if (same_dims(g, g.node(in).type, t)) {
                    work.push_back(in);
                    any = true;
                }
            if (any) continue;
        }
        out.insert(v);
    }
    return out;
}

/** A reduction of a group that a consumer reads, directly or through elementwise members. */
struct ReductionRead {
    ValueId reduction;
    std::vector<ValueId> via;  ///< members between the reduction and the consumer, in data order
};

/** The reductions in `group` that c would read inline if it joined: c's operands in the group and
 * what those read, transitively, through elementwise members. The walk stops at a reduction:
 * what that reduction reads was judged when it joined. It need not pass data movement either:
 * the transpose/reshape rules never let one follow a reduction inside a group. */
std::vector<ReductionRead> reductions_read(const Graph &g, ValueId c, const std::vector<ValueId> &group) {
    const std::set<ValueId> members(group.begin(), group.end());
    std::map<ValueId, ValueId> reader;  // member -> the node that reads it on the first path found
    std::vector<ValueId> work, found;
    auto visit = [&](ValueId v, ValueId by) {
        if (members.count(v) && reader.emplace(v, by).second) work.push_back(v);
    };
    for (ValueId in : g.node(c).inputs) visit(in, c);
    while (!work.empty()) {
        const ValueId v = work.back();
        work.pop_back();
        const FusionClass k = fusion_class(g, v);
        if (k == FusionClass::Reduction)
            found.push_back(v);
        else if (k == FusionClass::Elementwise)
            for (ValueId in : g.node(v).inputs) visit(in, v);
    }
    std::sort(found.begin(), found.end());
    std::vector<ReductionRead> out;
    for (ValueId r : found) {
        ReductionRead rr{r, {}};
        for (ValueId v = reader.at(r); v != c; v = reader.at(v)) rr.via.push_back(v);
        out.push_back(std::move(rr));
    }
    return out;
}

std::string through(const Graph &g, const ReductionRead &rr) {
    if (rr.via.empty()) return "";
    std::string s = " (through ";
    for (size_t i = 0; i < rr.via.size(); i++) s += (i ? ", " : "") + nm(g, rr.via[i]);
    return s + ")";
}

/** Whether consumer c may iterate in one kernel with reduction r that it reads (through elementwise
 * ops, each of which aligns shapes at the last axis, so r's axis j lands on c's axis
 * j + rank(c) - rank(r) however long the chain). Legal: c iterates r's input space and every
 * non-unit axis of r's result lands on the input axis it was kept from (broadcast back,
 * softmax-style), or c iterates r's output space. Anything else would recompute the whole
 * reduction for each element of c. Returns the refusal's reason, naming the conflicting axis,
 * or "" when legal; `*how` says which legal case holds. */
std::string broadcast_conflict(const Graph &g, const ReductionRead &rr, ValueId c, std::string *how) {
    const ValueId r = rr.reduction;
    const Node &n = g.node(r), &cn = g.node(c);
    const ValueId x = n.inputs[0];
    const TensorType &in = g.node(x).type;
    const std::string reads = nm(g, c) + " reads " + nm(g, r) + through(g, rr);
    if (same_dims(g, cn.type, in)) {
        const std::set<int64_t> red = reduced_axes(g, r);
        std::vector<int> kept;
        for (int a = 0; a < in.rank(); a++)
            if (n.op == Op::Softmax || n.attrs.keepdims || !red.count(a)) kept.push_back(a);
        const int off = cn.type.rank() - n.type.rank();
        for (int j = 0; j < n.type.rank(); j++) {
            const Dim d = resolve_dim(g, n.type.dims[j]);
            const int at = off + j;
            if (at == kept[j] || (d.is_static() && d.size == 1)) continue;
            const std::string onto =
                red.count(at) ? ", the axis " + nm(g, r) + " reduced"
                              : " (axis " + std::to_string(at) + " of " + nm(g, x) + "), not axis " + std::to_string(kept[j]);
            return nm(g, c) + " : " + print_type(g, cn.type) + " reads " + nm(g, r) + " : " + print_type(g, n.type) +
                   through(g, rr) + " aligned at the last axis, which puts axis " + std::to_string(j) + " of " + nm(g, r) +
                   " (kept from axis " + std::to_string(kept[j]) + " of " + nm(g, x) + ") onto axis " + std::to_string(at) +
                   " of " + nm(g, c) + onto + ": fused, every element of " + nm(g, c) + " would recompute the reduction";
        }
        *how = reads + " broadcast back along the reduced axes " + axes_text(red) + " of the rows it traverses";
        return "";
    }
    if (same_dims(g, cn.type, n.type)) {
        *how = nm(g, c) + " iterates the output space of " + nm(g, r) + through(g, rr);
        return "";
    }
    return nm(g, c) + " : " + print_type(g, cn.type) + " iterates neither the rows of " + nm(g, r) + " (" + print_type(g, in) +
           ") nor its result" + through(g, rr);
}

/** The first node of `group` that is of class c, or kNoValue. */
ValueId first_of(const Graph &g, const std::vector<ValueId> &group, FusionClass c) {
    for (ValueId v : group)
        if (fusion_class(g, v) == c) return v;
    return kNoValue;
}

class DefaultFusionPolicy : public FusionPolicy {
public:
    FusionDecision producer_consumer(const Graph &g, ValueId p, ValueId c, const std::vector<ValueId> &group) const override {
        const ValueId mm = first_of(g, group, FusionClass::Contraction);
        const ValueId red = first_of(g, group, FusionClass::Reduction);
        const Node &cn = g.node(c);
        if (const ValueId w = first_of(g, group, FusionClass::CacheWrite); w != kNoValue)
            return FusionDecision::no("cache-write", p == w ? nm(g, c) + " reads " + nm(g, w) +
                                                                  ", a cache whose kernel writes only its new positions: "
                                                                  "readers read the whole cache from memory"
                                                            : "the group of " + nm(g, p) + " holds the cache write " + nm(g, w) +
                                                                  ", realized over the cache's new positions only; " + nm(g, c) +
                                                                  " reads " + nm(g, p) + " from memory");
        switch (fusion_class(g, c)) {
        case FusionClass::CacheWrite: {
            if (p != cn.inputs[1])
                return FusionDecision::no("cache-write", "the cache operand " + nm(g, p) + " of " + nm(g, c) +
                                                             " is the storage written in place, not computed in its kernel; "
                                                             "materialize " +
                                                             nm(g, p));
            const ValueId heavy = mm != kNoValue ? mm : red;
            if (heavy != kNoValue)
                return FusionDecision::no("cache-write", nm(g, c) +
                                                             " writes its values into the cache's tail in the cache's "
                                                             "index order, not in the tiles of " +
                                                             nm(g, heavy) + "; materialize " + nm(g, p));
            return FusionDecision::yes(
                "cache-write", nm(g, c) + " writes the elementwise " + nm(g, p) + " straight into the cache's new positions");
        }
        case FusionClass::Elementwise: {
            // c joins the whole group: every reduction it would read inline, through any chain
            // of elementwise members (and through any of its operands), must fit its index space.
            const std::vector<ReductionRead> reads = reductions_read(g, c, group);
            if (!reads.empty()) {
                std::string why;
                for (const ReductionRead &rr : reads) {
                    std::string how;
                    const std::string conflict = broadcast_conflict(g, rr, c, &how);
                    if (!conflict.empty()) return FusionDecision::no("broadcast-back", conflict + "; materialize " + nm(g, p));
                    why += (why.empty() ? "" : "; ") + how;
                }
                return FusionDecision::yes("broadcast-back", why);
            }
            const char *what = mm != kNoValue ? "in the epilogue of the contraction " : "inline at the output index of ";
            return FusionDecision::yes("epilogue", nm(g, c) + " is elementwise: computed " + what +
                                                       (mm != kNoValue ? nm(g, mm) : nm(g, p)) + ", no intermediate in memory");
        }
        case FusionClass::Reduction: {
            if (mm != kNoValue)
                return FusionDecision::no("reduce-input", "the reduction " + nm(g, c) + " spans whole rows of " + nm(g, p) +
                                                              ", the output of contraction " + nm(g, mm) +
                                                              ", whose tile it cannot share; materialize " + nm(g, p));
            for (ValueId r : of_class(g, group, FusionClass::Reduction))
                if (!same_traversal(g, r, c))
                    return FusionDecision::no("reduce-input", nm(g, c) + " reduces axes " + axes_text(reduced_axes(g, c)) +
                                                                  " of " + print_type(g, g.node(cn.inputs[0]).type) + " but " +
                                                                  nm(g, r) + " in the group reduces axes " +
                                                                  axes_text(reduced_axes(g, r)) + " of " +
                                                                  print_type(g, g.node(g.node(r).inputs[0]).type) +
                                                                  ": incompatible iteration spaces; materialize " + nm(g, p));
            return FusionDecision::yes(
                "reduce-input", nm(g, c) + " reads " + nm(g, p) + " inline while reducing axes " + axes_text(reduced_axes(g, c)) +
                                    (red != kNoValue ? ", the same rows " + nm(g, red) + " traverses" : ""));
        }
        case FusionClass::Contraction: {
            if (mm != kNoValue)
                return FusionDecision::no("matmul-operand", "operand " + nm(g, p) + " of " + nm(g, c) +
                                                                " comes from the contraction " + nm(g, mm) +
                                                                "; the k-loop reads whole rows of it, so it is materialized");
            if (red != kNoValue)
                return FusionDecision::no("matmul-operand",
                                          "operand " + nm(g, p) + " of " + nm(g, c) + " depends on the reduction " + nm(g, red) +
                                              " in its group, which the k-loop would re-run per tile; materialize " + nm(g, p));
            for (ValueId v : group) {
                const std::string what = to_string(g.node(v).op) + std::string(" (%") + g.display_name(v) + ")";
                // An offset (slice) or a division by a constant (an int4 pair, a quantization
                // group's scale) is cheap in the k-loop; a reshape's index arithmetic is not.
                const Op op = g.node(v).op;
                if (fusion_class(g, v) == FusionClass::Reshape && op != Op::Slice && op != Op::UnpackInt4 &&
                    op != Op::RepeatInterleave)
                    return FusionDecision::no("matmul-operand", "operand chain of " + nm(g, p) + " remaps its index through " +
                                                                    what + ": index arithmetic per element in the k-loop of " +
                                                                    nm(g, c) + "; materialize " + nm(g, p));
                if (is_transcendental(g.node(v).op))
                    return FusionDecision::no("matmul-operand", "operand chain of " + nm(g, p) + " computes " + what +
                                                                    ", a polynomial per element the k-loop of " + nm(g, c) +
                                                                    " would recompute for every column block; materialize " +
                                                                    nm(g, p));
            }
            if (group.size() > kMaxOperandChain)
                return FusionDecision::no("matmul-operand", "operand chain of " + nm(g, p) + " has " +
                                                                std::to_string(group.size()) + " ops > " +
                                                                std::to_string(kMaxOperandChain) +
                                                                " to recompute in the k-loop; materialize " + nm(g, p));
            return FusionDecision::yes("matmul-operand",
                                       "operand " + nm(g, p) + " is a cheap elementwise chain of group inputs (" +
                                           std::to_string(group.size()) + " ops), recomputed in the k-loop of " + nm(g, c));
        }
        case FusionClass::Permutation:
        case FusionClass::Reshape: {
            const std::string rule = fusion_class(g, c) == FusionClass::Permutation ? "transpose" : to_string(cn.op);
            const ValueId heavy = mm != kNoValue ? mm : red;
            if (heavy != kNoValue)
                return FusionDecision::no(rule, nm(g, c) + " writes " + nm(g, p) + " in another index order than the tiles of " +
                                                    nm(g, heavy) + " produce it; materialize " + nm(g, p));
            return FusionDecision::yes(rule, nm(g, c) + " remaps the index of the elementwise " + nm(g, p) + " inline");
        }
        default: break;
        }
        return FusionDecision::no("outside", nm(g, c) + " runs outside kernels");
    }

    std::optional<FusionDecision> sibling(const Graph &g, ValueId s, ValueId c) const override {
        const Node &a = g.node(s), &b = g.node(c);
        const FusionClass ca = fusion_class(g, s), cb = fusion_class(g, c);
        // After CSE, two ops computing the same thing exist only when rematerialization placed a
        // recomputation late on purpose; one traversal would compute it early and keep it.
        if (ca == cb && (ca == FusionClass::Contraction || ca == FusionClass::Reduction) && same_computation(g, s, c, 8))
            return FusionDecision::no("sibling",
                                      nm(g, c) + " recomputes " + nm(g, s) + " (rematerialized): it stays next to its readers");
        if (ca == FusionClass::Contraction && cb == FusionClass::Contraction) {
            if (a.inputs[0] != b.inputs[0]) return std::nullopt;
            if (!same_type(g, a.type, b.type))
                return FusionDecision::no("sibling", nm(g, s) + " and " + nm(g, c) + " read " + nm(g, a.inputs[0]) +
                                                         " but produce " + print_type(g, a.type) + " and " +
                                                         print_type(g, b.type));
            return FusionDecision::yes("sibling", nm(g, s) + " and " + nm(g, c) + " both read " + nm(g, a.inputs[0]) +
                                                      " as left operand with result " + print_type(g, a.type) +
                                                      ": one traversal (a Tuple matmul) reads it once");
        }
        if (ca == FusionClass::Reduction && cb == FusionClass::Reduction) {
            std::set<ValueId> sa = row_sources(g, a.inputs[0]), sb = row_sources(g, b.inputs[0]);
            ValueId common = kNoValue;
            for (ValueId v : sa)
                if (sb.count(v)) common = v;
            if (common == kNoValue) return std::nullopt;
            if (!same_traversal(g, s, c))
                return FusionDecision::no("sibling", nm(g, s) + " and " + nm(g, c) + " both read " + nm(g, common) +
                                                         " but reduce axes " + axes_text(reduced_axes(g, s)) + " and " +
                                                         axes_text(reduced_axes(g, c)));
            return FusionDecision::yes("sibling", nm(g, s) + " and " + nm(g, c) + " reduce axes " +
                                                      axes_text(reduced_axes(g, c)) + " of rows derived from " + nm(g, common) +
                                                      ": one pass over the rows");
        }
        return std::nullopt;
    }

    /** Contractions pair only on a shared left operand, reductions only on a shared row source. */
    std::optional<std::vector<ValueId>> sibling_keys(const Graph &g, ValueId v) const override {
        switch (fusion_class(g, v)) {
        case FusionClass::Contraction: return std::vector<ValueId>{g.node(v).inputs[0]};
        case FusionClass::Reduction: {
            const std::set<ValueId> rows = row_sources(g, g.node(v).inputs[0]);
            return std::vector<ValueId>(rows.begin(), rows.end());
        }
        default: return std::vector<ValueId>{};
        }
    }

    FusionDecision merge(const Graph &g, const std::vector<ValueId> &a, const std::vector<ValueId> &b) const override {
        // A cache write joins only the group computing its values (its kernel writes them).
        for (const auto &[side, other] : {std::pair{&a, &b}, std::pair{&b, &a}})
            if (const ValueId w = first_of(g, *side, FusionClass::CacheWrite); w != kNoValue) {
                const bool values = std::find(other->begin(), other->end(), g.node(w).inputs[1]) != other->end();
                if (side->size() != 1 || !values)
                    return FusionDecision::no(
                        "merge", "the cache write " + nm(g, w) + " shares its kernel only with the computation of its values");
            }
        auto ma = of_class(g, a, FusionClass::Contraction), mb = of_class(g, b, FusionClass::Contraction);
        auto ra = of_class(g, a, FusionClass::Reduction), rb = of_class(g, b, FusionClass::Reduction);
        if ((!ma.empty() && !rb.empty()) || (!mb.empty() && !ra.empty())) {
            ValueId m = !ma.empty() ? ma[0] : mb[0], r = !ra.empty() ? ra[0] : rb[0];
            return FusionDecision::no("merge", "one group holds one traversal: contraction " + nm(g, m) + " and reduction " +
                                                   nm(g, r) + " iterate different spaces");
        }
        for (ValueId x : ma)
            for (ValueId y : mb) {
                const Node &nx = g.node(x), &ny = g.node(y);
                if (nx.inputs[0] != ny.inputs[0] || !same_type(g, nx.type, ny.type))
                    return FusionDecision::no("merge", "one contraction traversal per group: " + nm(g, x) + " reads " +
                                                           nm(g, nx.inputs[0]) + " and " + nm(g, y) + " reads " +
                                                           nm(g, ny.inputs[0]));
            }
        for (ValueId x : ra)
            for (ValueId y : rb)
                if (!same_traversal(g, x, y))
                    return FusionDecision::no("merge", "reductions " + nm(g, x) + " (axes " + axes_text(reduced_axes(g, x)) +
                                                           ") and " + nm(g, y) + " (axes " + axes_text(reduced_axes(g, y)) +
                                                           ") traverse different rows");
        return FusionDecision::yes("merge", "compatible iteration spaces");
    }

    ResourceEstimate estimate(const Graph &g, const std::vector<ValueId> &nodes, const FusionOptions &opts) const override;
};

/** Values in `nodes` read by nodes outside it, or graph outputs. */
int64_t count_exported(const Graph &g, const std::set<ValueId> &members) {
    int64_t n = 0;
    for (ValueId v : members) {
        bool out = g.is_output(v);
        for (ValueId u : g.users(v)) out |= !members.count(u);
        n += out;
    }
    return n;
}

std::string fits_text(int64_t need, int64_t limit) { return need <= limit ? " <= " : " > "; }

ResourceEstimate DefaultFusionPolicy::estimate(const Graph &g, const std::vector<ValueId> &nodes,
                                               const FusionOptions &opts) const {
    const TargetResources &t = opts.target;
    const int64_t L = std::max(1, t.vector_lanes), budget = int64_t(t.vector_registers) * L;
    const SymbolSizes &sz = opts.symbol_sizes;
    std::set<ValueId> members(nodes.begin(), nodes.end());
    ResourceEstimate e;
    std::string reg_detail, shared_detail, cache_detail;
    const GroupKind kind = group_kind(g, nodes);
    if (kind == GroupKind::MatmulEpilogue) {
        auto mms = of_class(g, nodes, FusionClass::Contraction);
        const int64_t S = (int64_t)mms.size(), TN = 2 * L;
        // Epilogue: members downstream of a matmul; prologue: the other non-constant members.
        std::set<ValueId> epi;
        std::set<ValueId> external;
        int64_t P = 0;
        for (ValueId v : nodes) {  // in program order, like the group
            FusionClass c = fusion_class(g, v);
            if (c == FusionClass::Contraction || c == FusionClass::Constant) continue;
            bool down = false;
            for (ValueId in : g.node(v).inputs)
                down |= epi.count(in) || (members.count(in) && fusion_class(g, in) == FusionClass::Contraction);
            if (!down) {
                P++;
                continue;
            }
            epi.insert(v);
            for (ValueId in : g.node(v).inputs)
                if (!members.count(in) && fusion_class(g, in) != FusionClass::Constant) external.insert(in);
        }
        const int64_t E = (int64_t)epi.size(), X = (int64_t)external.size();
        const int64_t operands = S * TN + L, epilogue = L * (X + std::min<int64_t>(E, 3));
        const int64_t prologue = L * std::min<int64_t>(P, 2);
        int64_t TM = 4;
        for (int64_t tm : {4, 2, 1}) {
            TM = tm;
            if (S * tm * TN + std::max(operands, epilogue) + prologue <= budget) break;
        }
        e.registers_f32 = S * TM * TN + std::max(operands, epilogue) + prologue;
        reg_detail = "tile " + std::to_string(TM) + "x" + std::to_string(TN) + ": acc " + std::to_string(S * TM * TN) +
                     " + max(operands " + std::to_string(operands) + ", epilogue " + std::to_string(epilogue) + ") + prologue " +
                     std::to_string(prologue);
        const int64_t BM = 64, BN = 64, BK = 32;
        e.shared_bytes = 4 * (BM * BK + S * BK * BN + X * BN);
        shared_detail = "A 64x32 + " + std::to_string(S) + " B 32x64 + " + std::to_string(X) + " epilogue rows";
        const Node &m0 = g.node(mms[0]);
        const int rank = m0.type.rank();
        const int64_t M = dim_size(g, m0.type.dims[rank - 2], sz), N = dim_size(g, m0.type.dims[rank - 1], sz);
        const TensorType &at = g.node(m0.inputs[0]).type;
        const int64_t K = dim_size(g, at.dims[at.rank() - 1], sz);
        const int64_t O = std::max<int64_t>(1, count_exported(g, members));
        int64_t mc = 0, kc = 0, nc = 0;
        for (int64_t blk : {64, 32, 16}) {
            mc = std::min(M, blk);
            kc = std::min(K, blk * 4);
            nc = std::min(N, blk * 4);
            e.cache_bytes = 4 * (mc * kc + S * kc * nc + O * mc * nc);
            if (t.l2_cache_bytes == 0 || e.cache_bytes <= t.l2_cache_bytes) break;
        }
        cache_detail = "block " + std::to_string(mc) + "x" + std::to_string(kc) + "x" + std::to_string(nc);
    } else if (kind == GroupKind::Reduction) {
        auto reds = of_class(g, nodes, FusionClass::Reduction);
        int64_t ew = 0;
        std::set<ValueId> full_inputs;
        const ValueId r0 = reds[0], in0 = g.node(r0).inputs[0];
        int64_t row = 1;
        for (int64_t a : reduced_axes(g, r0)) row = saturating_mul(row, dim_size(g, g.node(in0).type.dims[a], sz));
        for (ValueId v : nodes) {
            if (fusion_class(g, v) == FusionClass::Elementwise) ew++;
            for (ValueId in : g.node(v).inputs)
                if (!members.count(in) && same_dims(g, g.node(in).type, g.node(in0).type)) full_inputs.insert(in);
        }
        e.registers_f32 = L * ((int64_t)reds.size() + std::min<int64_t>(ew, 3) + 1);
        reg_detail =
            std::to_string(reds.size()) + " reductions, " + std::to_string(ew) + " elementwise, " + std::to_string(L) + " lanes";
        e.shared_bytes = saturating_mul(4, row);
        shared_detail = "one row of " + std::to_string(row);
        e.cache_bytes = saturating_mul(saturating_mul(4, row), std::max<int64_t>(1, (int64_t)full_inputs.size()));
        cache_detail = std::to_string(std::max<size_t>(1, full_inputs.size())) + " input rows";
    } else {
        std::set<ValueId> ins;
        int64_t ops = 0;
        for (ValueId v : nodes) {
            if (fusion_class(g, v) != FusionClass::Constant) ops++;
            for (ValueId in : g.node(v).inputs)
                if (!members.count(in) && fusion_class(g, in) != FusionClass::Constant) ins.insert(in);
        }
        e.registers_f32 = L * (std::min<int64_t>(ops, 3) + (int64_t)ins.size());
        reg_detail = std::to_string(ops) + " ops, " + std::to_string(ins.size()) + " inputs, " + std::to_string(L) + " lanes";
    }
    const bool reg_ok = e.registers_f32 <= budget;
    const bool shared_ok = t.shared_memory_bytes == 0 || e.shared_bytes <= t.shared_memory_bytes;
    const bool cache_ok = t.l2_cache_bytes == 0 || e.cache_bytes <= t.l2_cache_bytes;
    e.fits = reg_ok && shared_ok && cache_ok;
    e.detail = "registers " + reg_detail + " = " + std::to_string(e.registers_f32) + fits_text(e.registers_f32, budget) +
               std::to_string(budget) + " (" + std::to_string(t.vector_registers) + " x " + std::to_string(L) + " lanes)";
    if (e.shared_bytes) {
        e.detail += "; shared " + shared_detail + " = " + format_bytes(e.shared_bytes);
        e.detail += t.shared_memory_bytes ? fits_text(e.shared_bytes, t.shared_memory_bytes) + format_bytes(t.shared_memory_bytes)
                                          : " (not checked)";
    }
    if (e.cache_bytes) {
        e.detail += "; cache " + cache_detail + " = " + format_bytes(e.cache_bytes);
        e.detail +=
            t.l2_cache_bytes ? fits_text(e.cache_bytes, t.l2_cache_bytes) + format_bytes(t.l2_cache_bytes) : " (not checked)";
    }
    e.detail += " on " + t.name;
    return e;
}

}  // namespace

const FusionPolicy &default_fusion_policy() {
    static const DefaultFusionPolicy p;
    return p;
}

namespace {

class UnfusedPolicy : public FusionPolicy {
public:
    FusionDecision producer_consumer(const Graph &, ValueId, ValueId, const std::vector<ValueId> &) const override {
        return FusionDecision::no("unfused", "fusion disabled (unfused_policy)");
    }
    std::optional<FusionDecision> sibling(const Graph &, ValueId, ValueId) const override { return std::nullopt; }
    FusionDecision merge(const Graph &, const std::vector<ValueId> &, const std::vector<ValueId> &) const override {
        return FusionDecision::no("unfused", "fusion disabled (unfused_policy)");
    }
    ResourceEstimate estimate(const Graph &g, const std::vector<ValueId> &nodes, const FusionOptions &o) const override {
        return default_fusion_policy().estimate(g, nodes, o);
    }
};

}  // namespace

const FusionPolicy &unfused_policy() {
    static const UnfusedPolicy p;
    return p;
}

}  // namespace tessel::dsl
