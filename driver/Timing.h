/** \file
 * Wall-clock timing for the demo and the tuner: the median of `repeats` runs after one
 * warm-up run. Benchmarks proper use Google Benchmark (bench/).
 */
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace tessel {

template <typename Fn>
double median_seconds(Fn &&fn, int repeats) {
    fn();  // warm-up: first-touch page faults, thread pool start-up
    std::vector<double> t;
    for (int i = 0; i < std::max(1, repeats); i++) {
        auto t0 = std::chrono::steady_clock::now();
        fn();
        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    return t[t.size() / 2];
}

}  // namespace tessel
