/** \file
 * What tessel_bench's parts share: the text report's stream, each shape's buffers (ShapeData),
 * the kernels timed (Kernels), and the names of the timed rows (the keys of the samples,
 * bench/PairedTiming.h, and of Google Benchmark's JSON, which bench/run.sh and tests read).
 */
#pragma once

#include "autoscheduler/MachineProbes.h"
#include "bench/GroupVariants.h"
#include "bench/Suite.h"
#include "driver/GeluLayer.h"
#include "support/Random.h"

#include <HalideBuffer.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessel::bench {

using Halide::Runtime::Buffer;

/** Where the text report goes: stdout, or stderr when stdout carries Google Benchmark's JSON. */
inline FILE *g_text = stdout;

/** Inputs and outputs of one shape, allocated once and shared by every implementation. */
struct ShapeData {
    BenchShape shape;
    Buffer<float> x, w, bias, y;
    Buffer<float> t, wt;                                     ///< group variants only: the exported matmul result, w stored [N, K]
    std::map<std::string, GroupVariant::Prepared> prepared;  ///< by variant label
    explicit ShapeData(const BenchShape &s) : shape(s), x(s.K, s.M), w(s.N, s.K), bias(s.N), y(s.N, s.M) {
        fill_uniform(x, 1), fill_uniform(w, 2), fill_uniform(bias, 3);
        y.fill(0.0f);
    }
};

struct Kernels {
    // One JIT kernel per GELU epilogue variant, all from the same library schedule.
    std::unique_ptr<GeluLayer> tanh_fast, tanh_strict, erf_fast, erf_strict;
    std::unique_ptr<GeluLayer> baseline;  ///< --baseline, tanh fast (null when not asked for)
    std::vector<GroupVariant> variants;   ///< the same work as other group shapes, same schedule
};

inline std::string tessel_name(const BenchShape &s, const std::string &schedule, const std::string &epilogue) {
    return s.name + "/tessel:" + schedule + "/" + epilogue;
}
inline std::string blas_name(const BenchShape &s, const std::string &epilogue) { return s.name + "/openblas/" + epilogue; }
inline std::string probe_name(const BenchShape &s) { return s.name + "/probe/fma_peak"; }
/** The read floor's row for w's K x N elements of `element_bytes` each (4: f32's w; 2 and 1: the
 * bytes a bf16 or int8 weight reads; 0.625: int4 with an f32 scale per group of 32). */
inline std::string floor_name(const BenchShape &s, const autosched::ReadPattern &p, double element_bytes = 4) {
    char bytes[32];
    std::snprintf(bytes, sizeof bytes, "%gB_", element_bytes);
    return s.name + "/floor/read_w_" + (element_bytes == 4 ? "" : bytes) + p.name();
}

/** `name` is in the comma-separated `list`. */
inline bool listed(const std::string &list, const std::string &name) {
    return ("," + list + ",").find("," + name + ",") != std::string::npos;
}

}  // namespace tessel::bench
