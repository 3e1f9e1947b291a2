#include "autoscheduler/SpecializationPlanner.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace tessel::autosched {

std::string format_extents(const Extents &e) {
    std::string s;
    for (const auto &[k, v] : e) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
    return s;
}

ShapeProfile parse_shape_profile(const std::string &text, const std::string &source) {
    ShapeProfile profile;
    std::istringstream in(text);
    std::string line;
    for (int number = 1; std::getline(in, line); number++) {
        if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
        std::istringstream words(line);
        ProfileEntry e;
        bool has_calls = false, any = false;
        for (std::string w; words >> w;) {
            any = true;
            const auto eq = w.find('=');
            auto fail = [&](const std::string &why) {
                throw std::invalid_argument(source + ":" + std::to_string(number) + ": '" + w + "': " + why);
            };
            if (eq == std::string::npos || eq == 0 || eq + 1 == w.size()) fail("expected NAME=NUMBER");
            const std::string key = w.substr(0, eq), value = w.substr(eq + 1);
            size_t used = 0;
            double calls = 0;
            long long extent = 0;
            try {
                if (key == "calls") calls = std::stod(value, &used);
                else extent = std::stoll(value, &used);
            } catch (const std::logic_error &) {
                fail("not a number");
            }
            if (used != value.size()) fail("not a number");
            if (key == "calls") {
                if (!(calls >= 0) || std::isinf(calls)) fail("calls must be a finite number >= 0");
                e.calls = calls;
                has_calls = true;
            } else {
                if (extent <= 0 || extent > (1ll << 40)) fail("extents are positive integers up to 2^40");
                e.shape[key] = (long)extent;
            }
        }
        if (!any) continue;
        if (!has_calls || e.shape.empty())
            throw std::invalid_argument(source + ":" + std::to_string(number) + ": a shape needs extents and calls=");
        for (const auto &p : profile)
            if (p.shape == e.shape)
                throw std::invalid_argument(source + ":" + std::to_string(number) + ": shape " + format_extents(e.shape) +
                                            " is listed twice");
        profile.push_back(std::move(e));
    }
    return profile;
}

bool VariantCosts::serves(const Extents &shape) const {
    for (const auto &g : guards)
        if (!g.holds(shape)) return false;
    return seconds_per_call.count(shape) > 0;
}

PlanTotals plan_totals(const ShapeProfile &profile, const std::vector<VariantCosts> &candidates,
                       const std::vector<size_t> &chosen, const VariantCosts &fallback, const PlannerBudgets &b) {
    PlanTotals t;
    for (const auto &e : profile) {
        const VariantCosts *serving = &fallback;
        for (size_t i : chosen)
            if (candidates[i].serves(e.shape)) {
                serving = &candidates[i];
                break;
            }
        t.run_seconds += e.calls * serving->seconds_per_call.at(e.shape);
    }
    auto add = [&](const VariantCosts &v) {
        t.compile_seconds += v.compile_seconds;
        t.tuning_seconds += v.tuning_seconds;
        t.code_bytes += v.code_bytes;
    };
    add(fallback);
    for (size_t i : chosen) add(candidates[i]);
    t.one_time_seconds = t.compile_seconds / b.compiles_amortized_over + t.tuning_seconds / b.tunings_amortized_over;
    std::ostringstream over;
    if (b.compile_seconds && t.compile_seconds > *b.compile_seconds)
        over << "compile " << t.compile_seconds << " s > budget " << *b.compile_seconds << " s; ";
    if (b.tuning_seconds && t.tuning_seconds > *b.tuning_seconds)
        over << "tuning " << t.tuning_seconds << " s > budget " << *b.tuning_seconds << " s; ";
    if (b.code_bytes && t.code_bytes > *b.code_bytes) over << "code " << t.code_bytes << " B > budget " << *b.code_bytes << " B; ";
    t.over_budget = over.str();
    t.within_budget = t.over_budget.empty();
    return t;
}

