/** \file
 * PhaseTimes: where a command's time went, phase by phase (`tessel compile --time-report`, in the
 * spirit of `-ftime-report`). A phase is timed by running it through time(); phases keep the
 * order they first ran in, and a phase run again adds to its total.
 *
 * Example:
 *   PhaseTimes t;
 *   auto fusion = t.time("fusion", [&] { return plan_fusion(g); });
 *   t.to_string();  // "  fusion            1.234 s  (100.0 %)\n  total ..."
 */
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "support/Clock.h"

namespace tessel {

class PhaseTimes {
public:
    /** Runs fn() and adds its wall time to `phase`; returns what fn returns. */
    template <typename Fn>
    auto time(const std::string &phase, Fn &&fn) -> decltype(fn()) {
        struct Add {
            PhaseTimes &t;
            const std::string &phase;
            SteadyClock::time_point t0 = SteadyClock::now();
            ~Add() { t.add(phase, seconds_since(t0)); }
        } add{*this, phase};
        return fn();
    }
    void add(const std::string &phase, double seconds);
    /** Appends `other`'s phases (after this one's). */
    void append(const PhaseTimes &other);
    const std::vector<std::pair<std::string, double>> &phases() const { return phases_; }
    double total() const;
    /** One line per phase, seconds and share of the total, then the total. */
    std::string to_string() const;

private:
    std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace tessel
