/** \file
 * Comparing a compiled graph's outputs with the reference interpreter's, for tests. */
#pragma once

#include "dsl/interp/Tensor.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tessel::testing {

/** Largest |got - want| / (1 + |want|) over every element of every output (a NaN in `got`
 * counts as infinite); the outputs must match in number and shape. */
inline double max_relative_difference(const std::vector<dsl::Tensor> &got, const std::vector<dsl::Tensor> &want) {
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (size_t o = 0; o < got.size(); o++) {
        REQUIRE(got[o].shape == want[o].shape);
        for (int64_t i = 0; i < got[o].numel(); i++) {
            const double a = got[o].data[i], b = want[o].data[i];
            worst = std::max(worst, std::isnan(a) ? INFINITY : std::fabs(a - b) / (1 + std::fabs(b)));
        }
    }
    return worst;
}

}  // namespace tessel::testing
