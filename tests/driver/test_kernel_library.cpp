// `tessel lib` (driver/KernelLibrary.h): the generated library linked into a consumer that has
// no libHalide and no Tessel, run at awkward shapes against the interpreter, with its
// dispatcher's choices and its argument and workspace errors.
#include "driver/KernelLibrary.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Parser.h"
#include "tests/TempDir.h"
#include "tests/TensorCompare.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace tessel;

namespace {

// Inputs: element i of argument a is sin(0.37 i + a) / 2, in both the consumer and the test.
const char *kConsumer = R"(#include "mlp_residual.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static halide_buffer_t make(int rank, const int *extents_outer_first, int arg, halide_dimension_t *dims) {
    halide_buffer_t b; memset(&b, 0, sizeof b);
    b.type.code = halide_type_float; b.type.bits = 32; b.type.lanes = 1;
    b.dimensions = rank; b.dim = dims;
    long n = 1;
    for (int d = 0; d < rank; d++) { dims[d].min = 0; dims[d].extent = extents_outer_first[rank - 1 - d]; dims[d].stride = (int)n; dims[d].flags = 0; n *= dims[d].extent; }
    float *p = (float *)malloc(n * sizeof(float));
    for (long i = 0; i < n; i++) p[i] = (float)(sin(0.37 * i + arg) / 2);
    b.host = (uint8_t *)p;
    return b;
}
int main(int argc, char **argv) {
    const int M = atoi(argv[1]), K = atoi(argv[2]), H = atoi(argv[3]);
    halide_dimension_t dx[2], dg[1], d1[2], d2[2], d3[2], dy[2];
    int ex[] = {M, K}, eg[] = {K}, e1[] = {K, H}, e2[] = {H, H}, e3[] = {H, K};
    halide_buffer_t x = make(2, ex, 0, dx), g = make(1, eg, 1, dg), w1 = make(2, e1, 2, d1), w2 = make(2, e2, 3, d2),
                    w3 = make(2, e3, 4, d3), y = make(2, ex, 5, dy);
    int rc = mlp_residual(&x, &g, &w1, &w2, &w3, &y, NULL, 0);
    printf("rc %d\nvariants %s\nworkspace %lld\n", rc, mlp_residual_variants(), (long long)mlp_residual_workspace_bytes(&x, &g, &w1, &w2, &w3, &y));
    FILE *f = fopen(argv[4], "wb"); fwrite(y.host, sizeof(float), (size_t)M * K, f); fclose(f);
    dg[0].extent = K + 1;  /* g no longer matches K */
    printf("bad extent rc %d: %s\n", mlp_residual(&x, &g, &w1, &w2, &w3, &y, NULL, 0), mlp_residual_error());
    dg[0].extent = K;
    printf("null rc %d: %s\n", mlp_residual(&x, NULL, &w1, &w2, &w3, &y, NULL, 0), mlp_residual_error());
    char small[64];
    printf("workspace rc %d: %s\n", mlp_residual(&x, &g, &w1, &w2, &w3, &y, small, sizeof small), mlp_residual_error());
    return 0;
}
)";

dsl::Tensor input(const std::vector<int64_t> &shape, int arg) {
    dsl::Tensor t;
    t.shape = shape;
    t.data.resize((size_t)t.numel());
    for (size_t i = 0; i < t.data.size(); i++) t.data[i] = (double)(float)(std::sin(0.37 * (double)i + arg) / 2);
    return t;
}

std::string run(const std::string &cmd) {
    std::string out;
    FILE *p = popen(cmd.c_str(), "r");
    REQUIRE(p);
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    CHECK(pclose(p) == 0);
    return out;
}

}  // namespace

TEST_CASE("tessel lib: a consumer without libHalide runs the whole graph, dispatches by guard, reports errors") {
    const tessel::testing::TempDir tmp;
    KernelLibraryOptions o;
    o.file = std::string(TESSEL_SOURCE_DIR) + "/algorithms/mlp_residual.tsl";
    o.out_dir = tmp.file("lib");
    std::ostringstream log;
    REQUIRE(write_kernel_library(o, log) == 0);
    INFO(log.str());
    std::ofstream(tmp.file("app.c")) << kConsumer;
    const std::string app = tmp.file("app");
    REQUIRE(std::system(("cc -O1 '" + tmp.file("app.c") + "' -I'" + o.out_dir + "' '" + o.out_dir +
                         "/libmlp_residual.a' -lstdc++ -lpthread -ldl -lm -o '" + app + "'").c_str()) == 0);
    CHECK(run("ldd '" + app + "' | grep -ci halide || true").find('1') == std::string::npos);

    const dsl::Graph g = dsl::parse_file(o.file);
    struct Shape {
        int M, K, H;
        const char *dispatch;  // expected in the dispatch report (cpu_blocked's guards)
    };
    for (const Shape s : {Shape{1, 37, 19, "g0_h1=variant 2 (M == 1)"}, Shape{13, 8, 5, "g0_h1=variant 3 (M <= 16)"},
                          Shape{70, 33, 48, "g0_h1=variant 4 (M >= 8 && N >= 48); g1_h2=variant 4 (M >= 8 && N >= 48); g2_y=fallback"}}) {
        CAPTURE(s.M);
        const std::string out_file = tmp.file("y_" + std::to_string(s.M) + ".bin");
        const std::string text = run("'" + app + "' " + std::to_string(s.M) + " " + std::to_string(s.K) + " " +
                                     std::to_string(s.H) + " '" + out_file + "'");
        INFO(text);
        CHECK(text.find("rc 0\n") == 0);
        CHECK(text.find(s.dispatch) != std::string::npos);
        CHECK(text.find("bad extent rc 1: argument g: extent " + std::to_string(s.K + 1) + " in axis 0 (K), but K = " +
                        std::to_string(s.K)) != std::string::npos);
        CHECK(text.find("null rc 1: argument g (f32[K]) is null") != std::string::npos);
        CHECK(text.find("workspace rc 2: the workspace holds 64 bytes") != std::string::npos);

        std::map<std::string, dsl::Tensor> in = {{"x", input({s.M, s.K}, 0)}, {"g", input({s.K}, 1)},
                                                 {"w1", input({s.K, s.H}, 2)}, {"w2", input({s.H, s.H}, 3)},
                                                 {"w3", input({s.H, s.K}, 4)}};
        const dsl::RunResult ref = dsl::interpret(g, in);
        std::ifstream f(out_file, std::ios::binary);
        std::vector<float> y((size_t)s.M * s.K);
        f.read(reinterpret_cast<char *>(y.data()), (std::streamsize)(y.size() * sizeof(float)));
        dsl::Tensor got;
        got.shape = {s.M, s.K};
        got.data.assign(y.begin(), y.end());
        CHECK(tessel::testing::max_relative_difference({got}, ref.outputs) < 1e-4);
    }
}

TEST_CASE("tessel lib: graphs it cannot hold are refused with the reason") {
    const tessel::testing::TempDir tmp;
    std::ofstream(tmp.file("noisy.tsl")) << "graph noisy {\n  %x = input : f32[4]\n  %y = exp(%x)\n  print(%y, label=\"y\")\n  output %y\n}\n";
    KernelLibraryOptions o;
    o.file = tmp.file("noisy.tsl");
    o.out_dir = tmp.file("lib");
    std::ostringstream log;
    CHECK_THROWS_WITH(write_kernel_library(o, log), doctest::Contains("runs outside kernels"));
}
