// `tessel lib` (driver/KernelLibrary.h): the generated library linked into a consumer that has
// no libHalide and no Tessel, run at awkward shapes against the interpreter, with its
// dispatcher's choices and its argument and workspace errors.
#include "driver/KernelLibrary.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Parser.h"
#include "schedules/MatmulCpuSchedules.h"
#include "support/Subprocess.h"
#include "tests/Shell.h"
#include "tests/TempDir.h"
#include "tests/TensorCompare.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

using namespace tessel;

namespace {

// Inputs: element i of argument a is sin(0.37 i + a) / 2 (f32), or sin(0.37 i + a) * 127 rounded
// (i8: bytes of every value, packed int4 pairs included), in both the consumer and the test.
const char *kConsumerPrelude = R"(#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static halide_buffer_t make(int rank, const int *extents_outer_first, int arg, halide_dimension_t *dims, int i8) {
    halide_buffer_t b; memset(&b, 0, sizeof b);
    b.type.code = i8 ? halide_type_int : halide_type_float; b.type.bits = i8 ? 8 : 32; b.type.lanes = 1;
    b.dimensions = rank; b.dim = dims;
    long n = 1;
    for (int d = 0; d < rank; d++) { dims[d].min = 0; dims[d].extent = extents_outer_first[rank - 1 - d]; dims[d].stride = (int)n; dims[d].flags = 0; n *= dims[d].extent; }
    b.host = (uint8_t *)malloc(n * (i8 ? 1 : sizeof(float)));
    for (long i = 0; i < n; i++) {
        if (i8) ((signed char *)b.host)[i] = (signed char)lround(sin(0.37 * i + arg) * 127);
        else ((float *)b.host)[i] = (float)(sin(0.37 * i + arg) / 2);
    }
    return b;
}
static void save(const halide_buffer_t *b, const char *path) {
    long n = 1;
    for (int d = 0; d < b->dimensions; d++) n *= b->dim[d].extent;
    FILE *f = fopen(path, "wb"); fwrite(b->host, sizeof(float), (size_t)n, f); fclose(f);
}
)";

/** A C consumer of library `name` for graph g: argv[1..] are the symbols' sizes (sorted by name),
 * argv[last] a directory for the outputs; prints the return code and the dispatch report, then
 * calls once with the first input's innermost extent off by one, once with a null buffer and once
 * with a 64-byte workspace, printing each code and message. one_cache_buffer: an updated cache
 * (update_tail of an input) is passed the cache's own buffer, so the library updates it in place. */
