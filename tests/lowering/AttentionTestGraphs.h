// Attention test graphs shared by test_attention.cpp and test_attention_backward.cpp: random
// attention graphs (forward, or forward and backward), the interpreter's random inputs, and
// special values planted into them.
#pragma once

#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "dsl/interp/Interpreter.h"

namespace tessel::testing {

/** "perm=[0, ..., r-1, r-2]": the transpose of the last two axes of a rank-`rank` value. */
inline std::string last_two_swapped(int rank) {
    std::string perm = "perm=[";
    for (int a = 0; a < rank; a++)
        perm += (a ? ", " : "") + std::to_string(a < rank - 2 ? a : a == rank - 2 ? rank - 1 : rank - 2);
    return perm + "]";
}

/** The interpreter's random inputs for `g` at `symbols`, from `seed`. */
inline std::map<std::string, dsl::Tensor> random_inputs(const dsl::Graph &g, const std::map<std::string, int64_t> &symbols,
                                                        uint64_t seed) {
    dsl::RunOptions ro;
    ro.random_missing_inputs = true;
    ro.input_seed = seed;
    ro.symbol_sizes = symbols;
    return dsl::interpret(g, {}, ro).inputs;
}

/** About one element in 64 of every tensor `which` accepts becomes NaN, +inf, -inf or -0. */
inline void plant_special_values(std::map<std::string, dsl::Tensor> &in, std::mt19937_64 &rng,
                                 const std::function<bool(const std::string &)> &which) {
    const double corner[] = {NAN, INFINITY, -INFINITY, -0.0};
    for (auto &[name, tensor] : in)
        if (which(name))
            for (double &x : tensor.data)
                if (rng() % 64 == 0) x = corner[rng() % 4];
}

/** A random attention graph in fast mode: batch axes (0 to 2, each 1 to 3), sizes, the scale's
 * form, the mask (none, an input, causal_mask) and the softmax's form (softmax or written out). */
struct RandomAttention {
    std::string batch;
    int64_t d = 1, dv = 1, s = 1, l = 1;
    int mask = 0;  ///< none, input, causal
    bool written = false;
    std::string scale;

    /** Draws one; dv = d when `square` (the backward's dK and dV share a shape). */
    static RandomAttention draw(std::mt19937_64 &rng, std::initializer_list<int64_t> ds, std::initializer_list<int64_t> dvs,
                                std::initializer_list<int64_t> ss, std::initializer_list<int64_t> ls, bool square) {
        auto pick = [&](std::initializer_list<int64_t> xs) { return *(xs.begin() + (int64_t)(rng() % xs.size())); };
        RandomAttention r;
        const int batch_rank = (int)(rng() % 3);
        for (int b = 0; b < batch_rank; b++) r.batch += std::to_string(pick({1, 2, 3})) + ", ";
        r.d = pick(ds);
        r.dv = square ? r.d : pick(dvs);
        r.s = pick(ss);
        r.l = pick(ls);
        r.mask = (int)(rng() % 3);
        r.written = rng() % 2;
        const char *scales[] = {" * 0.3", " / 2.0", ""};
        r.scale = scales[rng() % 3];
        return r;
    }

    std::map<std::string, int64_t> symbols() const { return {{"S", s}, {"L", l}}; }

    /** The graph: o = softmax(scale q kᵀ [+ mask]) v, and with `backward` dq, dk, dv from do. */
    std::string text(bool backward) const {
        const int rank = 2 + (int)std::count(batch.begin(), batch.end(), ',');
        const std::string perm = last_two_swapped(rank), last = std::to_string(rank - 1);
        std::ostringstream t;
        t << "graph r mode=fast {\n  %q = input : f32[" << batch << "S, " << d << "]\n  %k = input : f32[" << batch << "L, " << d
          << "]\n  %v = input : f32[" << batch << "L, " << dv << "]\n";
        if (backward) t << "  %do = input : f32[" << batch << "S, " << dv << "]\n";
        if (mask == 1) t << "  %mask = input : f32[S, L]\n";
        if (mask == 2) t << "  %mask = causal_mask() : f32[S, L]\n";
        t << "  %s = matmul(%q, transpose(%k, " << perm << "))" << scale << (mask ? " + %mask" : "") << "\n";
        if (written)
            t << "  %e = exp(%s - reduce_max(%s, axes=[" << last << "], keepdims=true))\n  %p = %e / reduce_sum(%e, axes=["
              << last << "], keepdims=true)\n";
        else
            t << "  %p = softmax(%s, axis=" << last << ")\n";
        t << "  %o = matmul(%p, %v)\n";
        if (!backward) {
            t << "  output %o\n}\n";
            return t.str();
        }
        t << "  %dv = matmul(transpose(%p, " << perm << "), %do)\n"
          << "  %ds = %p * (matmul(%do, transpose(%v, " << perm << ")) - reduce_sum(%do * %o, axes=[" << last
          << "], keepdims=true))\n"
          << "  %dq = matmul(%ds, %k)" << scale << "\n  %dk = matmul(transpose(%ds, " << perm << "), %q)" << scale << "\n"
          << "  output %o, %dq, %dk, %dv\n}\n";
        return t.str();
    }
};

}  // namespace tessel::testing
