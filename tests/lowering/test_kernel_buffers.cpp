/** \file
 * Generated kernels given wrong buffers. A JIT kernel (CompiledKernel::run) refuses wrong
 * extents, too-small outputs, null buffers and host pointers, other element types and other
 * dimension counts with an error naming the argument and both shapes, before anything is read or
 * written; an ahead-of-time library, linked into a small C++ program compiled here with the
 * system compiler against the Halide runtime headers, returns an error code and the message
 * through the recorder its header provides (tessel_install_error_recorder), and the program
 * survives; without the recorder Halide's default handler aborts it (why the header says how).
 */
#include "codegen/Compile.h"
#include "dsl/Simplify.h"
#include "dsl/passes/Fusion.h"
#include "lowering/CompiledKernel.h"
#include "lowering/ScheduleGroup.h"
#include "tests/TempDir.h"

#include "tests/Shell.h"

#include "support/Subprocess.h"
#include "tests/GeluMlpText.h"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

using namespace tessel;
using Halide::Runtime::Buffer;

namespace {

const char *const kGraph = tessel::testing::kGeluMlpText;

struct Planned {
    dsl::Graph g;
    dsl::FusionGroup group;
};

const Planned &planned() {
    static const Planned p = [] {
        Planned q{dsl::simplify_text(kGraph, "<test>").graph, {}};
        q.group = dsl::plan_fusion(q.g).groups.at(0);
        return q;
    }();
    return p;
}

sched::ScheduleSpec default_schedule(const Halide::Target &t) {
    return lower::default_group_schedule(lower::lower_group(planned().g, planned().group), t);
}

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

using tessel::testing::shell;
using RunResult = tessel::testing::ShellResult;

}  // namespace

TEST_CASE("JIT kernel: wrong buffers are refused with the argument and both shapes, nothing written") {
    const Halide::Target host = parse_target("host");
    const CompiledKernel k(planned().g, planned().group, default_schedule(host), host);
    REQUIRE(k.arguments().size() == 4);  // x, w, bias, y
    const int M = 4, K = 32, N = 96;
    Buffer<float> x(K, M), w(N, K), bias(N), y(N, M);
    x.fill(0.5f);
    w.fill(0.25f);
    bias.fill(0.0f);
    k.run({x.raw_buffer(), w.raw_buffer(), bias.raw_buffer(), y.raw_buffer()});  // the right call works

    Buffer<float> w_short(N, K + 1), y_small(N - 1, M), x_3d(K, M, 2), y_canary(N, M);
    Buffer<uint8_t> x_u8(K, M);
    halide_buffer_t no_host = *x.raw_buffer();
    no_host.host = nullptr;
    struct Row {
        const char *what;
        std::function<std::vector<halide_buffer_t *>()> buffers;
        std::vector<const char *> message;
    };
    const Row rows[] = {
        {"wrong K in w",
         [&] {
             return std::vector{x.raw_buffer(), w_short.raw_buffer(), bias.raw_buffer(), y_canary.raw_buffer()};
         },
         {"argument 'w' (input) has shape [33,96]", "expects [32,96]", "from 'x'"}},
        {"too-small output",
         [&] {
             return std::vector{x.raw_buffer(), w.raw_buffer(), bias.raw_buffer(), y_small.raw_buffer()};
         },
         {"argument 'y' (output) has shape [4,95]", "expects [4,96]"}},
        {"null buffer",
         [&] {
             return std::vector<halide_buffer_t *>{x.raw_buffer(), nullptr, bias.raw_buffer(), y_canary.raw_buffer()};
         },
         {"argument 'w' (input) is a null buffer"}},
        {"null host pointer",
         [&] {
             return std::vector{&no_host, w.raw_buffer(), bias.raw_buffer(), y_canary.raw_buffer()};
         },
         {"argument 'x' (input) has no memory"}},
        {"uint8 input",
         [&] {
             return std::vector{x_u8.raw_buffer(), w.raw_buffer(), bias.raw_buffer(), y_canary.raw_buffer()};
         },
         {"argument 'x' (input) has element type uint8", "float32"}},
        {"3-D input",
         [&] {
             return std::vector{x_3d.raw_buffer(), w.raw_buffer(), bias.raw_buffer(), y_canary.raw_buffer()};
         },
         {"argument 'x' (input) has 3 dimensions [2,4,32]", "expects 2"}},
        {"too few buffers",
         [&] {
             return std::vector{x.raw_buffer(), w.raw_buffer()};
         },
         {"takes 4 buffers", "got 2"}},
    };
    for (const Row &r : rows) {
        CAPTURE(r.what);
        y_canary.fill(-7.0f);
        y_small.fill(-7.0f);
        std::string message;
        try {
            k.run(r.buffers());
        } catch (const CompileError &e) {
            message = e.what();
        }
        CAPTURE(message);
        CHECK(contains(message, "kernel '" + planned().group.name + "'"));
        for (const char *m : r.message) CHECK(contains(message, m));
        // Refused before the call: the outputs are untouched.
        bool untouched = true;
        y_canary.for_each_value([&](float v) { untouched = untouched && v == -7.0f; });
        y_small.for_each_value([&](float v) { untouched = untouched && v == -7.0f; });
        CHECK(untouched);
    }
}

