/** \file
 * tessel_bench's report: the errors of each epilogue against float64 (measure_errors, before
 * timing) and the text summary printed after the benchmarks ran (print_summary: medians, ratios,
 * % of the FMA peak or of the decode roofline, the baseline, the group variants, the epilogue
 * forms, errors and compile times), to g_text. bench/run.sh and tests read its format.
 */
#pragma once

#include "bench/BenchData.h"
#include "bench/BenchOptions.h"
#include "bench/Roofline.h"
#include "support/ErrorStats.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessel::bench {

struct ErrorRow {
    std::string what;
    ErrorStats err;
};

/** Errors vs the float64 reference for each epilogue (and OpenBLAS's), on one shape. */
std::vector<ErrorRow> measure_errors(ShapeData &d, const Kernels &k);

/** The summary of the run, from g_samples and the probes' figures in `m`. */
void print_summary(const BenchOptions &o, const Machine &m, const std::vector<std::unique_ptr<ShapeData>> &data,
                   const std::map<std::string, double> &compile_seconds, const std::vector<ErrorRow> &errors,
                   const std::string &error_shape);

}  // namespace tessel::bench
