// CUDA library schedules checked without a GPU: every variant assembles for sm_90 with
// ptxas, without spills and within the limits; schedules over the limits are refused by
// apply_schedule before Halide is called.
#include "algorithms/GeluMlp.h"
#include "codegen/Compile.h"
#include "codegen/PtxReport.h"
#include "codegen/Ptxas.h"
#include "driver/GeluLayer.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/ApplySchedule.h"
#include "schedules/Library.h"
#include "schedules/MatmulCudaSchedules.h"
#include "schedules/ScheduleJson.h"

#include <doctest/doctest.h>

#include <iostream>

using namespace tessel;

namespace {

/** The running example's matmul+epilogue group for host-cuda, lowered afresh. */
lower::LoweredGroup fresh_group(const Halide::Target &t) {
    static const dsl::Graph g = gelu_mlp_layer(true, dsl::NumericMode::Strict);
    return lower::lower_group(g, gelu_layer_group(g, t));
}

sched::AppliedResources apply_steps(const std::vector<sched::Directive> &steps, const Halide::Target &t) {
    lower::LoweredGroup lg = fresh_group(t);
    return lower::apply_to_group(steps, lg, t, "test");
}

/** "" when `steps` apply to a fresh GELU MLP for host-cuda, else the error. */
std::string check_cuda(const std::vector<sched::Directive> &steps) {
    try {
        apply_steps(steps, parse_target("host-cuda"));
        return "";
    } catch (const sched::ScheduleError &e) {
        return e.what();
    }
}

}  // namespace

