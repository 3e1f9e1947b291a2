/** \file
 * The statistics of timings: medians, the relative spread, the interleaving order of a round
 * (round_order) and the paired sign test (compare_paired). The timing loop that uses them is
 * support/Interleaved.h.
 */
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace tessel {

/** The median of `samples` (the upper median for even sizes); NaN when empty. */
inline double median(std::vector<double> samples) {
    if (samples.empty()) return NAN;
    std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
    return samples[samples.size() / 2];
}

/** Relative spread of `samples`: (75th - 25th percentile) / median; 0 for fewer than 2. */
inline double relative_spread(std::vector<double> samples) {
    if (samples.size() < 2) return 0;
    std::sort(samples.begin(), samples.end());
    const auto at = [&](double q) { return samples[(size_t)std::lround(q * (double)(samples.size() - 1))]; };
    const double m = median(samples);
    return m > 0 ? (at(0.75) - at(0.25)) / m : 0;
}

/** The order in which `n` contenders run in round `round` of an interleaved measurement: a
 * permutation drawn afresh each round (seeded by the round, so a run repeats). Rotating one fixed
 * order keeps each contender's predecessor fixed, and a contender that always follows another
 * with the same working set finds its data in the caches every round. */
inline std::vector<size_t> round_order(size_t n, uint64_t round) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::mt19937_64 rng(0x9e3779b97f4a7c15ull + round);
    std::shuffle(order.begin(), order.end(), rng);
    return order;
}

/** Two candidates timed in the same rounds (a[i] and b[i] in round i, interleaved call by
 * call): the median of a[i] / b[i], how often each was the faster, and the two-sided sign
 * test's p-value for "neither is faster" (exact binomial; ties dropped). Pairing by round
 * cancels the machine's drift, which moves both times of a round alike. */
struct PairedComparison {
    double median_ratio = 1;  ///< median of a / b: < 1 when a is faster
    int a_faster = 0, b_faster = 0;
    double p_value = 1;
    /** Separated at `confidence` (e.g. 0.95): p <= 1 - confidence. */
    bool separated(double confidence) const { return p_value <= 1 - confidence; }
};

inline PairedComparison compare_paired(const std::vector<double> &a, const std::vector<double> &b) {
    PairedComparison c;
    std::vector<double> ratios;
    for (size_t i = 0; i < std::min(a.size(), b.size()); i++) {
        if (b[i] > 0) ratios.push_back(a[i] / b[i]);
        c.a_faster += a[i] < b[i];
        c.b_faster += b[i] < a[i];
    }
    if (!ratios.empty()) c.median_ratio = median(ratios);
    const int n = c.a_faster + c.b_faster, k = std::min(c.a_faster, c.b_faster);
    // P(X <= k) for X ~ Binomial(n, 1/2), doubled; terms built in logs to stay finite.
    double tail = 0;
    for (int i = 0; i <= k; i++)
        tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) - n * std::log(2.0));
    c.p_value = n == 0 ? 1.0 : std::min(1.0, 2 * tail);
    return c;
}

}  // namespace tessel
