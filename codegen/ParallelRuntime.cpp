#include "codegen/ParallelRuntime.h"

#include "codegen/ParallelLoop.h"

namespace tessel {

int parallel_runtime_threads() { return tessel_parallel::threads(); }

namespace {

int jit_do_par_for(Halide::JITUserContext *context, int (*task)(Halide::JITUserContext *, int, uint8_t *), int min, int extent,
                   uint8_t *closure) {
    return tessel_parallel::run_loop(context, task, min, extent, closure);
}

}  // namespace

void use_openmp_parallel_runtime(Halide::JITHandlers &handlers) { handlers.custom_do_par_for = jit_do_par_for; }

int openmp_do_par_for(void *user_context, halide_task_t task, int min, int extent, uint8_t *closure) {
    return tessel_parallel::run_loop(user_context, task, min, extent, closure);
}

}  // namespace tessel