TEST_SUITE("cuda") {
    // Skipped (and counted as skipped) without the CUDA toolkit.
    TEST_CASE("every CUDA library schedule assembles for sm_90 without spills, within the limits" *
              doctest::skip(find_ptxas().empty())) {
        const Halide::Target t = parse_target("host-cuda");
        int checked = 0;
        for (const auto &e : sched::schedule_library()) {
            if (e.device != sched::Device::Cuda || e.group != dsl::GroupKind::MatmulEpilogue) continue;
            for (dsl::NumericMode mode : {dsl::NumericMode::Strict, dsl::NumericMode::Fast}) {
                SUBCASE((e.name + " " + dsl::to_string(mode)).c_str()) {
                    const GeluLayer layer(GeluForm::Tanh, mode, e.build(t), t, KernelBackend::AheadOfTime);
                    const PtxScheduleReport r = layer.kernel().ptx_report("sm_90");
                    INFO(r.to_string());
                    for (const auto &v : r.violations()) INFO(v);
                    CHECK(r.variants.size() == e.build(t).variants.size() + 1);
                    CHECK(r.within_limits());
                    for (const auto &v : r.variants) {
                        CHECK(v.ptxas.ok);
                        CHECK_FALSE(v.ptxas.has_spills());
                    }
                    checked++;
                }
            }
        }
        CHECK(checked >= 1);
    }

    TEST_CASE("the tiled and decode schedules declare the resources they were designed for") {
        const Halide::Target t = parse_target("host-cuda");
        const sched::CudaTileParams p;
        const auto res = apply_steps(sched::matmul_cuda_tiled_steps(p), t);
        CHECK(res.max_threads_per_block == (p.BN / p.TN) * (p.BM / p.TM));
        CHECK(res.shared_complete);
        CHECK(res.shared_bytes == 4L * (p.BN * p.BM + p.KT * (p.BM + p.BN)));
        CHECK(res.shared_bytes <= 48 * 1024);

        const sched::CudaDecodeParams d;
        const auto res2 = apply_steps(sched::matmul_cuda_decode_steps(d), t);
        CHECK(res2.max_threads_per_block == d.NB * d.KS);
    }

    TEST_CASE("the register tiles and the gemv declare the resources they were designed for") {
        const Halide::Target t = parse_target("host-cuda");
        for (const sched::CudaRegTileParams p : {sched::CudaRegTileParams{}, sched::CudaRegTileParams{64, 32, 4, 4, 4}}) {
            const auto res = apply_steps(sched::matmul_cuda_regtile_steps(p), t);
            CHECK(res.max_threads_per_block == (p.BN / p.TN) * (p.BM / p.TM));
            CHECK(res.shared_bytes == 0);  // the sums and the loaded slices are registers
        }
        for (const sched::CudaGemvParams p : {sched::CudaGemvParams{}, sched::CudaGemvParams{16, 32, 16, 4, 16}}) {
            const auto res = apply_steps(sched::matmul_cuda_gemv_steps(p), t);
            CHECK(res.max_threads_per_block == (p.NB / 4) * p.KS);
            CHECK(res.shared_complete);
            CHECK(res.shared_bytes == 4L * p.KS * p.NB * p.MB);
            CHECK(res.shared_bytes <= 48 * 1024);
        }
    }

    TEST_CASE("the library picks gemv for small M, register tiles where they fit, cuda_simple elsewhere") {
        const auto s = sched::library_schedule("cuda_tiled", parse_target("host-cuda"));
        auto pick = [&](long M, long K, long N) { return s.pick_variant({{"M", M}, {"K", K}, {"N", N}}); };
        REQUIRE(s.variants.size() == 5);
        CHECK(pick(16, 4096, 4096) == 0);  // gemv, one block of 16 rows
        CHECK(pick(8, 4096, 4096) == 1);   // gemv, row blocks of 4
        CHECK(pick(1, 4096, 4096) == 2);   // gemv, one row per block
        CHECK(pick(3, 4096, 11008) == 2);
        CHECK(pick(2048, 2048, 2048) == 3);  // 64x128 blocks of 8x8
        CHECK(pick(77, 768, 3072) == 4);     // 64x32 blocks of 4x4
        CHECK(pick(40, 768, 3072) == 4);
        CHECK(pick(77, 770, 3072) == s.variants.size());  // K not a multiple of 4
        CHECK(pick(20, 768, 3072) == s.variants.size());  // M under the smallest tile, over 16
        CHECK(pick(1, 4096, 6) == s.variants.size());     // N not a multiple of 4
        const auto d = sched::library_schedule("cuda_decode", parse_target("host-cuda"));
        CHECK(d.pick_variant({{"M", 1}, {"K", 4096}, {"N", 4098}}) == d.variants.size());  // first decode kernel
    }

    TEST_CASE("assume_aligned is checked and serialized") {
        SUBCASE("lanes that are not a power of two are refused") {
            sched::ScheduleSpec s;
            s.assume_aligned("w", 3);
            const std::string err = check_cuda(s.steps);
            INFO(err);
            CHECK(err.find("assume_aligned lanes must be a power of two from 1") != std::string::npos);
        }
        SUBCASE("an unknown buffer is refused") {
            sched::ScheduleSpec s;
            s.assume_aligned("v", 4);
            CHECK(check_cuda(s.steps).find("no stage named 'v'") != std::string::npos);
        }
        SUBCASE("inputs and the output accept it") {
            sched::ScheduleSpec s;
            s.assume_aligned("x", 4).assume_aligned("w", 4).assume_aligned("y", 4);
            CHECK(check_cuda(s.steps) == "");
            CHECK(sched::to_string(s.steps[0]) == "x.assume_aligned(4)");
            CHECK(sched::schedule_from_json(sched::to_json(s)) == s);
        }
    }

    TEST_CASE("CUDA schedules over the limits are refused before Halide is called") {
        SUBCASE("a block over 1024 threads") {
            sched::CudaTileParams p;
            p.BN = 256, p.TN = 2, p.BM = 64, p.TM = 4;  // 128 x 16 = 2048 threads
            const std::string err = check_cuda(sched::matmul_cuda_tiled_steps(p));
            INFO(err);
            CHECK(err.find("2048 threads") != std::string::npos);
            CHECK(err.find("over the limit of 1024 threads per block") != std::string::npos);
        }
        SUBCASE("a split-K decode block over 1024 threads") {
            sched::CudaDecodeParams d;
            d.NB = 64, d.KS = 32;  // 64 columns x 32 k-slices = 2048 threads
            const std::string err = check_cuda(sched::matmul_cuda_decode_steps(d));
            INFO(err);
            CHECK(err.find("GPU block of 2048 threads is over the limit of 1024") != std::string::npos);
        }
        SUBCASE("shared memory over 48 KiB") {
            sched::CudaTileParams p;
            p.BM = 128, p.TM = 16;  // 128x128 sums alone are 64 KiB
            const std::string err = check_cuda(sched::matmul_cuda_tiled_steps(p));
            INFO(err);
            CHECK(err.find("GPU shared memory of") != std::string::npos);
            CHECK(err.find("over the limit of 49152 bytes per block") != std::string::npos);
        }
        SUBCASE("a zero tile") {
            sched::CudaTileParams p;
            p.KT = 0;
            const std::string err = check_cuda(sched::matmul_cuda_tiled_steps(p));
            CHECK(err.find("split factor must be positive") != std::string::npos);
        }
    }

}  // TEST_SUITE
