/** \file
 * Comparing a compiled graph's outputs with the reference interpreter's, for tests. */
#pragma once

#include "dsl/interp/Interpreter.h"
#include "dsl/interp/Tensor.h"
#include "support/ErrorStats.h"

#include <doctest/doctest.h>

#include <algorithm>
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

/** The interpreter's run of `g` on random inputs (seeded) at `symbols`: the reference a compiled
 * program is checked against, its inputs included. */
inline dsl::RunResult random_reference(const dsl::Graph &g, const std::map<std::string, int64_t> &symbols, uint64_t seed) {
    dsl::RunOptions ro;
    ro.random_missing_inputs = true;
    ro.input_seed = seed;
    ro.symbol_sizes = symbols;
    return dsl::interpret(g, {}, ro);
}

}  // namespace tessel::testing
