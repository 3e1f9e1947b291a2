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
                if (key == "calls")
                    calls = std::stod(value, &used);
                else
                    extent = std::stoll(value, &used);
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

std::string VariantCosts::guards_text() const {
    std::string g;
    for (const auto &x : guards) g += (g.empty() ? "" : " && ") + x.to_string();
    return g.empty() ? "any shape" : g;
}

size_t SpecializationPlan::kept() const {
    size_t n = 0;
    for (const auto &c : chosen) n += c.size();
    return n;
}

namespace {

const VariantCosts &serving(const KernelChoices &k, const std::vector<size_t> &chosen, const Extents &shape) {
    for (size_t i : chosen)
        if (k.candidates[i].serves(shape)) return k.candidates[i];
    return k.fallback;
}

/** Every candidate of every kernel, in kernel order then dispatch order: the search's items. */
struct CandidateRef {
    size_t kernel, index;
};

KeptVariants kept_of(const std::vector<CandidateRef> &refs, const std::vector<size_t> &items, size_t kernels) {
    KeptVariants kept(kernels);
    for (size_t i : items) kept[refs[i].kernel].push_back(refs[i].index);
    for (auto &k : kept) std::sort(k.begin(), k.end());  // the candidates' dispatch order
    return kept;
}

}  // namespace

PlanTotals plan_totals(const ShapeProfile &profile, const std::vector<KernelChoices> &kernels, const KeptVariants &chosen,
                       const PlannerBudgets &b) {
    PlanTotals t;
    auto add = [&](const VariantCosts &v) {
        t.compile_seconds += v.compile_seconds;
        t.tuning_seconds += v.tuning_seconds;
        t.code_bytes += v.code_bytes;
    };
    for (size_t k = 0; k < kernels.size(); k++) {
        for (const auto &e : profile)
            t.run_seconds += e.calls * serving(kernels[k], chosen[k], e.shape).seconds_per_call.at(e.shape);
        add(kernels[k].fallback);
        for (size_t i : chosen[k]) add(kernels[k].candidates[i]);
    }
    t.one_time_seconds = t.compile_seconds / b.compiles_amortized_over + t.tuning_seconds / b.tunings_amortized_over;
    std::ostringstream over;
    if (b.compile_seconds && t.compile_seconds > *b.compile_seconds)
        over << "compile " << t.compile_seconds << " s > budget " << *b.compile_seconds << " s; ";
    if (b.tuning_seconds && t.tuning_seconds > *b.tuning_seconds)
        over << "tuning " << t.tuning_seconds << " s > budget " << *b.tuning_seconds << " s; ";
    if (b.code_bytes && t.code_bytes > *b.code_bytes)
        over << "code " << t.code_bytes << " B > budget " << *b.code_bytes << " B; ";
    t.over_budget = over.str();
    t.within_budget = t.over_budget.empty();
    return t;
}

