/** \file
 * tessel_bench's timing on the shared harness (support/Interleaved.h): every timed row is a
 * Google Benchmark benchmark whose iterations are the harness's rounds. register_paired times a
 * shape's implementations together, each once per round in an order drawn afresh, so their
 * samples pair by round (sample i of each from round i); register_timed times one alone. Decode
 * shapes flush every core's caches before each call (untimed), so w comes from DRAM. Every
 * sample is kept in g_samples under its row's name, across repetitions; paired_ratio reads
 * two rows round by round.
 */
#pragma once

#include "bench/BenchData.h"
#include "bench/BenchOptions.h"

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tessel::bench {

/** Every timed call of every row, by name, in seconds, across repetitions. */
inline std::map<std::string, std::vector<double>> g_samples;

using Timed = std::vector<std::pair<std::string, std::function<void()>>>;  ///< name, call

/** Iterations (rounds) per repetition of a benchmark of shape `s`. */
int iterations_for(const BenchShape &s, const BenchOptions &o);

/** Registers one timed implementation of a shape (counters: median ms, GFLOP/s, decode GB/s). */
void register_timed(const std::string &name, ShapeData *d, const BenchOptions &o, autosched::CacheFlusher *flusher,
                    std::function<void()> fn);

/** ONE benchmark per shape, "<shape>/paired", whose every iteration is one round of `impls` on the
 * harness; compute shapes time the FMA probe among the implementations, decode shapes the read
 * floor. Two-thread bandwidth and clock drift by tens of percent within seconds; samples taken
 * milliseconds apart compare the implementations under the same conditions, which blocks of
 * consecutive iterations of separate benchmarks do not. */
void register_paired(ShapeData *d, const BenchOptions &o, autosched::CacheFlusher *flusher, const Timed &impls);

/** Median over paired rounds of (rate of `a`) / (rate of `b`) for the same work per call, i.e.
 * b's time over a's in the same round; `scale` converts (e.g. the probe's FLOPs over the
 * kernel's). NaN when either was not timed. */
double paired_ratio(const std::string &a, const std::string &b, double scale = 1.0);

}  // namespace tessel::bench
