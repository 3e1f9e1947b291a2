// CompiledKernel, the one component every command compiles with: variants and guard dispatch,
// only_for, errors that name every buffer, ahead-of-time files per variant, and numeric mode
// `exact` (no variant that splits a reduction; ApplySchedule and the tuning space refuse them).
#include "autoscheduler/Pruning.h"
#include "autoscheduler/SearchSpace.h"
#include "codegen/Compile.h"
#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/passes/Fusion.h"
#include "lowering/CompiledGraph.h"
#include "lowering/CompiledKernel.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/Library.h"
#include "support/Random.h"
#include "tests/TempDir.h"
#include "tests/TensorCompare.h"

#include <doctest/doctest.h>

#include <thread>
#include <variant>

using namespace tessel;
using Halide::Runtime::Buffer;

namespace {

std::string gelu_text(const char *mode) {
    return std::string("graph gelu_mlp mode=") + mode +
           " {\n  %x = input : f32[M, K]\n  %w = input : f32[K, N]\n  %bias = input : f32[N]\n"
           "  %y = gelu(matmul(%x, %w) + %bias)\n  output %y\n}\n";
}

struct Planned {
    dsl::Graph g;
    dsl::FusionGroup group;
};

Planned plan(const std::string &text, const Halide::Target &t) {
    Planned p{dsl::simplify_text(text, "<test>").graph, {}};
    p.group = dsl::plan_fusion(p.g, lower::fusion_options(t)).groups.at(0);
    return p;
}

bool has_rfactor(const std::vector<sched::Directive> &steps) {
    for (const auto &d : steps)
        if (std::holds_alternative<sched::RFactor>(d)) return true;
    return false;
}

bool splits_anywhere(const sched::ScheduleSpec &s) {
    if (has_rfactor(s.steps)) return true;
    for (const auto &v : s.variants)
        if (has_rfactor(v.steps)) return true;
    return false;
}

}  // namespace

TEST_CASE("dispatch picks the variant whose guards hold; only_for refuses other shapes") {
    const Halide::Target host = parse_target("host");
    const Planned p = plan(gelu_text("strict"), host);
    const sched::ScheduleSpec blocked = sched::library_schedule("cpu_blocked", host);
    const CompiledKernel all(p.g, p.group, blocked, host);
    REQUIRE(all.variants().size() == blocked.variants.size() + 1);
    CHECK(all.pick_variant({{"M", 1}, {"K", 4096}, {"N", 4096}}) == blocked.pick_variant({{"M", 1}, {"K", 4096}, {"N", 4096}}));
    CHECK(all.pick_variant({{"M", 64}, {"K", 7}, {"N", 3}}) == blocked.variants.size());  // fallback

    const CompiledKernel one(p.g, p.group, blocked, host, KernelBackend::Jit,
                             std::map<std::string, int64_t>{{"M", 1}, {"K", 64}, {"N", 256}});
    REQUIRE(one.variants().size() == 1);
    Buffer<float> x(64, 3), w(256, 64), bias(256), y(256, 3);  // M = 3: not the M == 1 variant
    fill_uniform(x, 1), fill_uniform(w, 2), fill_uniform(bias, 3);
    std::vector<halide_buffer_t *> args{x.raw_buffer(), w.raw_buffer(), bias.raw_buffer(), y.raw_buffer()};
    CHECK_THROWS_WITH_AS(one.run(args), doctest::Contains("whose guards these buffers do not meet"), CompileError);
}

