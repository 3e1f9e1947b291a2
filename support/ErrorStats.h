/** \file
 * How far computed values are from reference values, with one rule for special values used by
 * every comparison in Tessel (`tessel run`, the demo, the benchmark's cross-checks, the tests):
 *  - the relative error of a pair is |got - want| / (1 + |want|);
 *  - NaN matches NaN (error 0); NaN against a number, or a number against NaN, is infinite;
 *  - an infinity matches the same infinity (error 0); any other pair with an infinity is infinite.
 * So a kernel that drops or invents a NaN, or overflows where the reference does not, never
 * passes a finite tolerance.
 */
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

namespace tessel {

/** Error of one pair under the rule above: {absolute, relative}. */
inline std::pair<double, double> pair_error(double got, double want) {
    constexpr std::pair<double, double> kExact{0.0, 0.0}, kInfinite{HUGE_VAL, HUGE_VAL};
    if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want) ? kExact : kInfinite;
    if (std::isinf(got) || std::isinf(want)) return got == want ? kExact : kInfinite;
    const double d = std::fabs(got - want);
    return {d, d / (1 + std::fabs(want))};
}

/** Largest absolute and relative error over many pairs. */
struct ErrorStats {
    double max_abs = 0, max_rel = 0;
    void add(double got, double want) {
        const auto [a, r] = pair_error(got, want);
        max_abs = std::max(max_abs, a);
        max_rel = std::max(max_rel, r);
    }
};

template <typename Got, typename Want>
ErrorStats compare(const Got *got, const Want *want, size_t count) {
    ErrorStats e;
    for (size_t i = 0; i < count; i++) e.add((double)got[i], (double)want[i]);
    return e;
}

}  // namespace tessel