std::string consumer(const dsl::Graph &g, const std::string &name, bool prepared = false, bool one_cache_buffer = false) {
    std::set<std::string> symbols;
    std::vector<std::pair<dsl::ValueId, std::string>> args;  // value, C name
    for (dsl::ValueId v : g.order()) {
        for (const auto &d : g.node(v).type.dims)
            if (d.kind == dsl::Dim::Kind::Symbol) symbols.insert(d.symbol);
        if (g.node(v).op == dsl::Op::Input) args.push_back({v, g.display_name(v) == "do" ? "do_" : g.display_name(v)});
    }
    const size_t inputs = args.size();
    for (size_t i = 0; i < g.outputs.size(); i++) args.push_back({g.outputs[i], g.output_name(i)});
    std::ostringstream c;
    c << "#include \"" << name << ".h\"\n" << kConsumerPrelude << "int main(int argc, char **argv) {\n";
    int a = 1;
    for (const auto &sym : symbols) c << "    const int " << sym << " = atoi(argv[" << a++ << "]);\n";
    c << "    const char *dir = argv[" << a << "];\n    char path[4096];\n";
    std::string call;
    for (size_t i = 0; i < args.size(); i++) {
        const auto &dims = g.node(args[i].first).type.dims;
        const std::string n = "a" + std::to_string(i);
        if (const dsl::Node &out = g.node(args[i].first); one_cache_buffer && i >= inputs && out.op == dsl::Op::UpdateTail) {
            const auto cache =
                std::find_if(args.begin(), args.begin() + (long)inputs, [&](const auto &a) { return a.first == out.inputs[0]; });
            if (cache != args.begin() + (long)inputs) {
                c << "    halide_buffer_t " << n << " = a" << (cache - args.begin()) << ";\n";
                call += "&" + n + ", ";
                continue;
            }
        }
        c << "    halide_dimension_t d" << n << "[" << std::max<size_t>(1, dims.size()) << "];\n    int e" << n << "[] = {";
        for (size_t k = 0; k < dims.size(); k++)
            c << (k ? ", " : "") << (dims[k].is_static() ? std::to_string(dims[k].size) : dims[k].symbol);
        if (dims.empty()) c << "1";
        c << "};\n    halide_buffer_t " << n << " = make(" << std::max<size_t>(1, dims.size()) << ", e" << n << ", " << i << ", d"
          << n << ", " << (g.node(args[i].first).type.dtype == dsl::DType::I8) << ");\n";
        call += "&" + n + ", ";
    }
    c << "    int rc = " << name << "(" << call << "NULL, 0);\n    printf(\"rc %d\\nvariants %s\\n\", rc, " << name
      << "_variants());\n    if (rc) printf(\"error %s\\n\", " << name << "_error());\n";
    for (size_t i = inputs; i < args.size(); i++)
        c << "    snprintf(path, sizeof path, \"%s/" << args[i].second << ".bin\", dir);\n    save(&a" << i << ", path);\n";
    if (prepared) {
        // Weights prepared once: the outputs computed again from the prepared block, after
        // zeroing them, are saved beside the whole-graph entry's; then a block too small.
        std::string weights;
        for (size_t i = 0; i < inputs; i++)
            if (g.node(args[i].first).attrs.weight) weights += "&a" + std::to_string(i) + ", ";
        c << "    const int64_t block_bytes = " << name << "_prepared_bytes(" << weights.substr(0, weights.size() - 2) << ");\n"
          << "    void *block = aligned_alloc(64, (size_t)block_bytes);\n"
          << "    printf(\"prepare rc %d\\n\", " << name << "_prepare(" << weights << "block, block_bytes));\n";
        for (size_t i = inputs; i < args.size(); i++) {
            c << "    { long n = 1; for (int d = 0; d < a" << i << ".dimensions; d++) n *= a" << i << ".dim[d].extent; memset(a"
              << i << ".host, 0, n * sizeof(float)); }\n";
        }
        c << "    printf(\"run_prepared rc %d\\n\", " << name << "_run_prepared(" << call << "block, NULL, 0));\n";
        for (size_t i = inputs; i < args.size(); i++)
            c << "    snprintf(path, sizeof path, \"%s/" << args[i].second << ".prepared.bin\", dir);\n    save(&a" << i
              << ", path);\n";
        c << "    printf(\"small block rc %d: %s\\n\", " << name << "_prepare(" << weights << "block, 64), " << name
          << "_error());\n";
    }
    c << "    da0[0].extent += 1;\n    printf(\"bad extent rc %d: %s\\n\", " << name << "(" << call << "NULL, 0), " << name
      << "_error());\n"
      << "    da0[0].extent -= 1;\n";
    std::string with_null = call;
    with_null.replace(with_null.find("&a0"), 3, "NULL");
    c << "    printf(\"null rc %d: %s\\n\", " << name << "(" << with_null << "NULL, 0), " << name << "_error());\n"
      << "    char small[64];\n    printf(\"workspace rc %d: %s\\n\", " << name << "(" << call << "small, sizeof small), " << name
      << "_error());\n    return 0;\n}\n";
    return c.str();
}

dsl::Tensor input(const std::vector<int64_t> &shape, int arg, dsl::DType dtype) {
    dsl::Tensor t;
    t.dtype = dtype;
    t.shape = shape;
    t.data.resize((size_t)t.numel());
    for (size_t i = 0; i < t.data.size(); i++) {
        const double s = std::sin(0.37 * (double)i + arg);
        t.data[i] = dtype == dsl::DType::I8 ? (double)(signed char)std::lround(s * 127) : (double)(float)(s / 2);
    }
    return t;
}

