// PhaseTimes.h: totals per phase, in first-run order.
#include "support/PhaseTimes.h"

#include <cstdio>

namespace tessel {

void PhaseTimes::add(const std::string &phase, double seconds) {
    for (auto &[name, s] : phases_)
        if (name == phase) {
            s += seconds;
            return;
        }
    phases_.emplace_back(phase, seconds);
}

void PhaseTimes::append(const PhaseTimes &other) {
    for (const auto &[name, s] : other.phases_) add(name, s);
}

double PhaseTimes::total() const {
    double t = 0;
    for (const auto &p : phases_) t += p.second;
    return t;
}

std::string PhaseTimes::to_string() const {
    const double all = total();
    std::string out;
    char line[160];
    for (const auto &[name, s] : phases_) {
        std::snprintf(line, sizeof line, "  %-42s %9.3f s  (%5.1f %%)\n", name.c_str(), s, all > 0 ? 100 * s / all : 0.0);
        out += line;
    }
    std::snprintf(line, sizeof line, "  %-42s %9.3f s\n", "total", all);
    return out + line;
}

}  // namespace tessel
