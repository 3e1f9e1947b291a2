/** \file
 * Medians, and wall-clock timing by the median of repeated runs. The one definition the
 * measurer, the demo, `tessel run`, the Halide-autoscheduler comparison and the benchmark use.
 * Benchmarks proper use Google Benchmark (bench/); this is for indicative timings and the
 * measuring child.
 */
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace tessel {

/** The median of `samples` (the upper median for even sizes); NaN when empty. */
inline double median(std::vector<double> samples) {
    if (samples.empty()) return NAN;
    std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
    return samples[samples.size() / 2];
}

/** Seconds per call of `fn`: the median of `repeats` timed runs after one warm-up run
 * (first-touch page faults, thread pool start-up). */
template <typename Fn>
double median_seconds(Fn &&fn, int repeats) {
    fn();
    std::vector<double> t;
    for (int i = 0; i < std::max(1, repeats); i++) {
        auto t0 = std::chrono::steady_clock::now();
        fn();
        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return median(std::move(t));
}

}  // namespace tessel