/** Output of `cmd`, which must succeed. */
std::string run(const std::string &cmd) {
    const tessel::testing::ShellResult r = tessel::testing::shell(cmd);
    CHECK(r.rc == 0);
    return r.output;
}

struct BuiltLibrary {
    dsl::Graph graph;
    std::string app;
    std::string log;
};

/** Builds the library of `graph` for `target` and its consumer (<tmp>/<graph>.tsl if the test
 * wrote one, else algorithms/<graph>.tsl);
 * `options` may change the library's options (a profile, budgets). */
BuiltLibrary build_library(const tessel::testing::TempDir &tmp, const std::string &graph, const std::string &target = "host",
                           const std::function<void(KernelLibraryOptions &)> &options = {}, bool prepared = false,
                           bool one_cache_buffer = false) {
    KernelLibraryOptions o;
    o.target = target;
    if (options) options(o);
    o.file = std::string(TESSEL_SOURCE_DIR) + "/algorithms/" + graph + ".tsl";
    if (std::filesystem::exists(tmp.file(graph + ".tsl"))) o.file = tmp.file(graph + ".tsl");  // the test's own graph
    o.out_dir = tmp.file(graph);
    std::ostringstream log;
    REQUIRE(write_kernel_library(o, log) == 0);
    BuiltLibrary b{dsl::parse_file(o.file), tmp.file(graph + "_app"), log.str()};
    std::ofstream(tmp.file(graph + ".c")) << consumer(b.graph, b.graph.name, prepared, one_cache_buffer);
    const SubprocessResult linked =
        run_subprocess({"cc", "-O1", tmp.file(graph + ".c"), "-I" + o.out_dir, o.out_dir + "/lib" + b.graph.name + ".a", "-lgomp",
                        "-lpthread", "-ldl", "-lm", "-o", b.app});
    REQUIRE_MESSAGE(linked.ok(), linked.output);
    CHECK(run("ldd '" + b.app + "' | grep -ci halide || true").find('1') == std::string::npos);
    // Parallel loops on OpenMP, as in the JIT: the entry hands Halide its own do_par_for.
    CHECK(run("nm '" + o.out_dir + "/lib" + b.graph.name + ".a' | grep -c ' U GOMP_parallel' || true").find('0') != 0);
    CHECK(run("nm '" + o.out_dir + "/lib" + b.graph.name + ".a' | grep -c ' U halide_set_custom_do_par_for' || true").find('0') !=
          0);
    return b;
}

/** Runs the consumer at `sizes` (by symbol; TESSEL_LIB_ISA=isa when given), checks every output
 * against the interpreter and returns its report. */
std::string run_checked(const tessel::testing::TempDir &tmp, const BuiltLibrary &b, const std::map<std::string, int64_t> &sizes,
                        const std::string &isa = "") {
    static int runs = 0;
    const dsl::Graph &g = b.graph;
    std::string argv;
    for (const auto &[sym, n] : sizes) argv += " " + std::to_string(n);
    const std::string out_dir = tmp.file("out" + std::to_string(runs++));
    std::filesystem::create_directories(out_dir);
    const std::string text =
        run((isa.empty() ? "" : "TESSEL_LIB_ISA=" + isa + " ") + "'" + b.app + "'" + argv + " '" + out_dir + "'");
    INFO(b.log << text);
    CHECK(text.find("rc 0\n") == 0);
    std::map<std::string, dsl::Tensor> in;
    int a = 0;
    for (dsl::ValueId v : g.order())
        if (g.node(v).op == dsl::Op::Input) {
            std::vector<int64_t> shape;
            for (const auto &d : g.node(v).type.dims) shape.push_back(d.is_static() ? d.size : sizes.at(d.symbol));
            in[g.display_name(v)] = input(shape, a++, g.node(v).type.dtype);
        }
    const dsl::RunResult ref = dsl::interpret(g, in);
    // The whole-graph entry's outputs, and the prepared entry's where the consumer calls it.
    for (const std::string suffix : {".bin", ".prepared.bin"}) {
        if (suffix != ".bin" && text.find("run_prepared rc") == std::string::npos) continue;
        std::vector<dsl::Tensor> got;
        for (size_t i = 0; i < g.outputs.size(); i++) {
            std::ifstream f(out_dir + "/" + g.output_name(i) + suffix, std::ios::binary);
            dsl::Tensor t;
            t.shape = ref.outputs[i].shape;
            std::vector<float> y((size_t)t.numel());
            f.read(reinterpret_cast<char *>(y.data()), (std::streamsize)(y.size() * sizeof(float)));
            t.data.assign(y.begin(), y.end());
            got.push_back(std::move(t));
        }
        INFO(suffix);
        CHECK(tessel::testing::max_relative_difference(got, ref.outputs) < 1e-4);
    }
    return text;
}

}  // namespace

