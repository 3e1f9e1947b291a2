/** \file
 * The parallel loop of Tessel's CPU kernels, on OpenMP (the why: codegen/ParallelRuntime.h).
 * Self-contained on purpose — the standard library's <atomic> and <cstdlib>, and <omp.h> — so
 * that the one definition serves both the JIT (ParallelRuntime.cpp includes it) and every
 * library `tessel lib` writes (its text is compiled into the generated entry; see
 * driver/KernelLibrary.h), and both run their kernels on the same runtime.
 */
#pragma once

#include <omp.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace tessel_parallel {

/** Threads a parallel loop uses: HL_NUM_THREADS if set and positive, else omp_get_max_threads(). */
inline int threads() {
    if (const char *env = std::getenv("HL_NUM_THREADS")) {
        const int n = std::atoi(env);
        if (n > 0) return n;
    }
    return omp_get_max_threads();
}

/** One parallel loop: tasks min..min+extent-1 handed out one at a time (schedule(dynamic, 1)),
 * the first failure's status kept and the tasks not yet started skipped. A loop reached from
 * inside an OpenMP region runs on the calling thread. */
template <typename Context, typename Task>
int run_loop(Context *context, Task task, int min, int extent, uint8_t *closure) {
    std::atomic<int> status{0};
    auto run = [&](int i) {
        if (status.load(std::memory_order_relaxed) != 0) return;
        if (const int rc = task(context, i, closure); rc != 0) {
            int expected = 0;
            status.compare_exchange_strong(expected, rc);
        }
    };
    const int n = extent > 1 && !omp_in_parallel() ? threads() : 1;
    if (n <= 1) {
        for (int i = min; i < min + extent; i++) run(i);
        return status.load();
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(n)
    for (int i = min; i < min + extent; i++) run(i);
    return status.load();
}

}  // namespace tessel_parallel
