// The OpenMP parallel runtime (codegen/ParallelRuntime.h): every task runs exactly once, on
// more than one thread when there are cores for it, failures are returned, nested loops run
// on the calling thread, and JIT kernels from compile_jit really use it.
#include "codegen/Compile.h"
#include "codegen/ParallelRuntime.h"

#include <doctest/doctest.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using namespace tessel;

namespace {

struct Record {
    std::mutex mutex;
    std::vector<int> runs;  // how often each index ran
    std::set<std::thread::id> threads;
    std::atomic<int> waiting{0};
    int fail_at = -1;
    bool wait_for_second_thread = false;
};

int record_task(void *, int idx, uint8_t *closure) {
    auto *r = reinterpret_cast<Record *>(closure);
    {
        std::lock_guard<std::mutex> lock(r->mutex);
        r->runs[idx]++;
        r->threads.insert(std::this_thread::get_id());
    }
    if (r->wait_for_second_thread) {
        // Hold the first tasks until a second thread has started one (bounded: one second),
        // so the test sees two threads even when a task would otherwise be too short.
        r->waiting++;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (r->waiting.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    }
    return idx == r->fail_at ? 42 : 0;
}

/** Calls the runtime on a nested loop from inside each task. */
int nested_task(void *, int, uint8_t *closure) {
    auto *inner = reinterpret_cast<Record *>(closure);
    return openmp_do_par_for(nullptr, record_task, 0, 4, reinterpret_cast<uint8_t *>(inner));
}

}  // namespace

TEST_CASE("every index of the range runs exactly once, including ranges not starting at 0") {
    for (int extent : {0, 1, 2, 7, 100}) {
        Record r;
        r.runs.assign(110, 0);
        CHECK(openmp_do_par_for(nullptr, record_task, 5, extent, reinterpret_cast<uint8_t *>(&r)) == 0);
        for (int i = 0; i < 110; i++) CHECK_MESSAGE(r.runs[i] == (i >= 5 && i < 5 + extent ? 1 : 0), "index " << i);
    }
}

TEST_CASE("tasks run on two threads when two are allowed") {
    if (omp_get_num_procs() < 2) return;  // nothing to show on one core
    setenv("HL_NUM_THREADS", "2", 1);
    CHECK(parallel_runtime_threads() == 2);
    Record r;
    r.runs.assign(8, 0);
    r.wait_for_second_thread = true;
    CHECK(openmp_do_par_for(nullptr, record_task, 0, 8, reinterpret_cast<uint8_t *>(&r)) == 0);
    CHECK(r.threads.size() == 2);
    unsetenv("HL_NUM_THREADS");
}

TEST_CASE("HL_NUM_THREADS=1 runs every task on the calling thread") {
    setenv("HL_NUM_THREADS", "1", 1);
    Record r;
    r.runs.assign(16, 0);
    CHECK(openmp_do_par_for(nullptr, record_task, 0, 16, reinterpret_cast<uint8_t *>(&r)) == 0);
    CHECK(r.threads == std::set<std::thread::id>{std::this_thread::get_id()});
    unsetenv("HL_NUM_THREADS");
    CHECK(parallel_runtime_threads() == omp_get_max_threads());
}

TEST_CASE("a failing task's status is returned") {
    Record r;
    r.runs.assign(64, 0);
    r.fail_at = 3;
    CHECK(openmp_do_par_for(nullptr, record_task, 0, 64, reinterpret_cast<uint8_t *>(&r)) == 42);
    CHECK(r.runs[3] == 1);
    for (int n : r.runs) CHECK(n <= 1);  // skipped, never repeated
}

TEST_CASE("a nested parallel loop runs its tasks on the thread that reached it") {
    Record inner;
    inner.runs.assign(4, 0);
    CHECK(openmp_do_par_for(nullptr, nested_task, 0, 3, reinterpret_cast<uint8_t *>(&inner)) == 0);
    for (int n : inner.runs) CHECK(n == 3);  // each of the 3 outer tasks ran the 4 inner ones
}

// Called from inside a JIT kernel's parallel loop: 1 when that loop runs on OpenMP.
extern "C" int tessel_test_in_omp_parallel(int x) { return omp_in_parallel() ? 1 : 0 * x; }
HalideExtern_1(int, tessel_test_in_omp_parallel, int);

TEST_CASE("kernels compiled by compile_jit run their parallel loops on OpenMP") {
    if (omp_get_num_procs() < 2) return;
    setenv("HL_NUM_THREADS", "2", 1);
    Halide::Var x("x");
    Halide::Func f("f");
    f(x) = tessel_test_in_omp_parallel(x);
    f.parallel(x);
    JitKernel k = compile_jit(f, {}, Halide::get_host_target(), "in_omp_parallel");
    Halide::Runtime::Buffer<int> out(16);
    REQUIRE(k.callable(out) == 0);
    for (int i = 0; i < 16; i++) CHECK_MESSAGE(out(i) == 1, "task " << i << " ran outside an OpenMP region");
    unsetenv("HL_NUM_THREADS");
}