TEST_CASE("ahead-of-time library: a too-small buffer is an error code and a message, and the caller survives" *
          doctest::skip(find_program("c++").empty())) {
    const Halide::Target host = parse_target("host");
    const CompiledKernel k(planned().g, planned().group, default_schedule(host), host, KernelBackend::AheadOfTime);
    testing::TempDir tmp;
    const std::string base = "mlp_kernel";
    k.write_files(tmp.dir, base, {AotOutput::StaticLibrary, AotOutput::Header});
    for (const auto &v : k.variants()) CHECK(v.label == "fallback");  // the default schedule: one function
    std::ifstream header(tmp.file(base + ".h"));
    const std::string h((std::istreambuf_iterator<char>(header)), std::istreambuf_iterator<char>());
    CHECK(contains(h, "tessel_install_error_recorder"));
    CHECK(contains(h, "calls abort()"));

    // The caller: x[4,32], w[32,96], y[4,96] and a bias of 95 elements instead of 96, with a
    // canary after it. argv[1] == "recorder" installs the recorder first. (An output smaller
    // than the graph's shape is not an error for Halide: it computes that region only.)
    std::ostringstream src;
    src << "#include \"" << base << ".h\"\n#include \"HalideBuffer.h\"\n#include <cstdio>\n#include <cstring>\n"
        << "int main(int argc, char **argv) {\n"
        << "  if (argc > 1 && !std::strcmp(argv[1], \"recorder\")) tessel_install_error_recorder();\n"
        << "  Halide::Runtime::Buffer<float> x(32, 4), w(96, 32), y(96, 4);\n"
        << "  x.fill(1.0f); w.fill(1.0f); y.fill(-7.0f);\n"
        << "  float storage[95 + 1];\n"
        << "  for (float &v : storage) v = 0.0f;\n"
        << "  storage[95] = -7.0f;\n"
        << "  Halide::Runtime::Buffer<float> bias(storage, 95);\n"
        << "  const int rc = " << base << "(x, w, bias, y);\n"
        << "  std::printf(\"rc=%d\\nmessage=%s\\ncanary=%g\\nuntouched=%d\\n\", rc, tessel_last_error(), storage[95],\n"
        << "              (int)(y(0, 0) == -7.0f && y(95, 3) == -7.0f));\n"
        << "  return 0;\n}\n";
    std::ofstream(tmp.file("caller.cpp")) << src.str();
    std::string includes;
    std::stringstream dirs(TESSEL_HALIDE_INCLUDE_DIRS);
    for (std::string d; std::getline(dirs, d, ';');)
        if (!d.empty()) includes += " -I'" + d + "'";
    const std::string exe = tmp.file("caller");
    const RunResult build = shell("c++ -std=c++17 -O0 -I'" + tmp.dir.string() + "'" + includes + " '" + tmp.file("caller.cpp") +
                                  "' '" + tmp.file(base + ".a") + "' -lpthread -ldl -o '" + exe + "'");
    INFO(build.output);
    REQUIRE(build.rc == 0);

    const RunResult with = shell("'" + exe + "' recorder");
    INFO(with.output);
    CHECK(with.rc == 0);  // the process survived and returned normally
    CHECK_FALSE(contains(with.output, "rc=0\n"));
    CHECK(contains(with.output, "message=Input buffer bias"));
    CHECK(contains(with.output, "canary=-7"));    // the input's neighbour is unchanged
    CHECK(contains(with.output, "untouched=1"));  // refused before the output was written
    MESSAGE("the library's error, as the caller received it: " << with.output);

    const RunResult without = shell("'" + exe + "'");
    CHECK(without.rc == 128 + SIGABRT);  // Halide's default: abort(), which the header warns of
}
