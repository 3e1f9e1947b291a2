/** \file
 * `tessel demo`: compiles GELU(x @ w + bias) — the graph of algorithms/GeluMlp.h through the one
 * path (driver/GeluLayer.h), as `tessel compile` would ship it — with the tuning database's or the
 * autoscheduler's schedule (or a named one), runs it on random inputs, checks it against the
 * float64 reference and OpenBLAS, and times it; with the CUDA toolkit present it also compiles
 * the CUDA schedule ahead of time and assembles every variant's PTX for the target's
 * architecture (host-cuda: sm_86).
 */
#pragma once

#include "baselines/GeluReference.h"
#include "dsl/ir/Graph.h"

#include <ostream>
#include <string>

namespace tessel {

struct DemoOptions {
    int M = 512, K = 1024, N = 4096;
    GeluForm form = GeluForm::Tanh;
    dsl::NumericMode mode = dsl::NumericMode::Strict;
    std::string target = "host";
    /** "auto": a tuning-database hit for this shape, else the autoscheduler's model pick
     * (`tune`: measured); or a library schedule name, or a .json schedule file. */
    std::string cpu_schedule = "auto";
    std::string db = "tessel-tuning.db";
    std::string kernel_cache;  ///< "" = beside the database, "off", or a directory (codegen/KernelCache.h)
    bool tune = false;
    std::string cuda_schedule = "cuda_tiled_shared";
    int repeats = 10;
    bool cuda = true;  ///< also check the CUDA variant when ptxas is available
};

/** Runs the demo, printing to `out`. Returns 0 when every check passed. */
int run_demo(const DemoOptions &options, std::ostream &out);

}  // namespace tessel
