// tessel_amx_probe: can Halide 21 drive this CPU's matrix engine (AMX) for a bf16 matmul, and
// how fast, beside f32 on the same shape in the same rounds? A feasibility probe for the AMX
// path (issue "low precision where it pays", docs/results/amx_probe_intel.txt): a bf16 x bf16 ->
// f32 matmul written the way Halide's tile extraction recognizes it (w in VNNI pairs [K/2][N][2],
// the accumulator stored in AMXTile memory, tiles vectorized), checked against a float64
// reference of the same bf16 inputs, and timed interleaved with OpenBLAS's f32 sgemm (the
// baseline: the f32 speed Tessel matches on this machine). Without AMX it prints one line and
// exits 0.
//   tessel_amx_probe [M K N [rounds [tile_m tile_n tile_k]]]   (default 512 1024 4096 15 16 16 32)
#include <Halide.h>
#include <cblas.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "dsl/ir/Numerics.h"
#include "support/Statistics.h"

namespace {

using namespace Halide;

/** Linux hands out AMX tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM for
 * XFEATURE_XTILEDATA); without it the first tile instruction faults. */
bool request_amx() {
    constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

double seconds(const std::function<void()> &f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char **argv) {
    const int M = argc > 3 ? std::atoi(argv[1]) : 512, K = argc > 3 ? std::atoi(argv[2]) : 1024,
              N = argc > 3 ? std::atoi(argv[3]) : 4096, rounds = argc > 4 ? std::atoi(argv[4]) : 15;
    Target target = get_host_target();
    if (!target.has_feature(Target::AVX512_SapphireRapids)) {
        std::printf("skipped: this CPU has no AMX (Halide target %s)\n", target.to_string().c_str());
        return 0;
    }
    if (!request_amx()) {
        std::printf("skipped: the kernel refused AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM)\n");
        return 0;
    }
    if (K % 32 || N % 16 || M % 32) {
        std::fprintf(stderr, "M must be a multiple of 32, N of 16, K of 32 (whole tiles)\n");
        return 2;
    }

    // The pipeline: y[m][n] = sum_k f32(a[m][k]) * f32(b[k/2][n][k%2]).
    // w in VNNI pairs, [K/2][N][2]: the layout Halide's tile matcher recognizes (w in panels of 16
    // columns, each tile 1 KiB of contiguous memory, is not: "Store to AMX tile allocation of a
    // non-tile value", with the panel as a fourth dimension or folded into the row).
    ImageParam a(BFloat(16), 2, "a"), b(BFloat(16), 3, "b");
    Var n("n"), m("m");
    RDom r(0, K, "k");
    Func mm("mm");
    mm(n, m) = 0.0f;
    mm(n, m) += cast<float>(a(r.x, m)) * cast<float>(b(r.x % 2, n, r.x / 2));
    // One tile_m x tile_n f32 accumulator per (no, mo) (16 x 16: one AMX tile); tile_k of K per step.
    const int tile_m = argc > 5 ? std::atoi(argv[5]) : 16, tile_n = argc > 6 ? std::atoi(argv[6]) : 16,
              tile_k = argc > 7 ? std::atoi(argv[7]) : 32;
    Var ni("ni"), mi("mi"), no("no"), mo("mo"), ti("ti"), tj("tj");
    RVar ko("ko"), ki("ki");
    Func out = mm.in();
    out.tile(n, m, no, mo, ni, mi, tile_n, tile_m).vectorize(ni).vectorize(mi).parallel(mo);
    mm.compute_at(out, no).store_in(MemoryType::AMXTile);
    mm.tile(n, m, ti, tj, tile_n, tile_m).vectorize(ti).vectorize(tj);
    mm.update()
        .tile(n, m, ti, tj, tile_n, tile_m, TailStrategy::GuardWithIf)
        .split(r.x, ko, ki, tile_k)
        .reorder(ki, ti, tj, ko, n, m)
        .atomic()
        .vectorize(ki)
        .vectorize(ti)
        .vectorize(tj);
    a.dim(0).set_extent(K).dim(1).set_extent(M);
    b.dim(0).set_extent(2).dim(1).set_extent(N).dim(2).set_extent(K / 2);
    double compile_s = 0;
    try {
        compile_s = seconds([&] { out.compile_jit(target); });
    } catch (const Halide::Error &e) {
        std::printf("Halide could not compile the AMX pipeline: %s\n", e.what());
        return 1;
    }

    // Inputs: uniform in [-1, 1), rounded to bf16; w also as f32 for the sgemm baseline.
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    Buffer<bfloat16_t> ab(K, M), bb(2, N, K / 2);
    std::vector<float> af((size_t)M * K), wf((size_t)K * N), yf((size_t)M * N);
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++) {
            const float v = tessel::dsl::bf16_bits_to_float(tessel::dsl::float_to_bf16_bits(u(rng)));
            ab(k, i) = bfloat16_t(v);
            af[(size_t)i * K + k] = v;
        }
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) {
            const float v = tessel::dsl::bf16_bits_to_float(tessel::dsl::float_to_bf16_bits(u(rng)));
            bb(k % 2, j, k / 2) = bfloat16_t(v);
            wf[(size_t)k * N + j] = v;
        }
    a.set(ab);
    b.set(bb);
    Buffer<float> y(N, M);
    out.realize(y);

    // Check against float64 on the same bf16 values (every 7th output; bf16 products are exact
    // in f32, so the difference is the f32 accumulation's).
    double worst = 0;
    for (size_t o = 0; o < (size_t)M * N; o += 7) {
        const int i = int(o / N), j = int(o % N);
        double want = 0, scale = 0;
        for (int k = 0; k < K; k++) {
            want += (double)af[(size_t)i * K + k] * wf[(size_t)k * N + j];
            scale += std::fabs((double)af[(size_t)i * K + k] * wf[(size_t)k * N + j]);
        }
        worst = std::max(worst, std::fabs(y(j, i) - want) / scale);
    }

    // Interleaved rounds: AMX bf16, then OpenBLAS f32 sgemm, on all threads.
    std::vector<double> t_amx, t_sgemm;
    for (int i = 0; i < rounds; i++) {
        t_amx.push_back(seconds([&] { out.realize(y); }));
        t_sgemm.push_back(seconds([&] {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, af.data(), K, wf.data(), N, 0.0f, yf.data(), N);
        }));
    }
    const double flops = 2.0 * M * K * N;
    const double amx = tessel::median(t_amx), sgemm = tessel::median(t_sgemm);
    std::printf("AMX bf16 matmul probe, %d x %d x %d, %d threads, Halide target %s\n", M, K, N, omp_get_max_threads(),
                target.to_string().c_str());
    std::printf("  compile %.2f s; max error vs float64 on the bf16 inputs %.2e (relative to sum |a b|)\n", compile_s, worst);
    std::printf("  AMX bf16 (Halide tiles %d rows x %d columns, k %d): %8.3f ms  %7.1f GFLOP/s (median of %d)\n", tile_m, tile_n,
                tile_k, amx * 1e3, flops / amx * 1e-9, rounds);
    std::printf("  OpenBLAS f32 sgemm:                  %8.3f ms  %7.1f GFLOP/s (same rounds)\n", sgemm * 1e3,
                flops / sgemm * 1e-9);
    std::printf("  ratio f32 / AMX time: %.2fx\n", sgemm / amx);
    return worst < 1e-5 ? 0 : 1;
}
