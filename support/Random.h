/** \file
 * Deterministic random test data (std::mt19937 seeded explicitly), shared by the demo,
 * tests and benchmarks so a failure reproduces from its seed.
 */
#pragma once

#include <HalideBuffer.h>

#include <cstdint>
#include <random>

namespace tessel {

/** Fills `b` with uniform values in [lo, hi). */
inline void fill_uniform(Halide::Runtime::Buffer<float> &b, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    b.for_each_value([&](float &v) { v = dist(rng); });
}

}  // namespace tessel