TEST_CASE("tessel lib: a consumer without libHalide runs the whole graph, dispatches by guard, reports errors") {
    const tessel::testing::TempDir tmp;
    const BuiltLibrary lib = build_library(tmp, "mlp_residual");
    const std::string m1 = run_checked(tmp, lib, {{"H", 19}, {"K", 37}, {"M", 1}});
    const std::string m13 = run_checked(tmp, lib, {{"H", 5}, {"K", 8}, {"M", 13}});
    const std::string m70 = run_checked(tmp, lib, {{"H", 48}, {"K", 33}, {"M", 70}});
    CHECK(m1.find("g0_h1=variant 2 (M == 1)") != std::string::npos);
    CHECK(m13.find("g0_h1=variant 3 (M <= 16)") != std::string::npos);
    // The gemm variant's guard is the host's register block (AVX2 4 x 24, AVX-512 8 x 48); g2_y
    // (N = K = 33) takes it where 33 columns hold a block, else the fallback.
    const sched::CpuBlocking b = sched::CpuBlocking::for_target(Halide::get_host_target());
    const std::string gemm = "variant 4 (M >= " + std::to_string(b.mr) + " && N >= " + std::to_string(b.nr) + ")";
    CHECK(m70.find("g0_h1=" + gemm) != std::string::npos);
    CHECK(m70.find(33 >= b.nr ? "g2_y=" + gemm : std::string("g2_y=fallback")) != std::string::npos);
    // x's K axis made 9: x binds K first, so g (K = 8) disagrees.
    CHECK(m13.find("bad extent rc 1: argument g: extent 8 in axis 0 (K), but K = 9 from an earlier argument") !=
          std::string::npos);
    CHECK(m13.find("null rc 1: argument x (f32[M, K]) is null") != std::string::npos);
    CHECK(m13.find("workspace rc 2: the workspace holds 64 bytes") != std::string::npos);

    // A recorded profile: the consumer makes one good call per run (its other calls fail checks).
    const std::string profile = tmp.file("calls.profile");
    std::filesystem::create_directories(tmp.file("o1"));
    run("TESSEL_LIB_PROFILE='" + profile + "' '" + lib.app + "' 19 37 1 '" + tmp.file("o1") + "' > /dev/null");
    std::ifstream in(profile);
    std::stringstream text;
    text << in.rdbuf();
    INFO(text.str());
    CHECK(text.str().find("H=19 K=37 M=1 calls=") != std::string::npos);
}

TEST_CASE("tessel lib: attention forward and backward, eight groups in one library, at S = 1 and a prime") {
    const tessel::testing::TempDir tmp;
    const BuiltLibrary lib = build_library(tmp, "attention_fwd_bwd");
    run_checked(tmp, lib, {{"S", 1}});
    const std::string s37 = run_checked(tmp, lib, {{"S", 37}});
    CHECK(s37.find("g7_dk=") != std::string::npos);
    CHECK(s37.find("argument q: extent 65 in axis 1, the graph declares f32[S, 64]") != std::string::npos);
}

