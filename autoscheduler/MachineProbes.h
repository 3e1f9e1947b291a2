/** \file
 * What the machine can do, measured in the same run as the kernels so ratios survive the
 * noise of a shared machine: the FMA peak of a register-only loop, the STREAM triad
 * bandwidth, and a cache flush used to time decode shapes cold.
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tessel::autosched {

/** The vector width the FMA probe runs: the widest the timed kernels use. */
enum class VectorIsa { Avx2, Avx512 };
VectorIsa host_vector_isa();

/** An FMA loop with independent accumulator chains per thread, as many as the ISA's register
 * file holds beside the loop's two constants (AVX2: 12 of 16 ymm, AVX-512: 24 of 32 zmm; enough
 * to cover FMA latency x throughput), run by `threads` OpenMP threads. Never touches memory in
 * the loop (tests/bench/check_fma_probe.py checks the compiled code). Each thread times its own
 * loop: a thread's wait to be scheduled is not FMA time.
 * Example: FmaPeakProbe p(2, 0.02, VectorIsa::Avx2); double gflops = p.flops() / p.run() * 1e-9; */
class FmaPeakProbe {
public:
    /** Calibrates the iteration count so one run() takes about `seconds`. Throws
     * std::invalid_argument for AVX-512 on a CPU without it. */
    FmaPeakProbe(int threads, double seconds, VectorIsa isa);
    double run() const;  ///< seconds for one run
    double flops() const;
    int chains() const;
    int lanes() const;
    std::string isa() const;  ///< "avx2 ymm FMA, 12 chains in 14 of 16 registers"

private:
    int threads_;
    VectorIsa isa_;
    long iterations_ = 1 << 16;
};

/** An independent count of the FMA peak: FLOPs per cycle per core of the CPU's core type (from
 * /proc/cpuinfo's vendor, family and model) x its reported clock x threads. A reference for the
 * probe, not a measurement: the clock is the one the kernel reports (under a VM, often the
 * nominal one; turbo may run faster). flops_per_cycle is 0 for a CPU it does not know. */
struct NominalPeak {
    std::string core;
    double flops_per_cycle = 0, ghz = 0, gflops = 0;
};
NominalPeak nominal_fma_peak(VectorIsa isa, int threads);

/** STREAM triad a[i] = b[i] + s * c[i] over three arrays of doubles of `bytes_per_array`
 * (use >= 4x the last-level cache), OpenMP-parallel with `threads`, counted as STREAM
 * does: 3 x 8 bytes per element (the write-allocate read is not counted). The pages are
 * first touched by the threads that use them; each thread times its own share. */
class TriadProbe {
public:
    TriadProbe(int threads, size_t bytes_per_array);
    double run();  ///< seconds for one pass
    double bytes() const { return 3.0 * sizeof(double) * a_.size(); }

private:
    int threads_;
    std::vector<double> a_, b_, c_;
};

/** How stream_read walks its share of w: `streams` (1 to 8) streams per task, each advanced
 * `step` floats (a multiple of 16) before the next stream is read. */
struct ReadPattern {
    int streams = 8;
    int step = 256;
    std::string name() const;  ///< e.g. "8x1KiB"
};

/** Reads `count` floats once: 8 tasks shared by `threads` OpenMP threads, each reading its
 * contiguous eighth in `pattern`, into vector partial sums, with the widest vectors the CPU
 * has. Timed after a cache flush, the fastest of kReadPatterns is the same-run memory floor for
 * the decode shapes, whose weights are read exactly once: the access patterns of the decode
 * nests (gemv's 8 row streams per task advanced 4 vectors at a time, a panel nest's one
 * stream), so no kernel should beat it by more than noise; one that does by more says the
 * probe is wrong again (it is a measurement, not a proven bound). */
float stream_read(const float *data, size_t count, int threads, ReadPattern pattern = {});

/** The patterns stream_read is timed with; the floor is the fastest. 1 KiB steps in 1, 2 and 8
 * streams, and the gemv's own walk: 8 streams advanced 128 bytes at a time. */
inline constexpr ReadPattern kReadPatterns[] = {{1, 256}, {2, 256}, {8, 256}, {8, 32}};

/** Evicts the caches of every core: each of `threads` threads writes and reads its share of a
 * buffer much larger than the last-level cache, one store per cache line.
 *
 * Which threads flush decides what the call timed next pays besides its cold reads. On the
 * OpenMP pool (the default) the pool's workers finish the flush and are still spinning when the
 * kernel starts, as in a program running kernels back to back: every kernel in tessel_bench,
 * `tessel db probe` and the read-floor probes runs on that one pool, so all start alike. On
 * plain threads the OpenMP workers sleep through the flush and the call first wakes them, which
 * on a virtual machine can cost more than a small decode call itself and varies from call to
 * call (docs/results/gemv_chunks_intel.txt). The peer harness's Tessel worker flushes on plain
 * threads, as its Python workers do, so every framework there wakes its own pool. */
class CacheFlusher {
public:
    enum class Threads { OpenMP, Plain };
    explicit CacheFlusher(size_t bytes = size_t(256) << 20, Threads threads = Threads::OpenMP);
    void flush(int threads);
    size_t bytes() const { return buffer_.size(); }
    Threads flushing_threads() const { return threads_; }

private:
    std::vector<char> buffer_;
    Threads threads_;
    volatile long sink_ = 0;
};

}  // namespace tessel::autosched
