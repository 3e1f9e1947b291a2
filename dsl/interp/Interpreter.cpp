/** Map: kernels (anonymous namespace: broadcast_binary, matmul, reduce, softmax, transpose;
 * unary_formula) -> evaluate_pure (dispatch for pure ops) -> Interpreter (walks program order, binds
 * symbols, runs effects, checks every computed shape against the node's type). */
#include "dsl/interp/Interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "dsl/ir/Numerics.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

namespace {

uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
uint64_t hash2(uint64_t s, uint64_t i) { return splitmix64(splitmix64(s) + i); }

std::vector<int64_t> strides_of(const std::vector<int64_t> &shape) {
    std::vector<int64_t> s(shape.size(), 1);
    for (int i = (int)shape.size() - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
    return s;
}

/** Strides of `in` viewed with `out`'s rank under numpy broadcasting (0 for broadcast dims). */
std::vector<int64_t> broadcast_strides(const std::vector<int64_t> &in, const std::vector<int64_t> &out) {
    std::vector<int64_t> s(out.size(), 0), is = strides_of(in);
    size_t off = out.size() - in.size();
    for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : is[i];
    return s;
}

/** Calls f(linear index, multi-index) for every element of shape in row-major order. */
template <typename F>
void for_each_index(const std::vector<int64_t> &shape, F f) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<int64_t> idx(shape.size(), 0);
    for (int64_t lin = 0; lin < n; ++lin) {
        f(lin, idx);
        for (int k = (int)shape.size() - 1; k >= 0; --k) {
            if (++idx[k] < shape[k]) break;
            idx[k] = 0;
        }
    }
}

int64_t dot(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
    int64_t s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

double nan_max(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return NAN;
    if (a == b) return std::signbit(a) ? b : a;  // max(-0, +0) = +0
    return a > b ? a : b;
}
double nan_min(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return NAN;
    if (a == b) return std::signbit(a) ? a : b;  // min(-0, +0) = -0
    return a < b ? a : b;
}

double binary_fn(Op op, double a, double b) {
    switch (op) {
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::Div: return a / b;
    case Op::Max: return nan_max(a, b);
    case Op::Min: return nan_min(a, b);
    case Op::Less: return a < b;
    case Op::LessEqual: return a <= b;
    case Op::Greater: return a > b;
    case Op::GreaterEqual: return a >= b;
    case Op::Equal: return a == b;
    case Op::NotEqual: return a != b;
    default: throw InternalError("not a binary op");
    }
}

Tensor make(DType dt, const std::vector<int64_t> &shape) {
    Tensor t;
    t.dtype = dt;
    t.shape = shape;
    t.data.assign((size_t)t.numel(), 0.0);
    return t;
}

void round_all(Tensor &t) {
    for (double &v : t.data) v = round_to(t.dtype, v);
}

Tensor matmul(const Tensor &a, const Tensor &b, const std::vector<int64_t> &out_shape) {
    Tensor r = make(a.dtype, out_shape);
    size_t ra = a.shape.size(), rb = b.shape.size(), ro = out_shape.size();
    int64_t M = a.shape[ra - 2], K = a.shape[ra - 1], N = b.shape[rb - 1];
    std::vector<int64_t> batch(out_shape.begin(), out_shape.end() - 2);
    std::vector<int64_t> abatch(a.shape.begin(), a.shape.end() - 2), bbatch(b.shape.begin(), b.shape.end() - 2);
    auto sa = broadcast_strides(abatch, batch), sb = broadcast_strides(bbatch, batch);
    (void)ro;
    for_each_index(batch, [&](int64_t lin, const std::vector<int64_t> &idx) {
        const double *pa = a.data.data() + dot(idx, sa) * M * K;
        const double *pb = b.data.data() + dot(idx, sb) * K * N;
        double *pr = r.data.data() + lin * M * N;
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
                double acc = 0.0;
                for (int64_t k = 0; k < K; ++k) acc += pa[i * K + k] * pb[k * N + j];
                pr[i * N + j] = acc;
            }
    });
    round_all(r);
    return r;
}

Tensor reduce(Op op, const Tensor &a, const Attrs &attrs, const std::vector<int64_t> &out_shape) {
    std::vector<char> red(a.shape.size(), 0);
    for (int64_t ax : attrs.axes) red[(size_t)ax] = 1;
    // Output index with reduced axes dropped (or kept as 0).
    std::vector<int64_t> kept_shape;
    for (size_t i = 0; i < a.shape.size(); ++i) kept_shape.push_back(red[i] ? 1 : a.shape[i]);
    auto ks = strides_of(kept_shape);
    Tensor r = make(a.dtype, out_shape);
    std::vector<int64_t> count(r.data.size(), 0);
    double init = op == Op::ReduceMax ? -INFINITY : 0.0;
    std::fill(r.data.begin(), r.data.end(), init);
    for_each_index(a.shape, [&](int64_t lin, const std::vector<int64_t> &idx) {
        int64_t o = 0;
        for (size_t i = 0; i < idx.size(); ++i) o += red[i] ? 0 : idx[i] * ks[i];
        double v = a.data[(size_t)lin];
        if (op == Op::ReduceMax)
            r.data[(size_t)o] = std::isnan(r.data[(size_t)o]) ? r.data[(size_t)o] : nan_max(r.data[(size_t)o], v);
        else
            r.data[(size_t)o] += v;
        ++count[(size_t)o];
    });
    if (op == Op::ReduceMean)
        for (size_t i = 0; i < r.data.size(); ++i) r.data[i] /= (double)count[i];
    round_all(r);
    return r;
}

Tensor softmax(const Tensor &a, int64_t axis) {
    Tensor r = make(a.dtype, a.shape);
    int64_t n = a.shape[(size_t)axis], stride = strides_of(a.shape)[(size_t)axis];
    std::vector<int64_t> outer = a.shape;
    outer[(size_t)axis] = 1;
    auto os = strides_of(a.shape);
    for_each_index(outer, [&](int64_t, const std::vector<int64_t> &idx) {
        int64_t base = dot(idx, os);
        double m = -INFINITY;
        for (int64_t k = 0; k < n; ++k) m = nan_max(m, a.data[(size_t)(base + k * stride)]);
        double s = 0.0;
        for (int64_t k = 0; k < n; ++k) s += std::exp(a.data[(size_t)(base + k * stride)] - m);
        for (int64_t k = 0; k < n; ++k)
            r.data[(size_t)(base + k * stride)] = std::exp(a.data[(size_t)(base + k * stride)] - m) / s;
    });
    round_all(r);
    return r;
}

Tensor transpose(const Tensor &a, const std::vector<int64_t> &perm, const std::vector<int64_t> &out_shape) {
    Tensor r = make(a.dtype, out_shape);
    auto as = strides_of(a.shape);
    std::vector<int64_t> src(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) src[i] = as[(size_t)perm[i]];
    for_each_index(out_shape,
                   [&](int64_t lin, const std::vector<int64_t> &idx) { r.data[(size_t)lin] = a.data[(size_t)dot(idx, src)]; });
    return r;
}

std::string shape_str(const std::vector<int64_t> &s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

/** A scalar integer operand of shape code as an int64 (its double is exact up to 2^53). */
int64_t shape_operand(const Node &n, const Tensor &t) {
    const double v = t.data.at(0);
    if (!(v >= -(double)kMaxExactInteger && v <= (double)kMaxExactInteger))
        throw RuntimeError(std::string(to_string(n.op)) + ": operand " + print_number(v) +
                           " is out of range (shape values are limited to 2^53)");
    return (int64_t)v;
}

}  // namespace

void check_element_limit(const std::string &what, const std::string &dtype, const std::vector<int64_t> &shape) {
    int64_t numel = 1;
    bool over = false;
    for (int64_t d : shape) {
        if (d < 1)
            throw RuntimeError(what + ": " + dtype + shape_str(shape) +
                               ": extents must be positive (zero-size tensors are not supported)");
        over = over || __builtin_mul_overflow(numel, d, &numel) || numel > kMaxInterpreterElements;
    }
    if (over)
        throw RuntimeError(what + ": " + dtype + shape_str(shape) + " has more than " + std::to_string(kMaxInterpreterElements) +
                           " elements, the reference interpreter's limit (2^28; docs/TSL.md, \"Limits\")");
}

double unary_formula(Op op, double x) {
    switch (op) {
    // GELU's forms without 1 + erf and 1 + tanh, which cancel for negative x even in double
    // (1 + erf(-6) is 0 in double; the result, -2.9e-16 at x = -8.5, is a float32).
    case Op::Gelu: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case Op::GeluTanh: {
        const double k = std::sqrt(2.0 / M_PI);
        return x / (1.0 + std::exp(-2.0 * k * (x + 0.044715 * x * x * x)));  // 0.5 x (1 + tanh u)
    }
    case Op::Tanh: return std::tanh(x);
    case Op::Exp: return std::exp(x);
    case Op::Relu: return std::isnan(x) ? x : (x > 0 ? x : 0.0);
    case Op::Neg: return -x;
    case Op::Abs: return std::fabs(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Rsqrt: return 1.0 / std::sqrt(x);
    case Op::Log: return std::log(x);
    case Op::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case Op::Silu: return x / (1.0 + std::exp(-x));
    case Op::Sin: return std::sin(x);
    case Op::Cos: return std::cos(x);
    default: throw InternalError("not a unary op");
    }
}

double random_element(Op op, uint64_t seed, uint64_t index) {
    if (op == Op::RandomUniform) return (double)(hash2(seed, index) >> 40) * 0x1p-24;
    double u1 = (double)((hash2(seed, 2 * index) >> 11) + 1) * 0x1p-53;
    double u2 = (double)(hash2(seed, 2 * index + 1) >> 11) * 0x1p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

Tensor evaluate_pure(const Node &n, const std::vector<const Tensor *> &in, const std::vector<int64_t> &shape) {
    DType dt = n.type.dtype;
    if (is_binary_elementwise(n.op)) {
        const Tensor &a = *in[0], &b = *in[1];
        Tensor r = make(dt, shape);
        auto sa = broadcast_strides(a.shape, shape), sb = broadcast_strides(b.shape, shape);
        for_each_index(shape, [&](int64_t lin, const std::vector<int64_t> &idx) {
            r.data[(size_t)lin] = binary_fn(n.op, a.data[(size_t)dot(idx, sa)], b.data[(size_t)dot(idx, sb)]);
        });
        round_all(r);
        return r;
    }
    if (n.op == Op::Where) {
        Tensor r = make(dt, shape);
        auto sc = broadcast_strides(in[0]->shape, shape), sa = broadcast_strides(in[1]->shape, shape),
             sb = broadcast_strides(in[2]->shape, shape);
        for_each_index(shape, [&](int64_t lin, const std::vector<int64_t> &idx) {
            const bool pick_a = in[0]->data[(size_t)dot(idx, sc)] != 0.0;  // NaN is nonzero
            r.data[(size_t)lin] = pick_a ? in[1]->data[(size_t)dot(idx, sa)] : in[2]->data[(size_t)dot(idx, sb)];
        });
        return r;
    }
    if (is_unary_elementwise(n.op) || n.op == Op::Cast || n.op == Op::Copy) {
        Tensor r = make(dt, shape);
        for (size_t i = 0; i < r.data.size(); ++i)
            r.data[i] = n.op == Op::Cast || n.op == Op::Copy ? in[0]->data[i] : unary_formula(n.op, in[0]->data[i]);
        round_all(r);
        return r;
    }
    if (is_shape_arith(n.op)) {
        const int64_t a = shape_operand(n, *in[0]), b = shape_operand(n, *in[1]);
        std::string why;
        auto v = eval_shape_op(n.op, a, b, dt, &why);
        if (!v) {
            if ((n.op == Op::ShapeFloorDiv || n.op == Op::ShapeMod) && b == 0)
                throw RuntimeError(std::string(to_string(n.op)) + ": division by zero in shape code (" + std::to_string(a) +
                                   (n.op == Op::ShapeMod ? " mod " : " floordiv ") + std::to_string(b) + ")");
            throw RuntimeError(why);
        }
        return Tensor::scalar(dt, (double)*v);
    }
    if (is_reduction(n.op)) return reduce(n.op, *in[0], n.attrs, shape);
    switch (n.op) {
    case Op::Constant: {
        Tensor r = make(dt, shape);
        if (n.attrs.value.size() == 1)
            std::fill(r.data.begin(), r.data.end(), n.attrs.value[0]);
        else if ((int64_t)n.attrs.value.size() == r.numel())
            r.data = n.attrs.value;
        else
            throw RuntimeError("constant: " + std::to_string(n.attrs.value.size()) + " values for shape " + shape_str(shape));
        round_all(r);
        return r;
    }
    case Op::CausalMask: {
        Tensor r = make(dt, shape);
        const int64_t s = shape[shape.size() - 2], l = shape.back();
        for (size_t e = 0; e < r.data.size(); e++) {
            const int64_t j = (int64_t)e % l, i = ((int64_t)e / l) % s;
            r.data[e] = j <= i + (l - s) ? 0.0 : -INFINITY;
        }
        return r;
    }
    case Op::ShapeOf: return Tensor::scalar(DType::I64, (double)in[0]->shape[(size_t)n.attrs.axis]);
    case Op::MatMul: return matmul(*in[0], *in[1], shape);
    case Op::Transpose: return transpose(*in[0], n.attrs.perm, shape);
    case Op::Reshape: {
        Tensor r = *in[0];
        r.shape = shape;
        if (r.numel() != in[0]->numel())
            throw RuntimeError("reshape: cannot reshape " + shape_str(in[0]->shape) + " to " + shape_str(shape));
        return r;
    }
    case Op::Softmax: return softmax(*in[0], n.attrs.axis);
    case Op::Slice: {
        const Tensor &a = *in[0];
        const size_t axis = (size_t)n.attrs.axis;
        if (n.attrs.start + shape[axis] > a.shape[axis])
            throw RuntimeError("slice: start=" + std::to_string(n.attrs.start) + " plus extent " + std::to_string(shape[axis]) +
                               " runs past " + shape_str(a.shape) + " along axis " + std::to_string(axis));
        Tensor r = make(dt, shape);
        const auto sa = strides_of(a.shape);
        for_each_index(shape, [&](int64_t lin, const std::vector<int64_t> &idx) {
            std::vector<int64_t> j = idx;
            j[axis] += n.attrs.start;
            r.data[(size_t)lin] = a.data[(size_t)dot(j, sa)];
        });
        return r;
    }
    case Op::PackInt4:
    case Op::UnpackInt4:
    case Op::RepeatInterleave: {
        const Tensor &a = *in[0];
        const size_t axis = (size_t)n.attrs.axis;
        if (const std::string why = grouped_extent_mismatch(n, a.shape[axis], shape[axis]); !why.empty())
            throw RuntimeError(why + " (operand " + shape_str(a.shape) + ", result " + shape_str(shape) + ")");
        Tensor r = make(dt, shape);
        const auto sa = strides_of(a.shape);
        auto nibble = [](double q) { return (int)std::clamp(q, -8.0, 7.0) & 15; };  // q is an integer (i8)
        for_each_index(shape, [&](int64_t lin, const std::vector<int64_t> &idx) {
            std::vector<int64_t> j = idx;
            double &out = r.data[(size_t)lin];
            if (n.op == Op::RepeatInterleave) {
                j[axis] /= n.attrs.repeats;
                out = a.data[(size_t)dot(j, sa)];
            } else if (n.op == Op::UnpackInt4) {
                j[axis] /= 2;
                const int byte = (int)a.data[(size_t)dot(j, sa)] & 0xff;
                const int v = idx[axis] % 2 == 0 ? byte & 15 : byte >> 4;
                out = v >= 8 ? v - 16 : v;
            } else {
                j[axis] = 2 * idx[axis];
                const int lo = nibble(a.data[(size_t)dot(j, sa)]);
                j[axis]++;
                const int hi = j[axis] < a.shape[axis] ? nibble(a.data[(size_t)dot(j, sa)]) : 0;
                out = (double)(int8_t)(uint8_t)(lo | hi << 4);
            }
        });
        return r;
    }
    case Op::Concat: {
        const Tensor &a = *in[0], &b = *in[1];
        const size_t axis = (size_t)n.attrs.axis;
        Tensor r = make(dt, shape);
        const auto sa = strides_of(a.shape), sb = strides_of(b.shape);
        for_each_index(shape, [&](int64_t lin, const std::vector<int64_t> &idx) {
            std::vector<int64_t> j = idx;
            const bool in_a = j[axis] < a.shape[axis];
            if (!in_a) j[axis] -= a.shape[axis];
            r.data[(size_t)lin] = in_a ? a.data[(size_t)dot(j, sa)] : b.data[(size_t)dot(j, sb)];
        });
        return r;
    }
    case Op::UpdateTail: {
        const Tensor &c = *in[0], &v = *in[1];
        const size_t axis = (size_t)n.attrs.axis;
        if (v.shape[axis] > c.shape[axis])
            throw RuntimeError("update_tail: values " + shape_str(v.shape) + " have more positions than the cache " +
                               shape_str(c.shape) + " along axis " + std::to_string(axis));
        Tensor r = c;
        const int64_t first = c.shape[axis] - v.shape[axis];
        const auto sc = strides_of(c.shape);
        for_each_index(v.shape, [&](int64_t lin, const std::vector<int64_t> &idx) {
            std::vector<int64_t> j = idx;
            j[axis] += first;
            r.data[(size_t)dot(j, sc)] = v.data[(size_t)lin];
        });
        return r;
    }
    default: throw InternalError(std::string("evaluate_pure: ") + to_string(n.op) + " is not a pure computation");
    }
}

namespace {

class Interpreter {
public:
    Interpreter(const Graph &g, const std::map<std::string, Tensor> &inputs, InterpreterState &st, const RunOptions &opt)
        : g_(g), inputs_(inputs), st_(st), opt_(opt) {}

    RunResult run() {
        // An external group runs as early as it can: right after the last value it reads from
        // outside is computed (a pure group may run anywhere after its inputs), so effects
        // between its members see its outputs. Its members are never evaluated here.
        std::map<ValueId, size_t> group_of;
        for (size_t i = 0; i < opt_.external_groups.size(); i++)
            for (ValueId v : opt_.external_groups[i].members) group_of[v] = i;
        std::map<ValueId, size_t> position;
        for (ValueId id : g_.order()) position[id] = position.size();
        std::map<ValueId, std::vector<size_t>> run_after;  // trigger value -> groups
        std::vector<size_t> run_first;
        for (size_t i = 0; i < opt_.external_groups.size(); i++) {
            ValueId trigger = kNoValue;
            for (ValueId m : opt_.external_groups[i].members)
                for_each_dependency(g_.node(m), [&](ValueId d) {
                    auto gi = group_of.find(d);
                    if (gi != group_of.end() && gi->second == i) return;
                    if (trigger == kNoValue || position.at(d) > position.at(trigger)) trigger = d;
                });
            if (trigger == kNoValue)
                run_first.push_back(i);
            else
                run_after[trigger].push_back(i);
        }
        for (size_t i : run_first) run_external(opt_.external_groups[i]);
        for (ValueId id : g_.order()) {
            if (!group_of.count(id)) step(g_.node(id));
            if (auto it = run_after.find(id); it != run_after.end())
                for (size_t i : it->second) run_external(opt_.external_groups[i]);
        }
        for (size_t i = 0; i < g_.outputs.size(); ++i) {
            res_.outputs.push_back(vals_.at(g_.outputs[i]));
            res_.output_names.push_back(g_.output_name(i));
        }
        return std::move(res_);
    }

private:
    void run_external(const ExternalGroup &eg) {
        std::vector<Tensor> outs = eg.run(vals_, res_.symbols);
        if (outs.size() != eg.outputs.size())
            throw InternalError("external group returned " + std::to_string(outs.size()) + " values for " +
                                std::to_string(eg.outputs.size()) + " outputs");
        for (size_t o = 0; o < outs.size(); o++) {
            check_shape(g_.node(eg.outputs[o]), outs[o]);
            vals_[eg.outputs[o]] = std::move(outs[o]);
        }
    }

    std::string where(const Node &n) const { return "%" + g_.display_name(n.id) + " (" + to_string(n.op) + ")"; }

    int64_t dim_value(const Node &n, const Dim &d, bool bind_default) {
        switch (d.kind) {
        case Dim::Kind::Static: return d.size;
        case Dim::Kind::Value: {
            // Shape code known only now: the one place a computed extent can turn out <= 0.
            const double dv = vals_.at(d.value).data.at(0);
            if (!(dv >= -(double)kMaxElements && dv <= (double)kMaxElements))
                throw RuntimeError(where(n) + ": dimension %" + g_.display_name(d.value) + " is " + print_number(dv) +
                                   " at run time, outside [-2^62, 2^62]");
            const int64_t v = (int64_t)dv;
            if (v < 1)
                throw RuntimeError(where(n) + ": dimension %" + g_.display_name(d.value) + " is " + std::to_string(v) +
                                   " at run time; extents must be positive (zero-size tensors are not supported)");
            return v;
        }
        case Dim::Kind::Symbol: {
            auto it = res_.symbols.find(d.symbol);
            if (it != res_.symbols.end()) return it->second;
            if (!bind_default) throw RuntimeError(where(n) + ": symbol " + d.symbol + " is not bound by any input");
            auto s = opt_.symbol_sizes.find(d.symbol);
            int64_t v = s != opt_.symbol_sizes.end() ? s->second : opt_.default_symbol_size;
            if (v < 1)
                throw RuntimeError(where(n) + ": symbol " + d.symbol + " = " + std::to_string(v) +
                                   "; extents must be positive (zero-size tensors are not supported)");
            res_.symbols[d.symbol] = v;
            return v;
        }
        }
        return 0;
    }

    /** n's shape now; refused (before anything is allocated) when it holds more than
     * kMaxInterpreterElements elements. */
    std::vector<int64_t> concrete_shape(const Node &n, bool bind_default = false) {
        std::vector<int64_t> s;
        for (const Dim &d : n.type.dims) s.push_back(dim_value(n, d, bind_default));
        check_element_limit(where(n), to_string(n.type.dtype), s);
        return s;
    }

    void check_shape(const Node &n, const Tensor &t) {
        std::vector<int64_t> want = concrete_shape(n);
        if (t.shape != want || t.dtype != n.type.dtype)
            throw RuntimeError(where(n) + ": computed " + std::string(to_string(t.dtype)) + shape_str(t.shape) +
                               " but its type " + print_type(g_, n.type) + " means " + to_string(n.type.dtype) + shape_str(want));
    }

    Tensor bind_input(const Node &n) {
        std::string name = g_.display_name(n.id);
        auto it = inputs_.find(name);
        if (it == inputs_.end()) {
            if (!opt_.random_missing_inputs) throw RuntimeError("missing input '" + name + "' of type " + print_type(g_, n.type));
            Tensor t = make(n.type.dtype, concrete_shape(n, true));
            uint64_t seed = opt_.input_seed;
            for (char c : name) seed = splitmix64(seed ^ (uint64_t)(unsigned char)c);
            // A weight matrix is scaled as a trained model's (uniform in +-sqrt(3 / fan_in)), so
            // deep graphs keep activations near 1 and the comparison measures kernels, not the
            // rounding of values that grew with every layer.
            double half_width = 2.0;
            if (n.attrs.weight && t.shape.size() >= 2 && !is_int(t.dtype))
                half_width = std::sqrt(3.0 * (double)t.shape.back() / (double)t.numel());
            for (size_t i = 0; i < t.data.size(); ++i) {
                double u = (double)(hash2(seed, i) >> 40) * 0x1p-24;
                // i8 data is quantized values or packed int4 pairs: every byte, every nibble.
                t.data[i] = t.dtype == DType::I8 ? std::floor(u * 256) - 128
                            : is_int(t.dtype)    ? std::floor(u * 8)
                                                 : (u * 2.0 - 1.0) * half_width;
            }
            round_all(t);
            return t;
        }
        const Tensor &t = it->second;
        if ((int64_t)t.data.size() != t.numel())
            throw RuntimeError("input '" + name + "' is " + to_string(t.dtype) + shape_str(t.shape) + " but holds " +
                               std::to_string(t.data.size()) + " values");
        if ((int)t.shape.size() != n.type.rank() || t.dtype != n.type.dtype)
            throw RuntimeError("input '" + name + "' is " + to_string(t.dtype) + shape_str(t.shape) + " but the graph declares " +
                               print_type(g_, n.type));
        for (int i = 0; i < n.type.rank(); ++i) {
            if (t.shape[i] < 1)
                throw RuntimeError("input '" + name + "' is " + to_string(t.dtype) + shape_str(t.shape) +
                                   ": extents must be positive (zero-size tensors are not supported)");
            const Dim &d = n.type.dims[i];
            if (d.kind == Dim::Kind::Symbol && !res_.symbols.count(d.symbol)) res_.symbols[d.symbol] = t.shape[i];
        }
        Tensor r = t;
        round_all(r);
        return r;
    }

    void step(const Node &n) {
        std::vector<const Tensor *> in;
        for (ValueId v : n.inputs) {
            auto it = vals_.find(v);
            if (it == vals_.end())
                throw RuntimeError(where(n) + " reads %" + g_.display_name(v) +
                                   " before the external group computing it can run (the group reads a value "
                                   "computed later in program order)");
            in.push_back(&it->second);
        }
        Tensor out;
        switch (n.op) {
        case Op::Input:
            out = bind_input(n);
            res_.inputs[g_.display_name(n.id)] = out;
            break;
        case Op::RandomUniform:
        case Op::RandomNormal:
            out = make(n.type.dtype, concrete_shape(n, true));
            for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = random_element(n.op, n.attrs.seed, i);
            round_all(out);
            break;
        case Op::StateRead: {
            auto it = st_.vars.find(n.attrs.var);
            out = it != st_.vars.end() ? it->second : make(n.type.dtype, concrete_shape(n, true));
            break;
        }
        case Op::StateWrite: st_.vars[n.attrs.var] = *in[0]; return;
        case Op::Print: res_.printed += n.attrs.text + ": " + to_string(*in[0]) + "\n"; return;
        case Op::Assert:
            for (double v : in[0]->data)
                if (v == 0.0)
                    throw AssertionFailure("assertion failed at %" + g_.display_name(n.id) + ": " +
                                           (n.attrs.text.empty() ? "(no message)" : n.attrs.text) + " (operand " +
                                           to_string(*in[0]) + ")");
            return;
        default: out = evaluate_pure(n, in, concrete_shape(n, true));
        }
        check_shape(n, out);
        vals_[n.id] = std::move(out);
    }

    const Graph &g_;
    const std::map<std::string, Tensor> &inputs_;
    InterpreterState &st_;
    const RunOptions &opt_;
    std::map<ValueId, Tensor> vals_;
    RunResult res_;
};

}  // namespace

RunResult interpret(const Graph &g, const std::map<std::string, Tensor> &inputs, InterpreterState &state,
                    const RunOptions &options) {
    return Interpreter(g, inputs, state, options).run();
}

RunResult interpret(const Graph &g, const std::map<std::string, Tensor> &inputs, const RunOptions &options) {
    InterpreterState st;
    return interpret(g, inputs, st, options);
}

}  // namespace tessel::dsl