TEST_CASE("tessel lib: the block over a KV cache, prefill and decode, caches updated in place or copied") {
    const tessel::testing::TempDir tmp;
    for (bool one_buffer : {true, false}) {
        CAPTURE(one_buffer);
        const BuiltLibrary lib = build_library(tmp, "transformer_block_kv", "host", {}, false, one_buffer);
        // Prefill (S = T), and decode steps of 1 and 3 tokens after 39 and 1 past positions.
        for (const auto &[s, t] : {std::pair<int64_t, int64_t>{7, 7}, {40, 1}, {4, 3}}) {
            const std::string text = run_checked(tmp, lib, {{"S", s}, {"T", t}});
            CHECK(text.find("g4_v_cache_out=") != std::string::npos);
        }
    }
    // A graph that reads the old cache after writing it: one buffer for both is refused.
    std::ofstream(tmp.file("stale.tsl")) << R"(graph stale {
  %cache = input : f32[S, 4]
  %x = input : f32[T, 4]
  %u = update_tail(%cache, %x, axis=0)
  %z = reduce_sum(%u, axes=[0], keepdims=true)
  %old = reduce_sum(%cache * %z, axes=[0])
  output %u, %old
})";
    const BuiltLibrary stale = build_library(tmp, "stale", "host", {}, false, true);
    std::filesystem::create_directories(tmp.file("stale_out"));
    const std::string text = run("'" + stale.app + "' 9 2 '" + tmp.file("stale_out") + "'");
    CHECK(text.find("rc 1\n") == 0);
    INFO(text);
    CHECK(text.find("error kernel g0_u: the cache and the updated cache are one buffer, but %cache (or a view of its "
                    "storage) is read again at step 1, after this group overwrites it\n") != std::string::npos);
    const SubprocessResult header = run_subprocess({"cat", tmp.file("stale") + "/stale.h"});
    CHECK(header.output.find("u : f32[S, 4]  (cache with its last positions written; a separate buffer)") != std::string::npos);
}

TEST_CASE("tessel lib: x86-multi dispatches by the CPU's features; each target's kernels agree with the interpreter") {
    const tessel::testing::TempDir tmp;
    const BuiltLibrary lib = build_library(tmp, "mlp_residual", "x86-multi");
    const std::map<std::string, int64_t> sizes = {{"H", 23}, {"K", 17}, {"M", 5}};
    const std::string best = run_checked(tmp, lib, sizes);
    CHECK((best.find("[avx512]") != std::string::npos || best.find("[avx2]") != std::string::npos ||
           best.find("[x86_64]") != std::string::npos));
    CHECK(run_checked(tmp, lib, sizes, "x86_64").find("[x86_64]") != std::string::npos);
    if (best.find("[avx512]") != std::string::npos || best.find("[avx2]") != std::string::npos)
        CHECK(run_checked(tmp, lib, sizes, "avx2").find("[avx2]") != std::string::npos);
}

TEST_CASE(
    "tessel lib: weights prepared once (transposed, bf16, int8, int4, two layers), and the whole-graph entry, at awkward "
    "shapes") {
    const tessel::testing::TempDir tmp;
    // mlp_nk: two prepared transposes and a per-call intermediate between its two matmuls.
    // decode_int4: static K and N (K = 200, a short last group); only M varies.
    for (const char *graph : {"linear_nk", "decode_bf16", "decode_int8", "decode_int4", "mlp_nk"}) {
        const BuiltLibrary lib = build_library(tmp, graph, "host", {}, /*prepared=*/true);
        for (auto sizes :
             std::vector<std::map<std::string, int64_t>>{{{"K", 37}, {"M", 1}, {"N", 19}}, {{"K", 64}, {"M", 13}, {"N", 53}}}) {
            if (std::string(graph) == "mlp_nk") sizes["H"] = sizes["N"] + 4;
            if (std::string(graph) == "decode_int4") sizes = {{"M", sizes["M"]}};
            const std::string text = run_checked(tmp, lib, sizes);
            INFO(graph << "\n" << text);
            CHECK(text.find("prepare rc 0\n") != std::string::npos);
            CHECK(text.find("run_prepared rc 0\n") != std::string::npos);
            CHECK(text.find("small block rc 2: the prepared block at") != std::string::npos);
            CHECK(text.find("holds 64 bytes; these weights need") != std::string::npos);
        }
    }
    // A weight stored in panels needs its caller's data converted: JIT only, with the reason.
    KernelLibraryOptions o;
    o.file = std::string(TESSEL_SOURCE_DIR) + "/algorithms/decode_packed.tsl";
    o.out_dir = tmp.file("packed");
    std::ostringstream log;
    CHECK_THROWS_WITH(write_kernel_library(o, log), doctest::Contains("buffers are f32 or i8 row-major"));
}