TEST_CASE("compiled on first use: each variant when a call first needs it, once across threads, same results") {
    const Halide::Target host = parse_target("host");
    const Planned p = plan(gelu_text("fast"), host);
    const sched::ScheduleSpec blocked = sched::library_schedule("cpu_blocked", host);
    const CompiledKernel eager(p.g, p.group, blocked, host);
    const CompiledKernel lazy(p.g, p.group, blocked, host, KernelBackend::JitOnFirstUse);
    REQUIRE(lazy.variants().size() == eager.variants().size());
    for (const auto &v : lazy.variants()) CHECK_FALSE(v.compiled);
    for (const auto &v : eager.variants()) CHECK(v.compiled);
    CHECK(lazy.compile_seconds() < eager.compile_seconds());

    auto run = [](const CompiledKernel &k, int M) {
        Buffer<float> x(64, M), w(96, 64), bias(96), y(96, M);
        fill_uniform(x, 1), fill_uniform(w, 2), fill_uniform(bias, 3);
        k.run({x.raw_buffer(), w.raw_buffer(), bias.raw_buffer(), y.raw_buffer()});
        return y;
    };
    auto compiled = [](const CompiledKernel &k) {
        int n = 0;
        for (const auto &v : k.variants()) n += v.compiled;
        return n;
    };
    // Two threads' first calls at M = 1: one variant compiled, once.
    std::vector<Buffer<float>> got(2);
    std::thread a([&] { got[0] = run(lazy, 1); }), b([&] { got[1] = run(lazy, 1); });
    a.join(), b.join();
    const size_t m1 = lazy.pick_variant({{"M", 1}, {"K", 64}, {"N", 96}});
    CHECK(compiled(lazy) == 1);
    CHECK(lazy.variants()[m1].compiled);
    const Buffer<float> want = run(eager, 1);
    for (const Buffer<float> &y : got)
        for (int n = 0; n < 96; n++) CHECK(y(n, 0) == want(n, 0));
    // Another shape compiles its own variant; the results match the eager kernel's bit for bit.
    const Buffer<float> y37 = run(lazy, 37), want37 = run(eager, 37);
    CHECK(compiled(lazy) == 2);
    for (int m = 0; m < 37; m += 9)
        for (int n = 0; n < 96; n += 7) CHECK(y37(n, m) == want37(n, m));
    // A schedule that does not apply still fails construction, not the first call.
    sched::ScheduleSpec bad = blocked;
    bad.steps.push_back(sched::Vectorize{{"y"}, "no_such_var"});
    CHECK_THROWS(CompiledKernel(p.g, p.group, bad, host, KernelBackend::JitOnFirstUse));
}

TEST_CASE("a failing call names the kernel, Halide's message and every buffer's shape") {
    const Halide::Target host = parse_target("host");
    const Planned p = plan(gelu_text("strict"), host);
    const CompiledKernel k(p.g, p.group, sched::library_schedule("cpu_tiled", host), host);
    Buffer<float> x(8, 4), w(16, 9), bias(16), y(16, 4);  // x is [4, 8] but w is [9, 16]
    x.fill(0), w.fill(0), bias.fill(0);
    std::vector<halide_buffer_t *> args{x.raw_buffer(), w.raw_buffer(), bias.raw_buffer(), y.raw_buffer()};
    CHECK_THROWS_WITH_AS(k.run(args), doctest::Contains("x[4,8], w[9,16], bias[16], y[4,16]"), CompileError);
    args[1] = nullptr;
    CHECK_THROWS_WITH_AS(k.run(args), doctest::Contains("argument 'w' (input) is a null buffer"), CompileError);
    CHECK_THROWS_WITH_AS(k.run({x.raw_buffer()}), doctest::Contains("takes 4 buffers"), CompileError);
}

TEST_CASE("ahead of time: one set of files per variant, the fallback under the group's name") {
    const Halide::Target host = parse_target("host");
    const Planned p = plan(gelu_text("strict"), host);
    const sched::ScheduleSpec blocked = sched::library_schedule("cpu_blocked", host);
    const CompiledKernel k(p.g, p.group, blocked, host, KernelBackend::AheadOfTime);
    const tessel::testing::TempDir dir;
    const auto files = k.write_files(dir.dir, "g", {AotOutput::Header});
    CHECK(files.size() == blocked.variants.size() + 1);
    CHECK(std::filesystem::exists(dir.dir / "g.h"));
    CHECK(std::filesystem::exists(dir.dir / "g_v1.h"));
}

