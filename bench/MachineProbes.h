/** \file
 * What the machine can do, measured in the same run as the kernels so ratios survive the
 * noise of a shared machine: the FMA peak of a register-only loop, the STREAM triad
 * bandwidth, and a cache flush used to time decode shapes cold.
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tessel::bench {

/** Runs `threads` copies of an FMA loop with 16 independent accumulator chains (enough
 * to cover FMA latency x throughput on AVX-512 and AVX2 cores) for about `seconds`;
 * returns GFLOP/s over all threads. Uses 512-bit FMAs when the CPU has AVX-512F, else
 * 256-bit; `isa` says which. Never touches memory inside the loop. */
double measure_fma_peak_gflops(int threads, double seconds, std::string *isa);

/** STREAM triad a[i] = b[i] + s * c[i] over three arrays of doubles of `bytes_per_array`
 * (use >= 4x the last-level cache), OpenMP-parallel with `threads`, counted as STREAM
 * does: 3 x 8 bytes per element (the write-allocate read is not counted). Returns one
 * GB/s figure per pass; the first, page-faulting pass is not included. */
std::vector<double> measure_triad_gbps(int threads, size_t bytes_per_array, int passes);

/** Evicts the caches of every core: each of `threads` OpenMP threads writes and reads its
 * share of a buffer much larger than the last-level cache, one store per cache line. */
class CacheFlusher {
public:
    explicit CacheFlusher(size_t bytes = size_t(256) << 20);
    void flush(int threads);
    size_t bytes() const { return buffer_.size(); }

private:
    std::vector<char> buffer_;
    volatile long sink_ = 0;
};

}  // namespace tessel::bench
