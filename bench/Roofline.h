/** \file
 * tessel_bench's roofline: the machine's limits measured in the same run as the kernels. The
 * FMA-peak and STREAM-triad probes (autoscheduler/MachineProbes) run as benchmarks interleaved
 * with the kernels; a decode shape's read floor is the fastest of the read patterns in each
 * paired round (floor_name rows, timed by register_paired). Also what OpenBLAS build runs.
 */
#pragma once

#include "autoscheduler/MachineProbes.h"
#include "bench/BenchOptions.h"
#include "bench/Suite.h"

#include <string>
#include <vector>

namespace tessel::bench {

/** The machine's limits, from the probe benchmarks run interleaved with the kernels. */
struct Machine {
    double fma_peak_gflops = 0, fma_peak_gflops_best = 0;
    double fma_flops = 0;  ///< FLOPs of one probe run
    std::string fma_isa;
    autosched::NominalPeak nominal;
    double triad_gbps = 0, triad_gbps_best = 0;
    std::string openblas;
    std::string openblas_library;
    int openblas_parallel = -1;
};

/** "OpenMP", "pthread" or "sequential", from openblas_get_parallel(). */
std::string openblas_build(int parallel);

/** The OpenBLAS fields of Machine (the probes' are filled by summarize_probes). */
Machine describe_openblas();

/** Registers the FMA-peak and triad probes as benchmarks, so they sample the machine at
 * the same times (interleaved repetitions) as the kernels they are compared with. */
void register_probes(const BenchOptions &o, autosched::FmaPeakProbe *fma, autosched::TriadProbe *triad);

/** The probes' medians and best rates, after the benchmarks ran. */
void summarize_probes(Machine &m, const autosched::FmaPeakProbe &fma, const autosched::TriadProbe &triad);

/** The read floor of a decode shape, paired: in each round the fastest of the read patterns
 * (the minimum of four samples, so the floor leans fast, the safe side for a bound); `seconds`
 * is the median over rounds, and `share(kernel)` the median over rounds of floor / kernel, the
 * kernel's share of the floor's bandwidth in the same round. */
struct ReadFloor {
    std::vector<double> per_round;
    double seconds = 0;
    std::string pattern;  ///< the pattern fastest in most rounds
    double share(const std::string &kernel) const;
};

/** The read floor of decode shape `s` from its floor_name rows (w of `element_bytes` per element). */
ReadFloor read_floor(const BenchShape &s, double element_bytes = 4);

}  // namespace tessel::bench