TEST_CASE("numeric mode exact: no variant splits the k sum, and the result still matches") {
    const Halide::Target host = parse_target("host");
    const Planned exact = plan(gelu_text("exact"), host);
    const sched::ScheduleSpec blocked = sched::library_schedule("cpu_blocked", host);
    REQUIRE(std::any_of(blocked.variants.begin(), blocked.variants.end(),
                        [](const auto &v) { return has_rfactor(v.steps); }));  // strict keeps split-K
    const CompiledKernel k(exact.g, exact.group, blocked, host);
    for (const auto &v : k.schedule().variants) CHECK_FALSE(has_rfactor(v.steps));
    CHECK_FALSE(has_rfactor(k.schedule().steps));
    CHECK(!k.notes().empty());
    CHECK(k.notes()[0].find("numeric mode 'exact'") != std::string::npos);
    // The same graph in strict mode keeps every variant.
    const Planned strict = plan(gelu_text("strict"), host);
    CHECK(CompiledKernel(strict.g, strict.group, blocked, host).variants().size() == blocked.variants.size() + 1);

    // Decode shapes (which strict serves with split-K) are served by an in-order nest, correctly.
    const CompiledGraph program(exact.g, dsl::plan_fusion(exact.g, lower::fusion_options(host)), host,
                                [&](const dsl::FusionGroup &, const lower::LoweredGroup &) { return blocked; });
    for (auto symbols :
         std::vector<std::map<std::string, int64_t>>{{{"M", 1}, {"K", 300}, {"N", 70}}, {{"M", 9}, {"K", 65}, {"N", 129}}}) {
        dsl::RunOptions o;
        o.random_missing_inputs = true;
        o.symbol_sizes = symbols;
        const dsl::RunResult ref = dsl::interpret(exact.g, {}, o);
        CHECK(tessel::testing::max_relative_difference(program.run(ref.inputs, ref.symbols), ref.outputs) < 1e-4);
    }
}

TEST_CASE("numeric mode exact: rfactor is refused with the reason, a split-only schedule has no fallback") {
    const Halide::Target host = parse_target("host");
    const Planned exact = plan(gelu_text("exact"), host);
    // cpu_decode's fallback is the split-K decode nest itself.
    CHECK_THROWS_WITH_AS(CompiledKernel(exact.g, exact.group, sched::library_schedule("cpu_decode", host), host),
                         doctest::Contains("numeric mode 'exact' keeps every reduction in program order"), sched::ScheduleError);
    // Group-generic row reductions keep their sums in order too (no vector partial sums).
    const dsl::Graph rows = dsl::simplify_text(
                                "graph r mode=exact {\n  %x = input : f32[M, N]\n"
                                "  %s = reduce_sum(%x, axes=[1])\n  output %s\n}\n",
                                "<rows>")
                                .graph;
    const dsl::FusionGroup g = dsl::plan_fusion(rows, lower::fusion_options(host)).groups.at(0);
    const sched::ScheduleSpec cpu_rows = lower::library_schedule_for("cpu_rows", lower::lower_group(rows, g), host);
    CHECK_FALSE(has_rfactor(cpu_rows.steps));
    CHECK_NOTHROW(CompiledKernel(rows, g, cpu_rows, host));
}

TEST_CASE("numeric mode exact: the tuning space prunes the nests that split the k sum") {
    const Halide::Target host = parse_target("host");
    const autosched::TargetModel m = autosched::TargetModel::for_target(host);
    for (bool exact : {false, true}) {
        autosched::Workload w{1, 4096, 4096};
        w.ordered_reductions = exact;
        autosched::PruneReport report;
        const auto kept = autosched::prune(autosched::enumerate_space(w, m), w, m, &report);
        bool any_split = false;
        for (const auto &p : kept) any_split |= splits_anywhere(autosched::make_schedule(p, host));
        CHECK(any_split == !exact);
        const auto lib = autosched::library_point(w, host);
        REQUIRE(lib);
        CHECK((lib->nest == autosched::NestFamily::General || lib->nest == autosched::NestFamily::Gemm) == exact);
    }
}

TEST_CASE("fusion limits come from the requested target, not from the machine Tessel runs on") {
    CHECK(lower::fusion_resources(parse_target("x86-64-linux-avx-avx2-fma-f16c-sse41")).vector_registers == 16);
    CHECK(lower::fusion_resources(parse_target("x86-64-linux-avx-avx2-avx512-fma-f16c-sse41")).vector_lanes == 16);
    CHECK(lower::fusion_resources(parse_target("host-cuda")).shared_memory_bytes == 48 * 1024);
}
