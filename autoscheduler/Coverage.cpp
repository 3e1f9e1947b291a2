#include "autoscheduler/Coverage.h"

#include "support/Statistics.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace tessel::autosched {

std::vector<SuiteShape> load_shape_suite(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open shape suite '" + path + "'");
    std::vector<SuiteShape> out;
    std::string line;
    for (int n = 1; std::getline(in, line); n++) {
        line = line.substr(0, line.find('#'));
        std::istringstream ls(line);
        SuiteShape s;
        if (!(ls >> s.name)) continue;  // blank or comment line
        if (!(ls >> s.kind >> s.workload.M >> s.workload.K >> s.workload.N) || s.workload.M <= 0 || s.workload.K <= 0 ||
            s.workload.N <= 0 || (s.kind != "compute" && s.kind != "decode"))
            throw std::runtime_error(path + ":" + std::to_string(n) +
                                     ": expected `name compute|decode M K N` with positive extents");
        out.push_back(s);
    }
    if (out.empty()) throw std::runtime_error("shape suite '" + path + "' has no shapes");
    return out;
}

namespace {

std::vector<double> ranks(const std::vector<double> &v) {
    std::vector<size_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < idx.size();) {
        size_t j = i;
        while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) j++;
        for (size_t k = i; k <= j; k++) r[idx[k]] = (i + j) / 2.0 + 1;
        i = j + 1;
    }
    return r;
}

/** Measured candidates of one result: (predicted seconds, measured ms), model order. */
struct Pairs {
    std::vector<CandidateParams> params;
    std::vector<double> predicted, measured;
    std::vector<double> spread;  ///< relative spread of each candidate's screening samples
    size_t choice = 0;
};

Pairs measured_pairs(const TuneResult &r) {
    Pairs p;
    for (const auto &c : r.ranked) {
        if (!c.measured || !c.measured->ok()) continue;
        if (c.params == r.params) p.choice = p.measured.size();
        p.params.push_back(c.params);
        p.predicted.push_back(c.cost.total_s());
        // Screening times for every candidate: a finalist's final-round time is another kind of
        // measurement (interleaved, later), not comparable with the others' screening.
        const Measurement &screening = c.screened ? *c.screened : *c.measured;
        p.measured.push_back(screening.median_ms);
        p.spread.push_back(relative_spread(screening.samples));
    }
    return p;
}

double regret_of(const std::vector<double> &measured, size_t pick) {
    const double best = *std::min_element(measured.begin(), measured.end());
    return measured[pick] / best - 1;
}

}  // namespace

