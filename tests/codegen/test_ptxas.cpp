#include "codegen/Compile.h"
#include "codegen/Ptxas.h"
#include "driver/GeluLayer.h"
#include "schedules/Library.h"
#include "tests/TempDir.h"

#include <doctest/doctest.h>

#include <filesystem>

using namespace tessel;

TEST_CASE("ptxas -v output is parsed per kernel") {
    const std::string log = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'kernel_a' for 'sm_90'
ptxas info    : Function properties for kernel_a
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, 4096 bytes smem, 380 bytes cmem[0]
ptxas info    : Compiling entry function 'kernel_b' for 'sm_90'
ptxas info    : Function properties for kernel_b
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, 372 bytes cmem[0]
)";
    const auto k = parse_ptxas_log(log);
    REQUIRE(k.size() == 2);
    CHECK(k[0].kernel == "kernel_a");
    CHECK(k[0].registers == 40);
    CHECK(k[0].shared_bytes == 4096);
    CHECK(k[0].spill_store_bytes == 4);
    CHECK(k[0].spill_load_bytes == 12);
    CHECK(k[1].registers == 18);
    CHECK(k[1].shared_bytes == 0);
    PtxasReport r;
    r.kernels = k;
    CHECK(r.has_spills());
}

TEST_CASE("target strings: host, host-cuda, Halide strings, and a clear error otherwise") {
    CHECK(parse_target("host") == Halide::get_host_target());
    CHECK(parse_target("host-cuda").has_feature(Halide::Target::CUDA));
    CHECK(parse_target("x86-64-linux-avx2").has_feature(Halide::Target::AVX2));
    CHECK_THROWS_WITH_AS(parse_target("x86-64-linux-warp9"), doctest::Contains("unknown target 'x86-64-linux-warp9'"),
                         CompileError);
}

// Skipped (and counted as skipped) without the CUDA toolkit.
TEST_CASE("the CUDA variant's PTX assembles for sm_90 without spills" * doctest::skip(find_ptxas().empty())) {
    const Halide::Target cuda = parse_target("host-cuda");
    for (GeluForm form : {GeluForm::Tanh, GeluForm::Erf}) {
        const GeluLayer layer(form, dsl::NumericMode::Strict, sched::library_schedule("cuda_simple", cuda), cuda,
                              KernelBackend::AheadOfTime);
        const std::string ptx = layer.kernel().ptx(0);
        CHECK(ptx.find(".entry") != std::string::npos);
        const PtxasReport r = assemble_ptx(ptx, "sm_90");
        INFO(r.to_string());
        CHECK(r.ok);
        CHECK(!r.kernels.empty());
        CHECK(!r.has_spills());
    }
}

TEST_CASE("ahead-of-time compilation writes a static library, header and statement") {
    const Halide::Target host = parse_target("host");
    const GeluLayer layer(GeluForm::Erf, dsl::NumericMode::Strict, sched::library_schedule("cpu_tiled", host), host,
                          KernelBackend::AheadOfTime);
    const tessel::testing::TempDir dir;
    const auto files =
        layer.kernel().write_files(dir.dir, "gelu_mlp", {AotOutput::StaticLibrary, AotOutput::Header, AotOutput::Stmt});
    CHECK(files.size() == 3);
    for (const auto &f : files) CHECK(std::filesystem::file_size(f) > 0);
}
