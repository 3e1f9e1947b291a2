/** \file
 * `tessel demo`: compiles GELU(x @ w + bias) with a CPU library schedule, runs it on random
 * inputs, checks it against the float64 reference and OpenBLAS, and times it; with the CUDA
 * toolkit present it also generates the CUDA variant's PTX and assembles it for sm_90.
 */
#pragma once

#include "algorithms/Gelu.h"

#include <ostream>
#include <string>

namespace tessel {

struct DemoOptions {
    int M = 512, K = 1024, N = 4096;
    GeluForm form = GeluForm::Tanh;
    NumericMode mode = NumericMode::Strict;
    std::string target = "host";
    /** "auto": a tuning-database hit for this shape, else the autoscheduler's model pick
     * (`tune`: measured); or a library schedule name, or a .json schedule file. */
    std::string cpu_schedule = "auto";
    std::string db = "tessel-tuning.db";
    bool tune = false;
    std::string cuda_schedule = "cuda_tiled_shared";
    int repeats = 10;
    bool cuda = true;  ///< also check the CUDA variant when ptxas is available
};

/** Runs the demo, printing to `out`. Returns 0 when every check passed. */
int run_demo(const DemoOptions &options, std::ostream &out);

}  // namespace tessel