double spearman(const std::vector<double> &a, const std::vector<double> &b) {
    if (a.size() != b.size() || a.size() < 3) return 0;
    const auto ra = ranks(a), rb = ranks(b);
    const double n = (double)a.size(), mean = (n + 1) / 2;
    double sab = 0, saa = 0, sbb = 0;
    for (size_t i = 0; i < a.size(); i++) {
        sab += (ra[i] - mean) * (rb[i] - mean);
        saa += (ra[i] - mean) * (ra[i] - mean);
        sbb += (rb[i] - mean) * (rb[i] - mean);
    }
    return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

std::vector<ClassCoverage> coverage_by_class(const std::vector<TuneResult> &results) {
    std::map<std::string, ClassCoverage> by;
    for (const auto &r : results) {
        if (r.source != ScheduleProvenance::Measured) continue;
        const Pairs p = measured_pairs(r);
        if (p.measured.empty()) continue;
        ClassCoverage &c = by[r.key.shape_class];
        c.shape_class = r.key.shape_class;
        c.shapes++;
        c.measured += (int)p.measured.size();
        c.rank_correlation += spearman(p.predicted, p.measured);
        c.regret_model_top += regret_of(p.measured, 0);
        c.regret_choice += regret_of(p.measured, p.choice);
        c.measured_range +=
            *std::max_element(p.measured.begin(), p.measured.end()) / *std::min_element(p.measured.begin(), p.measured.end()) - 1;
        c.measurement_spread += median(p.spread);
    }
    std::vector<ClassCoverage> out;
    for (auto &[k, c] : by) {
        c.rank_correlation /= c.shapes, c.regret_model_top /= c.shapes, c.regret_choice /= c.shapes;
        c.measured_range /= c.shapes, c.measurement_spread /= c.shapes;
        out.push_back(c);
    }
    return out;
}

std::map<std::string, Calibration> fit_calibrations(const TargetModel &model, const std::vector<TuneResult> &results,
                                                    const std::vector<Workload> &workloads) {
    AnalyticalCostModel raw(model);
    std::map<std::string, std::vector<std::pair<CostBreakdown, double>>> samples;
    for (size_t i = 0; i < results.size(); i++) {
        if (results[i].source != ScheduleProvenance::Measured) continue;
        const Pairs p = measured_pairs(results[i]);
        const auto costs = raw.predict(workloads[i], p.params);
        for (size_t j = 0; j < p.params.size(); j++)
            samples[to_string(workloads[i].shape_class())].push_back({costs[j], p.measured[j] * 1e-3});
    }
    std::map<std::string, Calibration> out;
    for (const auto &[cls, s] : samples) out[cls] = AnalyticalCostModel::fit(s);
    return out;
}

std::vector<CalibrationRow> calibration_experiment(const TargetModel &model, const std::vector<TuneResult> &results,
                                                   const std::vector<Workload> &workloads) {
    const auto per_class = fit_calibrations(model, results, workloads);
    std::vector<std::pair<std::string, std::optional<Calibration>>> setups = {{"uncalibrated", Calibration{}}};
    if (per_class.count("square")) setups.push_back({"square only", per_class.at("square")});
    setups.push_back({"per class", std::nullopt});
    std::vector<CalibrationRow> rows;
    for (const auto &[label, global] : setups) {
        AnalyticalCostModel m(model);
        if (global) m.set_global_calibration(*global);
        for (const auto &[cls, c] : per_class) m.set_calibration(cls, c);
        std::map<std::string, std::pair<double, double>> sums;  // class -> (rho, regret)
        std::map<std::string, int> counts;
        for (size_t i = 0; i < results.size(); i++) {
            if (results[i].source != ScheduleProvenance::Measured) continue;
            const Pairs p = measured_pairs(results[i]);
            if (p.measured.size() < 2) continue;
            const auto costs = m.predict(workloads[i], p.params);
            std::vector<double> predicted;
            for (const auto &c : costs) predicted.push_back(c.total_s());
            const size_t top = std::min_element(predicted.begin(), predicted.end()) - predicted.begin();
            const std::string cls = to_string(workloads[i].shape_class());
            sums[cls].first += spearman(predicted, p.measured);
            sums[cls].second += regret_of(p.measured, top);
            counts[cls]++;
        }
        for (const auto &[cls, s] : sums) {
            CalibrationRow row{label, cls, s.first / counts[cls], s.second / counts[cls], {}};
            row.calibration = global ? *global : (per_class.count(cls) ? per_class.at(cls) : Calibration{});
            rows.push_back(row);
        }
    }
    return rows;
}

std::string to_string(const std::vector<ClassCoverage> &rows) {
    std::ostringstream os;
    os << std::left << std::setw(8) << "class" << std::right << std::setw(8) << "shapes" << std::setw(10) << "measured"
       << std::setw(12) << "spearman" << std::setw(18) << "regret(model #1)" << std::setw(16) << "regret(choice)" << std::setw(10)
       << "range" << std::setw(10) << "spread\n";
    bool within_noise = false;
    for (const auto &r : rows) {
        os << std::left << std::setw(8) << r.shape_class << std::right << std::setw(8) << r.shapes << std::setw(10) << r.measured
           << std::setw(12) << std::fixed << std::setprecision(2) << r.rank_correlation << std::setw(17) << std::setprecision(1)
           << r.regret_model_top * 100 << "%" << std::setw(15) << r.regret_choice * 100 << "%" << std::setw(9)
           << r.measured_range * 100 << "%" << std::setw(9) << r.measurement_spread * 100 << "%";
        const bool noise = r.within_noise();
        within_noise |= noise;
        os << (noise ? "  *" : "") << "\n";
    }
    os << "(range: slowest / fastest screened - 1; spread: a candidate's IQR / median, median over candidates;\n"
       << " means over the class's shapes"
       << (within_noise ? "; * range below twice the spread: the candidates are tied\n"
                          "   within the measurement and spearman ranks noise)\n"
                        : ")\n");
    return os.str();
}

std::string to_string(const std::vector<CalibrationRow> &rows) {
    std::ostringstream os;
    os << std::left << std::setw(14) << "calibration" << std::setw(8) << "class" << std::right << std::setw(10) << "spearman"
       << std::setw(18) << "regret(model #1)" << std::setw(24) << "scales (compute, mem)\n";
    for (const auto &r : rows)
        os << std::left << std::setw(14) << r.calibrated_on << std::setw(8) << r.evaluated << std::right << std::fixed
           << std::setw(10) << std::setprecision(2) << r.rank_correlation << std::setw(17) << std::setprecision(1)
           << r.regret_model_top * 100 << "%" << std::setw(12) << std::setprecision(2) << r.calibration.compute_scale << ", "
           << r.calibration.memory_scale << "\n";
    return os.str();
}

}  // namespace tessel::autosched
