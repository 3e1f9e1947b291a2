/** \file
 * Reductions (ExprBuilder.h): reduce_sum, reduce_mean and reduce_max become the Func "reduce"
 * (RDom r over the reduced axes; reduce_max on order keys, decoded where read), softmax becomes
 * "softmax_max" (the row maximum's order key), "softmax_sum" and the normalized value. Records
 * each Func's reduction axes (LoweredGroup::reduction_axes) for the schedules.
 */
#include "lowering/ExprBuilder.h"

#include "lowering/IeeeMath.h"

#include <cmath>

namespace tessel::lower {

using dsl::Graph;
using dsl::Node;
using dsl::Op;
using dsl::ValueId;
using Halide::Expr;
using Halide::Func;

void ExprBuilder::define_reduction(ValueId v) {
    const Node &n = g_.node(v);
    const ValueId in = n.inputs[0];
    const int rin = g_.node(in).type.rank();
    std::set<int64_t> axes;
    for (int64_t a : n.attrs.axes) axes.insert(a < 0 ? a + rin : a);
    Halide::Region region;
    for (int64_t a : axes) region.push_back({0, extent(in, (int)a)});
    const std::string name = unique_func_name("reduce");
    Halide::RDom r(region, "r");
    Func f(name);
    out_.funcs[name] = f;  // claim the name now: the input may define further reductions
    auto vs = vars(n.type.rank());
    std::vector<Expr> out_idx;
    for (auto it = vs.rbegin(); it != vs.rend(); ++it) out_idx.push_back(*it);
    std::vector<Expr> in_idx;
    int ri = 0, oi = 0;
    for (int a = 0; a < rin; a++) {
        if (axes.count(a)) {
            in_idx.push_back(r[ri++]);
            if (n.attrs.keepdims) oi++;
        } else {
            in_idx.push_back(out_idx[oi++]);
        }
    }
    std::vector<Halide::Var> args(vs.begin(), vs.end());
    Expr x = at(in, in_idx);
    if (n.op == Op::ReduceMax) {
        // On order keys (Int(32)); the value is decoded where it is read. Starts at -inf.
        f(args) = order_key(Expr(-INFINITY), true);
        f(args) = Halide::max(f(args), order_key(x, true));
    } else {
        f(args) = 0.0f;
        f(args) += x;
    }
    // Halide's RDom walks the reduced axes in increasing order, so r alone is the last axis
    // only when that is the sole reduced axis; n is reduced when keepdims kept it as 1.
    const bool last_reduced = axes.count(rin - 1) > 0;
    out_.reduction_axes[name] = {last_reduced && axes.size() == 1, n.type.rank() >= 1 && !(n.attrs.keepdims && last_reduced),
                                 n.type.rank() >= 1 && !axes.count(0)};
    if (n.op == Op::ReduceMean) {
        Expr count = 1;
        for (int64_t a : axes) count = count * extent(in, (int)a);
        Func mean(unique_func_name(name + "_mean"));
        mean(args) = f(args) / Halide::cast<float>(count);
        funcs_[v] = mean;
    } else if (n.op == Op::ReduceMax) {
        Func value(unique_func_name(name + "_value"));  // inline: decodes the key
        value(args) = from_order_key(f(args));
        funcs_[v] = value;
    } else {
        funcs_[v] = f;
    }
}

void ExprBuilder::define_softmax(ValueId v) {
    const Node &n = g_.node(v);
    const ValueId in = n.inputs[0];
    const int rank = n.type.rank();
    const int axis = (int)(n.attrs.axis < 0 ? n.attrs.axis + rank : n.attrs.axis);
    auto vs = vars(rank);
    std::vector<Halide::Var> args(vs.begin(), vs.end());
    std::vector<Expr> idx;
    for (auto it = vs.rbegin(); it != vs.rend(); ++it) idx.push_back(*it);
    Halide::RDom r(0, extent(in, axis), "r");
    std::vector<Expr> ridx = idx;
    ridx[axis] = r;
    // The reductions are indexed by every axis but `axis` (kept as a unit-extent var).
    Func mx("softmax_max");  // the row maximum's order key (see ieee_maximum)
    mx(args) = order_key(Expr(-INFINITY), true);
    mx(args) = Halide::max(mx(args), order_key(at(in, ridx), true));
    const std::string mx_name = unique_func_name("softmax_max");
    out_.funcs[mx_name] = mx;
    out_.reduction_axes[mx_name] = {axis == rank - 1, axis != rank - 1, axis != 0};
    std::vector<Expr> red_idx(args.begin(), args.end());
    red_idx[rank - 1 - axis] = 0;
    const Expr m_key = mx(red_idx), m = from_order_key(m_key);
    Func sum("softmax_sum");
    sum(args) = 0.0f;
    sum(args) += Halide::exp(at(in, ridx) - m);
    const std::string sum_name = unique_func_name("softmax_sum");
    out_.funcs[sum_name] = sum;
    out_.reduction_axes[sum_name] = {axis == rank - 1, axis != rank - 1, axis != 0};
    Func y(unique_func_name("softmax"));
    // A row whose maximum is NaN or +-inf is NaN throughout, as exp(x - m) / sum computes it
    // in IEEE arithmetic; said explicitly, since Halide's exp need not return NaN for NaN.
    // With a finite maximum every x - m is <= 0 or -inf (exp gives 0) and the sum is >= 1.
    y(args) =
        Halide::select(is_finite_key(m_key), Halide::exp(at(in, idx) - m) / sum(red_idx), from_order_key(Halide::Int(32).max()));
    funcs_[v] = y;
}

}  // namespace tessel::lower
