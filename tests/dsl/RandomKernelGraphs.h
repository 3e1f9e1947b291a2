// Random graphs of kernel ops (matmuls, elementwise chains, row and column reductions,
// softmax, transposes, reshapes, masks and where, a rotate-half of slices and a concat) over
// static 2-D shapes, for the memory planner and the compiled
// runner. Shapes mix 1, primes and sizes not divisible by any tile. Deterministic per seed.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "dsl/ir/Builder.h"

namespace tessel::dsl::test {

/** With `weights`, a matmul's fresh right operand is a weight (prepared once; the layout pass
 * may store it in panels) instead of an input. With `block_ops`, masks, where, the
 * transcendental ops and rotate-halves join the mix (the graphs of a seed without them are
 * unchanged). */
inline Graph random_kernel_graph(uint64_t seed, int ops = 12, bool weights = false, bool block_ops = false) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int n) { return (int)(rng() % (uint64_t)n); };
    static const int64_t kSizes[] = {1, 3, 5, 8, 13, 17};
    GraphBuilder b("random_" + std::to_string(seed));
    std::vector<Value> values;
    const int inputs = 2 + pick(3);
    for (int i = 0; i < inputs; i++)
        values.push_back(b.input("in" + std::to_string(i), DType::F32, {kSizes[pick(6)], kSizes[pick(6)]}));
    auto dims = [](const Value &v) { return std::pair<int64_t, int64_t>{v.type().dims[0].size, v.type().dims[1].size}; };
    auto any = [&]() { return values[pick((int)values.size())]; };
    // A recent value, so chains get long and early values die.
    auto recent = [&]() { return values[values.size() - 1 - pick(std::min<int>(3, (int)values.size()))]; };
    auto same_shape = [&](const Value &v) {
        for (int tries = 0; tries < 8; tries++) {
            Value u = any();
            if (dims(u) == dims(v) && u.id() != v.id()) return u;
        }
        return v;
    };
    for (int i = 0; i < ops; i++) {
        Value a = recent();
        const auto [m, n] = dims(a);
        Value r;
        switch (pick(block_ops ? 13 : 9)) {
        case 0: {  // matmul with a fresh or existing right operand
            Value w;
            for (const Value &u : values)
                if (dims(u).first == n && pick(2)) w = u;
            if (!w.defined()) {
                const std::string name = "w" + std::to_string(i);
                const Shape shape{n, kSizes[pick(6)]};
                w = weights ? b.weight(name, DType::F32, shape) : b.input(name, DType::F32, shape);
            }
            r = matmul(a, w);
            break;
        }
        case 1: r = exp(a * 0.25); break;
        case 2: r = a + same_shape(a); break;
        case 3: r = relu(a) * same_shape(a); break;
        case 4: r = a - reduce_sum(a, {1}, true); break;
        case 5: r = reduce_max(a, {0}, true) + 1.0; break;
        case 6: r = softmax(a, 1); break;
        case 7: r = transpose(a); break;
        case 8: r = reshape(a, {n, m}); break;
        case 9: r = where(gt(a, same_shape(a)), a, sigmoid(a)); break;
        case 10: r = silu(a) * cos(a); break;
        case 11: r = log(abs(a) + 1.0) - sin(a); break;
        default:  // rotate half of each row, as rotary embeddings do
            if (n < 2)
                r = lt(a, 0.5);
            else
                r = concat(slice(a, 1, n / 2, n - n / 2), slice(a, 1, 0, n / 2), 1);
            break;
        }
        values.push_back(r);
    }
    b.output("y", values.back());
    // A second output now and then keeps an early value alive to the end.
    if (pick(3) == 0 && values.size() > (size_t)inputs + 2) b.output("z", values[inputs + pick((int)values.size() - inputs - 1)]);
    return std::move(b).build();
}

}  // namespace tessel::dsl::test
