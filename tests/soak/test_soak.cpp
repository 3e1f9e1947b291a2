// Soak: a generated library (tests/soak/soak.tsl through `tessel lib`) called from two threads
// with random valid and invalid shapes and workspaces (tests/soak/soak_driver.cpp), and the JIT
// runner called with varying symbolic shapes through the kernel cache and variant dispatch.
// Every invalid call must be an error code with a message, every checked valid call right, and
// resident memory flat once warm. Calls: TESSEL_SOAK_CALLS (library, default 20000) and
// TESSEL_SOAK_JIT_CALLS (JIT, default 300); `ctest -L soak` runs 10^6 and 10^5.
#include "codegen/Compile.h"
#include "codegen/KernelCache.h"
#include "compiler/Plan.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Parser.h"
#include "lowering/CompiledGraph.h"
#include "support/Subprocess.h"
#include "tests/TempDir.h"
#include "tests/TensorCompare.h"

#include "tests/soak/ResidentMemory.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>

using namespace tessel;

namespace {

const std::string kSoakDir = std::string(TESSEL_SOURCE_DIR) + "/tests/soak";

long env_or(const char *name, long fallback) {
    const char *v = std::getenv(name);
    return v && *v ? std::atol(v) : fallback;
}

/** The value after `key ` in the driver's line. */
long count(const std::string &line, const std::string &key) {
    const size_t at = line.find(key + " ");
    REQUIRE_MESSAGE(at != std::string::npos, "no '" << key << "' in: " << line);
    return std::atol(line.c_str() + at + key.size() + 1);
}

}  // namespace

TEST_CASE("soak: a generated library, two threads, random valid and invalid shapes and workspaces") {
    const long calls = env_or("TESSEL_SOAK_CALLS", 20000);
    const tessel::testing::TempDir tmp;
    const std::string lib = tmp.file("lib"), exe = tmp.file("driver");
    const SubprocessResult built =
        run_subprocess({TESSEL_BINARY, "lib", kSoakDir + "/soak.tsl", "-o", lib, "--db", tmp.file("t.db")}, {600});
    INFO(built.output);
    REQUIRE(built.ok());
    const SubprocessResult linked = run_subprocess({"c++", "-O2", "-std=c++17", kSoakDir + "/soak_driver.cpp", "-I" + lib,
                                                    lib + "/libsoak.a", "-lgomp", "-lpthread", "-ldl", "-lm", "-o", exe},
                                                   {600});
    INFO(linked.output);
    REQUIRE(linked.ok());
    const SubprocessResult r = run_subprocess({exe, std::to_string(calls), "2", "1"}, {3600});
    INFO(r.output);
    REQUIRE(r.ok());
    MESSAGE(r.output);
    CHECK(count(r.output, "calls") == calls);
    CHECK(count(r.output, "valid") + count(r.output, "invalid") == calls);
    CHECK(count(r.output, "invalid") > calls / 5);
    CHECK(count(r.output, "refused") == count(r.output, "invalid"));  // each with its code and a message
    CHECK(count(r.output, "wrong_code") == 0);
    CHECK(count(r.output, "failed") == 0);
    CHECK(count(r.output, "checked") > 0);
    CHECK(count(r.output, "mismatched") == 0);
    // Flat once warm: no growth from half-way to 90 % of the calls.
    CHECK(count(r.output, "at_90%") <= count(r.output, "at_50%") * 101 / 100);
}

TEST_CASE("soak: the JIT runner with varying symbolic shapes, through the kernel cache and variant dispatch") {
    const long calls = env_or("TESSEL_SOAK_JIT_CALLS", 300);
    const tessel::testing::TempDir tmp;
    REQUIRE(KernelCache::activate(std::filesystem::path(tmp.file("kernels"))).empty());
    const Halide::Target target = parse_target("host");
    const dsl::Graph g = dsl::parse_file(kSoakDir + "/soak.tsl");
    const PlannedProgram p = plan(g, target, {});
    const CompiledGraph program(p.graph, p.fusion, target, p.chooser());
    std::mt19937 rng(5);
    long checked = 0, rss_half = 0, rss_late = 0;
    double worst = 0;
    for (long i = 0; i < calls; i++) {
        if (i == calls / 2) rss_half = resident_kib();
        if (i == calls - calls / 10) rss_late = resident_kib();
        const int64_t M = 1 + int64_t(rng() % 67);
        dsl::RunOptions o;
        o.random_missing_inputs = true;
        o.input_seed = uint64_t(i % 7);
        o.symbol_sizes = {{"M", M}};
        // The interpreter's inputs for this M; its outputs are the reference on a sample.
        const dsl::RunResult ref = dsl::interpret(g, {}, o);
        const std::vector<dsl::Tensor> got = program.run(ref.inputs, ref.symbols);
        if (i % 13 == 0) {
            worst = std::max(worst, testing::max_relative_difference(got, ref.outputs));
            checked++;
        }
    }
    KernelCache::activate(std::nullopt);
    MESSAGE(calls << " calls, " << checked << " checked, worst relative difference " << worst << ", resident " << rss_half
                  << " KiB half-way, " << rss_late << " KiB at 90 %");
    CHECK(checked > 0);
    CHECK(worst < 1e-4);
    CHECK(rss_late <= rss_half * 101 / 100);
}
