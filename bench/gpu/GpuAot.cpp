// tessel_gpu_aot OUT_DIR AR: compiles every variant of every CUDA library schedule of the
// GELU MLP (the graph's matmul+epilogue group, through CompiledKernel as `tessel compile`
// ships it) ahead of time for host-cuda (no Halide runtime in each), one standalone Halide
// runtime with CUDA, and a registry (gpu_kernels.cpp) that lists them with their guards.
// Everything goes into OUT_DIR/libtessel_gpu_kernels.a, so the benchmark needs no libHalide.
#include "codegen/Compile.h"
#include "driver/GeluLayer.h"
#include "schedules/Library.h"
#include "schedules/MatmulCudaSchedules.h"
#include "support/Subprocess.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

using namespace tessel;
namespace fs = std::filesystem;

namespace {

std::string guard_expr(const std::vector<sched::Guard> &guards) {
    std::string e;
    for (const auto &g : guards) {
        std::string t = g.op == sched::GuardOp::Divisible
                            ? "(" + g.extent + " % " + std::to_string(g.value) + " == 0)"
                            : "(" + g.extent + " " + sched::to_string(g.op) + " " + std::to_string(g.value) + ")";
        e += (e.empty() ? "" : " && ") + t;
    }
    return e.empty() ? "true" : e;
}

/** Other tile sizes for the register-tiled GEMM and the gemv, each with cuda_simple (or the
 * first decode kernel) as its fallback; named cand_*. */
std::vector<sched::ScheduleSpec> candidate_schedules(const Halide::Target &t) {
    std::vector<sched::ScheduleSpec> out;
    const sched::ScheduleSpec simple = sched::matmul_cuda_simple(t);
    for (const sched::CudaRegTileParams p :
         {sched::CudaRegTileParams{128, 128, 8, 8, 4}, sched::CudaRegTileParams{64, 128, 4, 16, 4},
          sched::CudaRegTileParams{64, 128, 4, 8, 4}}) {
        sched::ScheduleSpec s("cand_rt" + std::to_string(p.BN) + "x" + std::to_string(p.BM) + "_" + std::to_string(p.TN) + "x" +
                                  std::to_string(p.TM),
                              sched::Device::Cuda);
        s.variants.push_back({sched::matmul_cuda_regtile_guards(p), sched::matmul_cuda_regtile_steps(p)});
        s.steps = simple.steps;
        out.push_back(s);
    }
    for (const sched::CudaGemvParams p : {sched::CudaGemvParams{16, 64, 4, 8, 16}, sched::CudaGemvParams{32, 32, 1, 8, 16},
                                          sched::CudaGemvParams{16, 64, 1, 4, 16}}) {
        sched::ScheduleSpec s("cand_gemv" + std::to_string(p.NB) + "_" + std::to_string(p.KS) + "_" + std::to_string(p.MB) + "_" +
                                  std::to_string(p.KU),
                              sched::Device::Cuda);
        s.variants.push_back({sched::matmul_cuda_gemv_guards(p), sched::matmul_cuda_gemv_steps(p)});
        s.variants.push_back({sched::matmul_cuda_gemv_guards(sched::CudaGemvParams{16, 64, 1, 8, 16}),
                              sched::matmul_cuda_gemv_steps(sched::CudaGemvParams{16, 64, 1, 8, 16})});
        s.steps = simple.steps;
        out.push_back(s);
    }
    return out;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 3) {
        std::cerr << "usage: tessel_gpu_aot OUT_DIR AR\n";
        return 2;
    }
    const fs::path out = argv[1];
    fs::create_directories(out);
    // A portable x86-64 host (the GPU machine's CPU may lack this one's AVX-512) plus CUDA.
    const Halide::Target host_cuda("x86-64-linux-sse41-avx-f16c-fma-avx2-cuda-cuda_capability_86");
    const Halide::Target target = host_cuda.with_feature(Halide::Target::NoRuntime);
    std::vector<std::string> objects;
    std::ofstream reg(out / "gpu_kernels.cpp");
    std::string decls, table;
    auto compile = [&](const sched::ScheduleSpec &s) {
        // Strict tanh: the formula as written (the benchmark's epilogue kernel uses tanhf too).
        const GeluLayer layer(GeluForm::Tanh, dsl::NumericMode::Strict, s, target, KernelBackend::AheadOfTime);
        const auto &args = layer.kernel().arguments();
        if (args.size() != 4 || args[0].name != "x" || args[1].name != "w" || args[2].name != "bias" || args[3].name != "y")
            throw std::logic_error("the GELU layer's kernel arguments are not (x, w, bias, y)");
        const std::string base = "gelu_" + s.name;
        layer.kernel().write_files(out, base, {AotOutput::Object});
        for (size_t v = 0; v <= s.variants.size(); v++) {
            const bool fallback = v == s.variants.size();
            const std::string fn = fallback ? base : base + "_v" + std::to_string(v + 1);
            objects.push_back((out / (fn + ".o")).string());
            decls += "extern \"C\" int " + fn + "(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);\n";
            table += "    {\"" + s.name + "\", " + std::to_string(v) + ", \"" +
                     (fallback ? std::string("fallback") : guard_expr(s.variants[v].guards)) +
                     "\", [](long M, long K, long N) { (void)M; (void)K; (void)N; return " +
                     (fallback ? std::string("true") : guard_expr(s.variants[v].guards)) + "; }, " + fn + "},\n";
            std::cout << "compiled " << fn << "\n";
        }
    };
    for (const auto &e : sched::schedule_library()) {
        if (e.group != dsl::GroupKind::MatmulEpilogue) continue;
        if (e.device == sched::Device::Cuda) compile(e.build(target));
    }
    // Tile-size candidates next to the library's choice, so one run on the GPU ranks them.
    for (const auto &c : candidate_schedules(target)) compile(c);
    Halide::compile_standalone_runtime((out / "halide_runtime.o").string(), host_cuda);
    objects.push_back((out / "halide_runtime.o").string());
    reg << "// Generated by tessel_gpu_aot: the CUDA library schedules compiled ahead of time.\n"
        << "#include \"bench/gpu/GpuKernels.h\"\n\n"
        << decls << "\nconst std::vector<GpuKernelVariant> &gpu_kernel_variants() {\n"
        << "    static const std::vector<GpuKernelVariant> v = {\n"
        << table << "    };\n    return v;\n}\n";
    std::vector<std::string> ar = {argv[2], "rcs", (out / "libtessel_gpu_kernels.a").string()};
    for (const auto &o : objects) ar.push_back(o);
    fs::remove(out / "libtessel_gpu_kernels.a");
    const SubprocessResult archived = run_subprocess(ar);
    if (!archived.ok()) std::cerr << format_command(ar) << " failed:\n" << archived.output;
    return archived.ok() ? 0 : 1;
}