SpecializationPlan plan_specializations(const ShapeProfile &profile, const std::vector<KernelChoices> &kernels,
                                        const PlannerBudgets &budgets) {
    std::vector<CandidateRef> refs;
    for (size_t k = 0; k < kernels.size(); k++) {
        for (const auto &e : profile)
            if (!kernels[k].fallback.serves(e.shape))
                throw std::invalid_argument("the fallback '" + kernels[k].fallback.name + "'" +
                                            (kernels[k].kernel.empty() ? "" : " of " + kernels[k].kernel) +
                                            " has no time for the profiled shape " + format_extents(e.shape));
        for (size_t i = 0; i < kernels[k].candidates.size(); i++) refs.push_back({k, i});
    }
    auto totals_of = [&](const std::vector<size_t> &items) {
        return plan_totals(profile, kernels, kept_of(refs, items, kernels.size()), budgets);
    };
    std::vector<size_t> all(refs.size());
    for (size_t i = 0; i < all.size(); i++) all[i] = i;

    SpecializationPlan p;
    p.fallback_only = totals_of({});
    p.every_candidate = totals_of(all);
    p.chosen.assign(kernels.size(), {});
    p.totals = p.fallback_only;
    if (!p.fallback_only.within_budget) {
        p.feasible = false;
        p.infeasible_reason = "the fallback alone is over budget: " + p.fallback_only.over_budget;
        return p;
    }
    std::vector<size_t> best_items;
    if (refs.size() <= kExhaustiveCandidates) {
        const size_t subsets = size_t(1) << refs.size();
        p.search = "exhaustive over " + std::to_string(subsets) + " subsets";
        for (size_t mask = 1; mask < subsets; mask++) {
            std::vector<size_t> items;
            for (size_t i = 0; i < refs.size(); i++)
                if (mask >> i & 1) items.push_back(i);
            const PlanTotals t = totals_of(items);
            if (t.within_budget && t.total() < p.totals.total()) p.totals = t, best_items = items;
        }
    } else {
        p.search = "greedy (more than " + std::to_string(kExhaustiveCandidates) + " candidates)";
        for (bool improved = true; improved;) {
            improved = false;
            size_t best = refs.size();
            PlanTotals best_t = p.totals;
            for (size_t i = 0; i < refs.size(); i++) {
                if (std::find(best_items.begin(), best_items.end(), i) != best_items.end()) continue;
                std::vector<size_t> items = best_items;
                items.push_back(i);
                const PlanTotals t = totals_of(items);
                if (t.within_budget && t.total() < best_t.total()) best = i, best_t = t;
            }
            if (best < refs.size()) {
                best_items.push_back(best);
                p.totals = best_t;
                improved = true;
            }
        }
    }
    p.chosen = kept_of(refs, best_items, kernels.size());
    p.served_by.resize(kernels.size());
    for (size_t k = 0; k < kernels.size(); k++)
        for (const auto &e : profile) p.served_by[k][e.shape] = serving(kernels[k], p.chosen[k], e.shape).name;
    return p;
}

double regret(double plan_measured_total, const std::vector<double> &alternatives) {
    double best = plan_measured_total;
    for (double a : alternatives) best = std::min(best, a);
    return best > 0 ? plan_measured_total / best - 1 : 0;
}

std::string SpecializationPlan::to_string(const std::vector<KernelChoices> &kernels) const {
    std::ostringstream os;
    auto totals_line = [&](const char *label, const PlanTotals &t) {
        os << "  " << label << ": expected " << t.total() << " s (run " << t.run_seconds << " s + one-time " << t.one_time_seconds
           << " s; compile " << t.compile_seconds << " s, tuning " << t.tuning_seconds << " s, code " << t.code_bytes << " B)"
           << (t.within_budget ? "" : " OVER BUDGET: " + t.over_budget) << "\n";
    };
    if (!feasible) {
        os << "specialization plan infeasible: " << infeasible_reason << "\n";
        return os.str();
    }
    os << "specialization plan (" << search << "): " << kept() << " specialized variant(s) kept beside " << kernels.size()
       << " fallback(s)\n";
    for (size_t k = 0; k < kernels.size(); k++) {
        const std::string indent = kernels[k].kernel.empty() ? "  " : "    ";
        if (!kernels[k].kernel.empty())
            os << "  kernel " << kernels[k].kernel << ": " << chosen[k].size() << " of " << kernels[k].candidates.size()
               << " candidate(s) kept, fallback '" << kernels[k].fallback.name << "'\n";
        else
            os << "  fallback '" << kernels[k].fallback.name << "'\n";
        for (size_t i : chosen[k]) {
            const VariantCosts &c = kernels[k].candidates[i];
            os << indent << "keep '" << c.name << "' [" << c.guards_text() << "]: compile " << c.compile_seconds << " s, tuning "
               << c.tuning_seconds << " s, code " << c.code_bytes << " B\n";
        }
        for (const auto &[shape, name] : served_by[k]) os << indent << format_extents(shape) << " -> " << name << "\n";
    }
    totals_line("this plan", totals);
    totals_line("fallback only", fallback_only);
    totals_line("every candidate", every_candidate);
    return os.str();
}

}  // namespace tessel::autosched
