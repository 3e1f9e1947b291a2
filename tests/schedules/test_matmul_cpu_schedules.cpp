/** \file
 * Every CPU library schedule against the float64 reference, on awkward shapes (M = 1, 2,
 * primes, K and N not multiples of any tile or vector) and on the benchmark suite's shapes
 * scaled down. Each schedule is JIT-compiled once per test case (all its variants) and
 * then run on the whole shape table, so the test stays short.
 */
#include "baselines/GeluReference.h"
#include "driver/GeluLayer.h"
#include "schedules/Library.h"
#include "schedules/MatmulCpuSchedules.h"
#include "support/Random.h"

#include <doctest/doctest.h>

#include <cmath>
#include <set>

using namespace tessel;
using Halide::Runtime::Buffer;

namespace {

struct Shape {
    int M, K, N;
    const char *why;
};

// Chosen so every variant of cpu_blocked (split-K gemm, decode, gemm, general) runs on AVX2 and AVX-512,
// with tails in every dimension.
const Shape kShapes[] = {
    {1, 1, 1, "smallest"},
    {1, 7, 5, "M=1, N below a vector"},
    {1, 1037, 1100, "decode, K not a multiple of the k chunk"},
    {1, 64, 4097, "decode, N one past a vector multiple"},
    {2, 3, 300, "decode, tiny K"},
    {3, 53, 29, "primes, N below every block"},
    {37, 53, 29, "primes"},
    {41, 19, 23, "N below a register block on AVX2 and AVX-512"},
    {5, 29, 257, "decode with a tail"},
    {7, 64, 1000, "small M"},
    {8, 33, 48, "exactly one register block"},
    {9, 29, 97, "gemm with tails in M and N"},
    {16, 100, 1000, "largest decode M"},
    {12, 1037, 101, "split-K gemm: M between register blocks, K not a multiple of the k chunk"},
    {11, 700, 130, "split-K gemm: a K block cut short in the last chunk (700 = 512 + 188, 188 = 5 x 32 + 28)"},
    {17, 523, 50, "smallest gemm M above decode"},
    {8, 17, 47, "N one under a register block"},
    {31, 31, 31, "prime square"},
    // The benchmark suite, scaled down.
    {128, 128, 128, "square"},
    {64, 128, 512, "MLP 512x1024x4096 / 8"},
    {128, 256, 256, "MLP 1024x4096x4096 / 16"},
    {1, 512, 2048, "decode 1x4096x4096 / 8 and / 2"},
    {16, 256, 512, "decode 16x4096x4096 / 16 and / 8"},
    {1, 256, 4096, "decode 1x4096x16384 / 16 and / 4"},
    {77, 96, 384, "odd 77x768x3072 / 8"},
    {3, 256, 688, "odd 3x4096x11008 / 16"},
};

/** Runs `kernel` on every shape and checks it against the float64 reference. */
void check_all_shapes(const GeluLayer &kernel, GeluForm form) {
    for (const Shape &s : kShapes) {
        CAPTURE(s.M);
        CAPTURE(s.K);
        CAPTURE(s.N);
        CAPTURE(s.why);
        Buffer<float> x(s.K, s.M), w(s.N, s.K), bias(s.N), y(s.N, s.M);
        fill_uniform(x, 11), fill_uniform(w, 12), fill_uniform(bias, 13);
        y.fill(NAN);  // an output the schedule forgets to write fails the check
        kernel.run(x, w, bias, y);
        const auto want = gelu_mlp_reference(x.data(), w.data(), bias.data(), s.M, s.K, s.N, form);
        const ErrorStats e = compare(y.data(), want.data(), (size_t)s.M * s.N);
        // float32 accumulation of K products of magnitude <= 1 loses about sqrt(K) ulps.
        CHECK(e.max_rel <= 4e-5 * std::sqrt((double)s.K) + 1e-5);
    }
}

std::map<std::string, long> extents(const Shape &s) { return {{"M", s.M}, {"K", s.K}, {"N", s.N}}; }

}  // namespace

TEST_CASE("the shape table reaches every variant of cpu_blocked") {
    for (const std::string target : {"x86-64-linux-avx2-fma", "x86-64-linux-avx512-avx512_skylake-avx2-fma"}) {
        CAPTURE(target);
        const auto s = sched::matmul_cpu_blocked(Halide::Target(target));
        std::set<size_t> picked;
        for (const Shape &shape : kShapes) picked.insert(s.pick_variant(extents(shape)));
        CHECK(picked.size() == s.variants.size() + 1);
    }
}