TEST_CASE("tessel lib: weights loaded already quantized (i8 per column, int4 pairs in groups) are i8 arguments") {
    const tessel::testing::TempDir tmp;
    // int8 with a scale per column, K and N symbolic; int4 pairs in groups of 32 along a static
    // K = 200 (a short last group), read in place by every call.
    std::ofstream(tmp.file("loaded_int8.tsl")) << R"(graph loaded_int8 mode=fast {
  %x = input : f32[M, K]
  %q = weight : i8[K, N]
  %s = weight : f32[1, N]
  %wide = cast(%q) : f32[K, N]
  %y = matmul(%x, %wide * %s)
  output %y
}
)";
    std::ofstream(tmp.file("loaded_int4.tsl")) << R"(graph loaded_int4 {
  %x = input : f32[M, 200]
  %p = weight : i8[100, 72]
  %s = weight : f32[7, 72]
  %q = unpack_int4(%p, axis=0) : i8[200, 72]
  %wide = cast(%q) : f32[200, 72]
  %rows = repeat_interleave(%s, axis=0, repeats=32) : f32[200, 72]
  %y = matmul(%x, %wide * %rows)
  output %y
}
)";
    const BuiltLibrary int8 = build_library(tmp, "loaded_int8");
    std::stringstream header;
    header << std::ifstream(tmp.file("loaded_int8/loaded_int8.h")).rdbuf();
    CHECK(header.str().find(" q : i8[K, N]\n") != std::string::npos);
    for (auto sizes :
         std::vector<std::map<std::string, int64_t>>{{{"K", 37}, {"M", 1}, {"N", 19}}, {{"K", 64}, {"M", 13}, {"N", 53}}})
        run_checked(tmp, int8, sizes);
    const BuiltLibrary int4 = build_library(tmp, "loaded_int4");
    for (int64_t m : {1, 3, 17}) run_checked(tmp, int4, {{"M", m}});
    // An f32 buffer where the graph declares i8 is refused with both types.
    std::ofstream(tmp.file("wrong_type.c")) << "#include \"loaded_int8.h\"\n"
                                            << kConsumerPrelude << R"(int main(void) {
    halide_dimension_t dx[2], dq[2], ds[2], dy[2];
    int ex[] = {2, 4}, eq[] = {4, 3}, es[] = {1, 3}, ey[] = {2, 3};
    halide_buffer_t x = make(2, ex, 0, dx, 0), q = make(2, eq, 1, dq, 0), s = make(2, es, 2, ds, 0), y = make(2, ey, 3, dy, 0);
    printf("rc %d: %s\n", loaded_int8(&x, &q, &s, &y, NULL, 0), loaded_int8_error());
    return 0;
}
)";
    const SubprocessResult linked = run_subprocess({"cc", "-O1", tmp.file("wrong_type.c"), "-I" + tmp.file("loaded_int8"),
                                                    tmp.file("loaded_int8/libloaded_int8.a"), "-lgomp", "-lpthread", "-ldl",
                                                    "-lm", "-o", tmp.file("wrong_type")});
    REQUIRE_MESSAGE(linked.ok(), linked.output);
    CHECK(run("'" + tmp.file("wrong_type") + "'") == "rc 1: argument q is not i8 (i8[K, N])\n");
}

TEST_CASE("tessel lib: the same plan as the JIT, a layout conversion included") {
    // chain_convert's softmax reads the matmul's output down its columns: the plan (compiler/Plan.h)
    // inserts a copy stored k-major, which the library describes in its workspace.
    const tessel::testing::TempDir tmp;
    const BuiltLibrary lib = build_library(tmp, "chain_convert");
    CHECK(lib.log.find("inserted %y.axis0_inner") != std::string::npos);
    run_checked(tmp, lib, {{"K", 37}, {"M", 13}, {"N", 19}});
    run_checked(tmp, lib, {{"K", 5}, {"M", 1}, {"N", 8}});
}

