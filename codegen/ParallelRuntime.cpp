#include "codegen/ParallelRuntime.h"

#include <omp.h>

#include <atomic>
#include <cstdlib>

namespace tessel {

int parallel_runtime_threads() {
    if (const char *env = std::getenv("HL_NUM_THREADS")) {
        const int n = std::atoi(env);
        if (n > 0) return n;
    }
    return omp_get_max_threads();
}

namespace {

/** One parallel loop: tasks min..min+extent-1 handed out one at a time (schedule(dynamic, 1)),
 * the first failure's status kept and the tasks not yet started skipped. */
template <typename Context, typename Task>
int run_parallel_loop(Context *context, Task task, int min, int extent, uint8_t *closure) {
    std::atomic<int> status{0};
    auto run = [&](int i) {
        if (status.load(std::memory_order_relaxed) != 0) return;
        if (const int rc = task(context, i, closure); rc != 0) {
            int expected = 0;
            status.compare_exchange_strong(expected, rc);
        }
    };
    const int threads = extent > 1 && !omp_in_parallel() ? parallel_runtime_threads() : 1;
    if (threads <= 1) {
        for (int i = min; i < min + extent; i++) run(i);
        return status.load();
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int i = min; i < min + extent; i++) run(i);
    return status.load();
}

int jit_do_par_for(Halide::JITUserContext *context, int (*task)(Halide::JITUserContext *, int, uint8_t *),
                   int min, int extent, uint8_t *closure) {
    return run_parallel_loop(context, task, min, extent, closure);
}

}  // namespace

void use_openmp_parallel_runtime(Halide::JITHandlers &handlers) { handlers.custom_do_par_for = jit_do_par_for; }

int openmp_do_par_for(void *user_context, halide_task_t task, int min, int extent, uint8_t *closure) {
    return run_parallel_loop(user_context, task, min, extent, closure);
}

}  // namespace tessel