TEST_CASE("every CPU library schedule matches the float64 reference on awkward and suite shapes") {
    const Halide::Target target = Halide::get_host_target();
    for (const auto &entry : sched::schedule_library()) {
        if (entry.device != sched::Device::Cpu || entry.group != dsl::GroupKind::MatmulEpilogue) continue;
        SUBCASE(entry.name.c_str()) {
            // Strict tanh is the slowest epilogue (a libm call per lane) and the strictest check.
            GeluLayer kernel(GeluForm::Tanh, dsl::NumericMode::Strict, entry.build(target), target);
            check_all_shapes(kernel, GeluForm::Tanh);
        }
    }
}

TEST_CASE("cpu_blocked with the fast tanh and the erf epilogues") {
    const Halide::Target target = Halide::get_host_target();
    SUBCASE("tanh fast") {
        GeluLayer kernel(GeluForm::Tanh, dsl::NumericMode::Fast, sched::matmul_cpu_blocked(target), target);
        check_all_shapes(kernel, GeluForm::Tanh);
    }
    SUBCASE("erf") {
        GeluLayer kernel(GeluForm::Erf, dsl::NumericMode::Fast, sched::matmul_cpu_blocked(target), target);
        check_all_shapes(kernel, GeluForm::Erf);
    }
}

TEST_CASE("cpu_blocked compiles for AVX2 as well as AVX-512") {
    // JIT-run the AVX2 register block (4 rows x 3 vectors of 8) when this machine has AVX2.
    const Halide::Target host = Halide::get_host_target();
    if (!host.has_feature(Halide::Target::AVX2)) return;
    const Halide::Target avx2 = host.without_feature(Halide::Target::AVX512)
                                    .without_feature(Halide::Target::AVX512_Skylake)
                                    .without_feature(Halide::Target::AVX512_Cannonlake)
                                    .without_feature(Halide::Target::AVX512_Zen4)
                                    .without_feature(Halide::Target::AVX512_SapphireRapids);
    GeluLayer kernel(GeluForm::Tanh, dsl::NumericMode::Fast, sched::matmul_cpu_blocked(avx2), avx2);
    check_all_shapes(kernel, GeluForm::Tanh);
}

TEST_CASE("the split-K gemm in K blocks, on the host's register block") {
    // cpu_blocked takes the in-place form on every target (checked above through its variants);
    // the autoscheduler also offers the copying form. Both are checked here at the host's width,
    // with blocks of 32 or 16 rows and chunks of 128 (K tails in the chunk and in the block).
    const Halide::Target target = Halide::get_host_target();
    sched::CpuBlocking b = sched::CpuBlocking::for_target(target);
    b.k_chunk = 128;
    SUBCASE("w copied in blocks of 32 rows") { b.k_block = 32; }
    SUBCASE("in place: blocks of 16 rows in register tiles, added into the chunk's sums") { b.k_block = 0, b.sums_block = 16; }
    sched::ScheduleSpec s("splitk_k_blocked", sched::Device::Cpu);
    s.variants.push_back(
        {{{"M", sched::GuardOp::Ge, b.mr}, {"N", sched::GuardOp::Ge, b.nr}}, sched::matmul_cpu_splitk_gemm_steps(b)});
    s.steps = sched::matmul_cpu_general_steps(b);
    GeluLayer kernel(GeluForm::Tanh, dsl::NumericMode::Fast, s, target);
    check_all_shapes(kernel, GeluForm::Tanh);
    // Special values through the copy and the blocks' sums: a NaN in x (row 3 of y is NaN, no
    // other), -0 and 1e30 in w (column 7 is huge, of either sign), checked NaN-for-NaN.
    const int M = 11, K = 700, N = 130;
    Buffer<float> x(K, M), w(N, K), bias(N), y(N, M);
    fill_uniform(x, 21), fill_uniform(w, 22), fill_uniform(bias, 23);
    x(5, 3) = NAN;
    for (int k = 0; k < K; k += 7) w(k % N, k) = -0.0f;
    w(7, 600) = 1e30f;
    y.fill(0.0f);
    kernel.run(x, w, bias, y);
    const auto want = gelu_mlp_reference(x.data(), w.data(), bias.data(), M, K, N, GeluForm::Tanh);
    CHECK(std::isnan(y(0, 3)));
    CHECK_FALSE(std::isnan(y(0, 2)));
    CHECK(compare(y.data(), want.data(), (size_t)M * N).max_rel <= 4e-5 * std::sqrt((double)K) + 1e-5);
}
