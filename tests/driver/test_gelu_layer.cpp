// The running example compiled through the one path (GeluLayer -> CompiledKernel) under the
// first library schedules (CPU and CUDA), against the float64 reference on awkward shapes.
#include "baselines/GeluReference.h"
#include "codegen/Compile.h"
#include "driver/GeluLayer.h"
#include "schedules/Library.h"
#include "support/Random.h"

#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cmath>

using namespace tessel;
using Halide::Runtime::Buffer;

namespace {

struct Shape {
    int M, K, N;
};

// M=1 (decode), primes, sizes not divisible by the tiles or the vector width, and a
// scaled-down MLP shape.
const Shape kShapes[] = {{1, 1, 1},   {1, 64, 48},  {1, 37, 101}, {2, 3, 5},     {7, 13, 17},
                         {8, 32, 32}, {37, 53, 29}, {64, 64, 64}, {31, 129, 77}, {128, 256, 512}};

double tolerance(int K) { return 2e-5 * std::sqrt((double)K) + 1e-6; }

void check_kernel(const GeluLayer &kernel, GeluForm form, const Shape &s, uint32_t seed) {
    CAPTURE(s.M);
    CAPTURE(s.K);
    CAPTURE(s.N);
    Buffer<float> x(s.K, s.M), w(s.N, s.K), bias(s.N), y(s.N, s.M);
    fill_uniform(x, seed), fill_uniform(w, seed + 1), fill_uniform(bias, seed + 2);
    y.fill(NAN);  // an output element the kernel forgets stays NaN and fails the check
    kernel.run(x, w, bias, y);
    const auto ref = gelu_mlp_reference(x.data(), w.data(), bias.data(), s.M, s.K, s.N, form);
    const ErrorStats e = compare(y.data(), ref.data(), (size_t)s.M * s.N);
    CHECK(e.max_rel <= tolerance(s.K));
}

}  // namespace

TEST_CASE("cpu_tiled matches the float64 reference on awkward shapes") {
    const Halide::Target host = parse_target("host");
    for (GeluForm form : {GeluForm::Tanh, GeluForm::Erf}) {
        for (dsl::NumericMode mode : {dsl::NumericMode::Strict, dsl::NumericMode::Fast}) {
            if (form == GeluForm::Erf && mode == dsl::NumericMode::Fast) continue;  // same code as strict
            CAPTURE(to_string(form));
            CAPTURE(dsl::to_string(mode));
            GeluLayer kernel(form, mode, sched::library_schedule("cpu_tiled", host), host);
            uint32_t seed = 10;
            for (const Shape &s : kShapes) check_kernel(kernel, form, s, seed += 3);
        }
    }
}

TEST_CASE("cpu_tiled compiled for AVX2 (8-lane vectors) also matches") {
    const Halide::Target avx2 = parse_target("x86-64-linux-avx-avx2-fma-f16c-sse41");
    const auto schedule = sched::library_schedule("cpu_tiled", avx2);
    GeluLayer kernel(GeluForm::Erf, dsl::NumericMode::Strict, schedule, avx2);
    uint32_t seed = 100;
    for (const Shape &s : {Shape{1, 19, 23}, Shape{9, 33, 17}, Shape{37, 53, 29}}) check_kernel(kernel, GeluForm::Erf, s, seed++);
}

TEST_CASE("mismatched shapes are refused with both shapes named") {
    const Halide::Target host = parse_target("host");
    GeluLayer kernel(GeluForm::Erf, dsl::NumericMode::Strict, sched::library_schedule("cpu_tiled", host), host);
    Buffer<float> x(8, 4), w(16, 9), bias(16), y(16, 4);  // x is [4,8] but w is [9,16]
    x.fill(0), w.fill(0), bias.fill(0);
    try {
        kernel.run(x, w, bias, y);
        FAIL("expected an error");
    } catch (const CompileError &e) {
        const std::string msg = e.what();
        CHECK(msg.find("x[4,8]") != std::string::npos);
        CHECK(msg.find("w[9,16]") != std::string::npos);
        CHECK(msg.find("w") != std::string::npos);
    }
}

/** Halide's CUDA runtime needs the driver library; without it this machine has no GPU. */
bool has_cuda_driver() { return dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) != nullptr; }

// Skipped (and counted as skipped by doctest and ctest) where there is no GPU.
TEST_CASE("cuda_simple runs correctly on a GPU" * doctest::test_suite("gpu") * doctest::skip(!has_cuda_driver())) {
    const Halide::Target cuda = parse_target("host-cuda");
    GeluLayer kernel(GeluForm::Tanh, dsl::NumericMode::Strict, sched::library_schedule("cuda_simple", cuda), cuda);
    uint32_t seed = 200;
    for (const Shape &s : kShapes) check_kernel(kernel, GeluForm::Tanh, s, seed += 3);
}
