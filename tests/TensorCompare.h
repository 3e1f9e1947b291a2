/** \file
 * Comparing a compiled graph's outputs with the reference interpreter's, for tests. */
#pragma once

#include "dsl/interp/Interpreter.h"
#include "dsl/interp/Tensor.h"
#include "support/ErrorStats.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

namespace tessel::testing {

/** Largest relative error over every element of every output, by the one rule of
 * support/ErrorStats.h (NaN matches NaN, a NaN against a number is infinite); the outputs must
 * match in number and shape. */
inline double max_relative_difference(const std::vector<dsl::Tensor> &got, const std::vector<dsl::Tensor> &want) {
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (size_t o = 0; o < got.size(); o++) {
        REQUIRE(got[o].shape == want[o].shape);
        worst = std::max(worst, compare(got[o].data.data(), want[o].data.data(), (size_t)got[o].numel()).max_rel);
    }
    return worst;
}

/** Elements of `got` whose f32 bits differ from `want`'s (any NaN matches any NaN), the first
 * few reported; the outputs must match in number and size. */
inline size_t bits_apart(const std::vector<dsl::Tensor> &got, const std::vector<dsl::Tensor> &want) {
    REQUIRE(got.size() == want.size());
    size_t apart = 0;
    for (size_t i = 0; i < got.size(); i++) {
        REQUIRE(got[i].data.size() == want[i].data.size());
        for (size_t j = 0; j < got[i].data.size(); j++) {
            const float x = (float)got[i].data[j], y = (float)want[i].data[j];
            if ((std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, sizeof x) == 0) continue;
            if (apart++ < 5) MESSAGE("output " << i << " element " << j << ": " << x << ", expected " << y);
        }
    }
    return apart;
}

/** The interpreter's run of `g` on random inputs (seeded) at `symbols`: the reference a compiled
 * program is checked against, its inputs included. */
inline dsl::RunResult random_reference(const dsl::Graph &g, const std::map<std::string, int64_t> &symbols, uint64_t seed) {
    dsl::RunOptions ro;
    ro.random_missing_inputs = true;
    ro.input_seed = seed;
    ro.symbol_sizes = symbols;
    return dsl::interpret(g, {}, ro);
}

/** For each {M, K, N}: random inputs (seeded by the shape), the interpreter's outputs, and
 * `run(inputs, symbols)`'s within `tolerance` (max_relative_difference). */
template <typename Run>
void check_matmul_shapes(const dsl::Graph &g, const std::vector<std::array<int64_t, 3>> &shapes, Run run,
                         double tolerance = 1e-4) {
    for (const auto &[m, k, n] : shapes) {
        INFO("M=" << m << " K=" << k << " N=" << n);
        const dsl::RunResult ref = random_reference(g, {{"M", m}, {"K", k}, {"N", n}}, (uint64_t)(m * 1000 + n));
        CHECK(max_relative_difference(run(ref.inputs, ref.symbols), ref.outputs) < tolerance);
    }
}

}  // namespace tessel::testing