TEST_CASE("tessel lib: graphs it cannot hold are refused with the reason") {
    const tessel::testing::TempDir tmp;
    std::ofstream(tmp.file("noisy.tsl"))
        << "graph noisy {\n  %x = input : f32[4]\n  %y = exp(%x)\n  print(%y, label=\"y\")\n  output %y\n}\n";
    KernelLibraryOptions o;
    o.file = tmp.file("noisy.tsl");
    o.out_dir = tmp.file("lib");
    std::ostringstream log;
    CHECK_THROWS_WITH(write_kernel_library(o, log), doctest::Contains("runs outside kernels"));
}

TEST_CASE("tessel lib --profile: every group's variants measured, the plan kept, the dispatcher doing what it says") {
    const tessel::testing::TempDir tmp;
    const std::string profile = tmp.file("decode.profile");
    std::ofstream(profile) << "# decode-heavy, awkward sizes\nH=19 K=37 M=1 calls=100000\nH=19 K=37 M=4 calls=20000\n"
                              "H=19 K=37 M=37 calls=300\n";
    const BuiltLibrary lib = build_library(tmp, "mlp_residual", "host", [&](KernelLibraryOptions &o) {
        o.profile_file = profile;
        o.repeats = 3;
        o.budgets.compiles_amortized_over = 1e6;  // one build serves many runs: compile time hardly counts
    });
    INFO(lib.log);
    CHECK(lib.log.find("g0_h1_v2 [M == 1]: compile ") != std::string::npos);
    CHECK(lib.log.find("specialization plan (exhaustive over 4096 subsets)") != std::string::npos);
    CHECK(lib.log.find("fallback only: expected") != std::string::npos);
    // For each profiled shape the generator states the dispatch; the library's report agrees.
    for (const int64_t M : {1, 4, 37}) {
        const std::string shape = "H=19 K=37 M=" + std::to_string(M);
        const auto at = lib.log.find("dispatch at " + shape + ":");
        REQUIRE(at != std::string::npos);
        const std::string expected = lib.log.substr(at, lib.log.find('\n', at) - at);
        const std::string report = run_checked(tmp, lib, {{"H", 19}, {"K", 37}, {"M", M}});
        std::istringstream pairs(expected.substr(expected.find(':') + 1));
        int groups = 0;
        for (std::string pair; std::getline(pairs, pair, ';');) {
            if (pair.find_first_not_of(' ') == std::string::npos) continue;
            pair = pair.substr(pair.find_first_not_of(' '));
            CHECK_MESSAGE(report.find(pair + " [") != std::string::npos, expected, " vs ", report);
            groups++;
        }
        CHECK(groups == 3);
    }
    // Outside the profile: whichever kept variant admits it, else the fallback; still correct.
    run_checked(tmp, lib, {{"H", 48}, {"K", 33}, {"M", 70}});
}

TEST_CASE("tessel lib --profile: over budget or naming symbols the graph lacks, refused with the numbers") {
    const tessel::testing::TempDir tmp;
    KernelLibraryOptions o;
    o.file = std::string(TESSEL_SOURCE_DIR) + "/algorithms/mlp_residual.tsl";
    o.out_dir = tmp.file("lib");
    o.profile_file = tmp.file("p.profile");
    o.repeats = 1;
    std::ofstream(o.profile_file) << "H=8 K=8 M=2 calls=10\n";
    o.budgets.code_bytes = 1000;
    std::ostringstream log;
    CHECK_THROWS_WITH(write_kernel_library(o, log), doctest::Contains("the fallback alone is over budget: code "));
    CHECK_THROWS_WITH(write_kernel_library(o, log), doctest::Contains(" B > budget 1000 B"));
    std::ofstream(o.profile_file) << "H=8 Q=8 M=2 calls=10\n";
    CHECK_THROWS_WITH(write_kernel_library(o, log), doctest::Contains("binds 'Q', which is not a symbol of the graph"));
    std::ofstream(o.profile_file) << "H=8 M=2 calls=10\n";
    CHECK_THROWS_WITH(write_kernel_library(o, log), doctest::Contains("does not bind the graph's symbol K"));
}
