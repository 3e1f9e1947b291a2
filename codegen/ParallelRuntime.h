/** \file
 * The thread pool Tessel's CPU kernels run their parallel loops on: OpenMP, in place of
 * Halide's own pool.
 *
 * Why: a Halide `parallel` loop calls halide_do_par_for, which by default wakes the workers
 * of Halide's pool. On small VMs a worker that has been idle for a few milliseconds (while the
 * caches were flushed, or while another library ran) often joins a short parallel loop late or
 * not at all, so the whole loop runs on the calling thread; libgomp wakes its workers reliably
 * (docs/results/measurement_notes.md, parallel-runtime), and a process that also runs OpenMP code (OpenBLAS's
 * OpenMP build, the application around Tessel) then has one pool, not two fighting for the
 * same cores.
 *
 * Semantics kept from Halide's halide_do_par_for: every index in [min, min + extent) is one
 * task, tasks are handed out dynamically one at a time, the call returns when all have run,
 * and a task's nonzero status is returned (later tasks are skipped once one has failed).
 * A parallel loop reached from inside another (nested parallelism, or a kernel called from
 * the application's own OpenMP region) runs its tasks on the calling thread, as libgomp
 * does with nested regions by default.
 *
 * Threads: HL_NUM_THREADS when set (Halide's variable, so existing settings keep working),
 * else OpenMP's own setting (OMP_NUM_THREADS / omp_set_num_threads, default one per core).
 *
 * JIT kernels use it through use_openmp_parallel_runtime(pipeline.jit_handlers()) (done by
 * codegen/Compile.h's compile_jit). Libraries from `tessel lib` install the same loop
 * (codegen/ParallelLoop.h, compiled into their entry) around each call. Other code compiled
 * ahead of time keeps Halide's pool unless the application installs openmp_do_par_for with
 * halide_set_custom_do_par_for().
 */
#pragma once

#include <Halide.h>

namespace tessel {

/** Routes the parallel loops of pipelines JIT-compiled with `handlers` to OpenMP. */
void use_openmp_parallel_runtime(Halide::JITHandlers &handlers);

/** The same runtime with the signature of halide_do_par_for, for code compiled ahead of
 * time: halide_set_custom_do_par_for(tessel::openmp_do_par_for). */
int openmp_do_par_for(void *user_context, halide_task_t task, int min, int extent, uint8_t *closure);

/** Threads a parallel loop uses: HL_NUM_THREADS if set and positive, else omp_get_max_threads(). */
int parallel_runtime_threads();

}  // namespace tessel
