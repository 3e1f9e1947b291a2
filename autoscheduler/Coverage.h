/** \file
 * Workload coverage: how well the cost model's ranking matches measurements, per shape class.
 *
 * For every tuned shape the measured candidates give pairs (predicted, measured). Per shape
 * class this reports Spearman's rank correlation, the regret of the model's top pick (its
 * measured time over the best measured, minus one) and the regret of the tuner's choice, all on
 * the screening measurements (a finalist's final-round time is kept apart: RankedCandidate::
 * screened), so a choice the final round made against its screening shows here as regret. Beside
 * them: how far apart the candidates measured and how noisy each measurement was, so a class
 * whose candidates are all within noise of each other is not read as a model failure.
 *
 * calibration_experiment() shows the design's warning on real measurements: a model whose
 * calibration was fitted on square matrices only, used to rank decode (memory-bound) shapes,
 * against the same model calibrated per class. The tuner answers poor correlation twice: per
 * class calibration, and a doubled measurement budget for classes that still correlate poorly.
 */
#pragma once

#include "autoscheduler/CostModel.h"
#include "autoscheduler/Tuner.h"

#include <string>
#include <vector>

namespace tessel::autosched {

/** One shape of the repository's suite (bench/shapes.txt: `name kind M K N`). */
struct SuiteShape {
    std::string name;
    std::string kind;  ///< "compute" (judged against the FMA peak) or "decode" (against bandwidth)
    Workload workload;
};
/** Reads a suite file; throws std::runtime_error naming the file and line on a bad line. The
 * benchmark (bench/Suite.h) reads the same file through this function. */
std::vector<SuiteShape> load_shape_suite(const std::string &path);

/** Spearman's rank correlation of two equally long series (average ranks for ties); 0 when
 * fewer than 3 points or no spread. */
double spearman(const std::vector<double> &a, const std::vector<double> &b);

struct ClassCoverage {
    std::string shape_class;
    int shapes = 0, measured = 0;
    double rank_correlation = 0;  ///< mean over the class's shapes
    double regret_model_top = 0;  ///< mean of measured(model's #1) / best measured - 1
    double regret_choice = 0;     ///< mean of measured(tuner's choice) / best measured - 1
    /** Mean of slowest / fastest screened candidate - 1, and of the candidates' median relative
     * spread (IQR / median of their screening samples): where the range is not well above the
     * spread, the candidates are tied within the measurement and a low rank correlation ranks
     * noise, not the model. */
    double measured_range = 0, measurement_spread = 0;
    /** Candidates whose times differ by less than about twice their spread are not ordered by
     * the measurement, so neither is the rank correlation over them. */
    bool within_noise() const { return measured_range < 2 * measurement_spread; }
};

/** Coverage from tuning results that were measured (database hits are skipped). */
std::vector<ClassCoverage> coverage_by_class(const std::vector<TuneResult> &results);

struct CalibrationRow {
    std::string calibrated_on;  ///< "square only", "per class", "uncalibrated"
    std::string evaluated;      ///< shape class
    double rank_correlation = 0, regret_model_top = 0;
    Calibration calibration;
};
/** Re-ranks the measured candidates of `results` under three calibrations of `model`. */
std::vector<CalibrationRow> calibration_experiment(const TargetModel &model, const std::vector<TuneResult> &results,
                                                   const std::vector<Workload> &workloads);

/** Fits a calibration per shape class from measured results (for the tuner to use next). */
std::map<std::string, Calibration> fit_calibrations(const TargetModel &model, const std::vector<TuneResult> &results,
                                                    const std::vector<Workload> &workloads);

std::string to_string(const std::vector<ClassCoverage> &rows);
std::string to_string(const std::vector<CalibrationRow> &rows);

}  // namespace tessel::autosched