SpecializationPlan plan_specializations(const ShapeProfile &profile, const std::vector<VariantCosts> &candidates,
                                        const VariantCosts &fallback, const PlannerBudgets &budgets) {
    for (const auto &e : profile)
        if (!fallback.seconds_per_call.count(e.shape))
            throw std::invalid_argument("the fallback '" + fallback.name + "' has no time for the profiled shape " +
                                        format_extents(e.shape));
    SpecializationPlan p;
    p.fallback_only = plan_totals(profile, candidates, {}, fallback, budgets);
    std::vector<size_t> all(candidates.size());
    for (size_t i = 0; i < all.size(); i++) all[i] = i;
    p.every_candidate = plan_totals(profile, candidates, all, fallback, budgets);
    if (!p.fallback_only.within_budget) {
        p.feasible = false;
        p.infeasible_reason = "the fallback alone is over budget: " + p.fallback_only.over_budget;
        p.totals = p.fallback_only;
        return p;
    }
    p.totals = p.fallback_only;
    if (candidates.size() <= kExhaustiveCandidates) {
        const size_t subsets = size_t(1) << candidates.size();
        p.search = "exhaustive over " + std::to_string(subsets) + " subsets";
        for (size_t mask = 1; mask < subsets; mask++) {
            std::vector<size_t> chosen;
            for (size_t i = 0; i < candidates.size(); i++)
                if (mask >> i & 1) chosen.push_back(i);
            const PlanTotals t = plan_totals(profile, candidates, chosen, fallback, budgets);
            if (t.within_budget && t.total() < p.totals.total()) p.totals = t, p.chosen = chosen;
        }
    } else {
        p.search = "greedy (more than " + std::to_string(kExhaustiveCandidates) + " candidates)";
        for (bool improved = true; improved;) {
            improved = false;
            size_t best = candidates.size();
            PlanTotals best_t = p.totals;
            for (size_t i = 0; i < candidates.size(); i++) {
                if (std::find(p.chosen.begin(), p.chosen.end(), i) != p.chosen.end()) continue;
                std::vector<size_t> chosen = p.chosen;
                chosen.push_back(i);
                std::sort(chosen.begin(), chosen.end());  // keep the candidates' dispatch order
                const PlanTotals t = plan_totals(profile, candidates, chosen, fallback, budgets);
                if (t.within_budget && t.total() < best_t.total()) best = i, best_t = t;
            }
            if (best < candidates.size()) {
                p.chosen.push_back(best);
                std::sort(p.chosen.begin(), p.chosen.end());
                p.totals = best_t;
                improved = true;
            }
        }
    }
    for (const auto &e : profile) {
        std::string name = fallback.name;
        for (size_t i : p.chosen)
            if (candidates[i].serves(e.shape)) {
                name = candidates[i].name;
                break;
            }
        p.served_by[e.shape] = name;
    }
    return p;
}

double regret(double plan_measured_total, const std::vector<double> &alternatives) {
    double best = plan_measured_total;
    for (double a : alternatives) best = std::min(best, a);
    return best > 0 ? plan_measured_total / best - 1 : 0;
}

std::string SpecializationPlan::to_string(const std::vector<VariantCosts> &candidates, const VariantCosts &fallback) const {
    std::ostringstream os;
    auto totals_line = [&](const char *label, const PlanTotals &t) {
        os << "  " << label << ": expected " << t.total() << " s (run " << t.run_seconds << " s + one-time "
           << t.one_time_seconds << " s; compile " << t.compile_seconds << " s, tuning " << t.tuning_seconds << " s, code "
           << t.code_bytes << " B)" << (t.within_budget ? "" : " OVER BUDGET: " + t.over_budget) << "\n";
    };
    if (!feasible) {
        os << "specialization plan infeasible: " << infeasible_reason << "\n";
        return os.str();
    }
    os << "specialization plan (" << search << "): " << chosen.size() << " specialized variant(s) + fallback '"
       << fallback.name << "'\n";
    for (size_t i : chosen) {
        os << "  keep '" << candidates[i].name << "'";
        std::string g;
        for (const auto &x : candidates[i].guards) g += (g.empty() ? "" : " && ") + x.to_string();
        os << (g.empty() ? "" : " [" + g + "]") << ": compile " << candidates[i].compile_seconds << " s, tuning "
           << candidates[i].tuning_seconds << " s, code " << candidates[i].code_bytes << " B\n";
    }
    for (const auto &[shape, name] : served_by) os << "  " << format_extents(shape) << " -> " << name << "\n";
    totals_line("this plan", totals);
    totals_line("fallback only", fallback_only);
    totals_line("every candidate", every_candidate);
    return os.str();
}

}  // namespace tessel::autosched
