// Weight-only int4 in groups (docs/TSL.md, "Quantized weights"): values packed two per byte by
// pack_int4, a scale per group of rows read through repeat_interleave, unpacked and scaled in
// registers by the matmul nests. The op semantics (rounding, saturation, nibble order, odd
// extents, short last groups) on the interpreter and the kernels; decode and prefill against the
// interpreter at awkward shapes (M = 1, 3, 17; K odd and not a multiple of the group; N past a
// panel) on AVX-512 and AVX2, strict and fast; special activations; all-zero and extreme groups.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>

#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/interp/StorageReference.h"
#include "dsl/ir/Builder.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "dsl/passes/FusionPolicy.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/Library.h"
#include "schedules/MatmulCpuSchedules.h"
#include "tests/TensorCompare.h"
#include "tests/lowering/BlockedProgram.h"

using namespace tessel;

namespace {

const char *const kAvx2 = "x86-64-linux-avx-avx2-f16c-fma-sse41";

std::vector<std::string> targets() {
    std::vector<std::string> t{kAvx2};
    if (parse_target("host").has_feature(Halide::Target::AVX512)) t.push_back("host");
    return t;
}

/** Weights loaded already quantized: p [KP, N] packed pairs, s [G, N] scales, groups of `group`. */
std::string loaded_graph(const std::string &mode, int group) {
    return "graph q4 mode=" + mode + R"TSL( {
  %x = input : f32[M, K]
  %p = weight : i8[KP, N]
  %s = weight : f32[G, N]
  %bias = input : f32[N]
  %q = unpack_int4(%p, axis=0) : i8[K, N]
  %wq = cast(%q) : f32[K, N]
  %sk = repeat_interleave(%s, axis=0, repeats=)TSL" +
           std::to_string(group) + R"TSL() : f32[K, N]
  %y = gelu_tanh(matmul(%x, %wq * %sk) + %bias)
  output %y
}
)TSL";
}

/** gelu(x @ quantized_int4(w, group)) with static K and N, quantized from f32. */
dsl::Graph quantized_graph(int64_t k, int64_t n, int64_t group, const std::string &mode) {
    dsl::GraphBuilder b("q4f", dsl::parse_numeric_mode(mode));
    const dsl::Value x = b.input("x", dsl::DType::F32, {"M", k});
    const dsl::Value w = b.weight("w", dsl::DType::F32, {k, n});
    b.output("y", dsl::gelu(dsl::matmul(x, dsl::quantized_int4(w, group))));
    return std::move(b).build();
}

}  // namespace

TEST_CASE("pack_int4 saturates to [-8, 7], puts element 2j in byte j's low nibble, and unpack_int4 sign-extends") {
    const std::string text = R"TSL(graph c mode=strict {
  %x = input : f32[7]
  %q = cast(%x) : i8[7]
  %p = pack_int4(%q, axis=0) : i8[4]
  %u = unpack_int4(%p, axis=0) : i8[7]
  %bytes = cast(%p) : f32[4]
  %back = cast(%u) : f32[7]
  output %bytes, %back
})TSL";
    dsl::Tensor x = dsl::Tensor::filled(dsl::DType::F32, {7}, 0);
    x.data = {-8, 7, -9.6, 100, NAN, -0.0, 2.5};  // 2.5 rounds to 2 (ties to even); -9.6 -> -10 -> -8
    const std::vector<double> bytes = {(double)(int8_t)0x78, (double)(int8_t)0x78, 0, 2};  // odd: last high nibble 0
    const std::vector<double> back = {-8, 7, -8, 7, 0, 0, 2};
    const dsl::Graph g = dsl::parse(text, "c.tsl");
    const auto want = testing::interpreted(g, {{"x", x}}, {});
    CHECK(want[0].data == bytes);
    CHECK(want[1].data == back);
    for (const std::string &t : targets()) {
        INFO("target " << t);
        auto p = testing::compile_blocked(dsl::parse(text, "c.tsl"), parse_target(t));
        const auto got = p->compiled->run({{"x", x}}, {});
        CHECK(got[0].data == bytes);
        CHECK(got[1].data == back);
    }
}

TEST_CASE("repeat_interleave reads element i / r; a short last group; text round trip") {
    const std::string text = R"TSL(graph r mode=strict {
  %s = input : f32[3, 2]
  %y = repeat_interleave(%s, axis=0, repeats=4) : f32[10, 2]
  output %y
}
)TSL";
    const dsl::Graph g = dsl::parse(text, "r.tsl");
    CHECK(dsl::print(g) == text);
    dsl::Tensor s = dsl::Tensor::filled(dsl::DType::F32, {3, 2}, 0);
    s.data = {1, 2, 3, 4, 5, 6};
    const auto y = testing::interpreted(g, {{"s", s}}, {})[0];
    CHECK(y.data == std::vector<double>{1, 2, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 3, 4, 5, 6, 5, 6});
}

TEST_CASE("int4 ops refuse wrong extents and types with both shapes") {
    auto error_of = [](const std::string &body) {
        try {
            dsl::parse("graph e {\n" + body + "}\n", "e.tsl");
        } catch (const dsl::UserError &e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    const std::string extent = error_of("  %p = input : i8[4, 3]\n  %u = unpack_int4(%p, axis=0) : i8[9, 3]\n  output %u\n");
    CHECK(extent.find("e.tsl:3:") != std::string::npos);
    CHECK(extent.find("9 elements along axis 0 make 5 groups of 2, not 4") != std::string::npos);
    CHECK(extent.find("operand i8[4, 3], result i8[9, 3]") != std::string::npos);
    const std::string dtype = error_of("  %q = input : f32[4]\n  %p = pack_int4(%q, axis=0) : i8[2]\n  output %p\n");
    CHECK(dtype.find("pack_int4 takes and gives i8") != std::string::npos);
    const std::string groups =
        error_of("  %s = input : f32[2, 3]\n  %y = repeat_interleave(%s, axis=0, repeats=32) : f32[65, 3]\n  output %y\n");
    CHECK(groups.find("65 elements along axis 0 make 3 groups of 32, not 2") != std::string::npos);
    CHECK(
        error_of("  %s = input : f32[2]\n  %y = repeat_interleave(%s, axis=0) : f32[4]\n  output %y\n").find("needs repeats=") !=
        std::string::npos);
    CHECK(error_of("  %s = input : f32[2]\n  %y = repeat_interleave(%s, axis=0, repeats=0) : f32[4]\n  output %y\n")
              .find("repeats=0 must be at least 1") != std::string::npos);
}

TEST_CASE("int4 weights loaded quantized: decode and prefill match the interpreter at awkward shapes, AVX-512 and AVX2") {
    for (const std::string &t : targets())
        for (const std::string mode : {"strict", "fast"})
            for (int group : {32, 128}) {
                const Halide::Target target = parse_target(t);
                const sched::CpuBlocking b = sched::CpuBlocking::for_target(target);
                INFO("target " << t << " mode " << mode << " group " << group);
                auto p = testing::compile_blocked(dsl::parse(loaded_graph(mode, group), "q4.tsl"), target);
                for (const auto &[m, k, n] : std::vector<std::array<int64_t, 3>>{
                         {1, 37, 19}, {1, 256, b.nr + 1}, {3, 100, 53}, {4, 2 * group + 3, 2 * b.nr + 5}, {17, 64, 3 * b.nr}}) {
                    INFO("M=" << m << " K=" << k << " N=" << n);
                    const std::map<std::string, int64_t> symbols{
                        {"M", m}, {"K", k}, {"N", n}, {"KP", (k + 1) / 2}, {"G", (k + group - 1) / group}};
                    const dsl::RunResult ref = testing::random_reference(p->g, symbols, (uint64_t)(m * 1000 + n));
                    CHECK(testing::max_relative_difference(p->compiled->run(ref.inputs, ref.symbols), ref.outputs) < 1e-4);
                }
            }
}

TEST_CASE("int4 with a zero point per group: (q - z) * s is read through the view, strict and fast") {
    const std::string text = R"TSL(graph q4z mode=MODE {
  %x = input : f32[M, K]
  %p = weight : i8[KP, N]
  %s = weight : f32[G, N]
  %z = weight : f32[G, N]
  %q = unpack_int4(%p, axis=0) : i8[K, N]
  %wq = cast(%q) : f32[K, N]
  %zk = repeat_interleave(%z, axis=0, repeats=32) : f32[K, N]
  %sk = repeat_interleave(%s, axis=0, repeats=32) : f32[K, N]
  %y = matmul(%x, (%wq - %zk) * %sk)
  output %y
}
)TSL";
    for (const std::string mode : {"strict", "fast"}) {
        INFO("mode " << mode);
        const dsl::Graph g = dsl::parse(std::string(text).replace(text.find("MODE"), 4, mode), "q4z.tsl");
        auto p = testing::compile_blocked(g, parse_target(kAvx2));
        const auto groups = testing::lowered_matmul_groups(p->g, parse_target(kAvx2));
        REQUIRE(groups.size() == 1);
        CHECK(groups[0].funcs.count("w") == 1);
        for (const auto &[m, k] : std::vector<std::array<int64_t, 2>>{{1, 37}, {3, 100}, {17, 64}}) {
            INFO("M=" << m << " K=" << k);
            const std::map<std::string, int64_t> symbols{
                {"M", m}, {"K", k}, {"N", 19}, {"KP", (k + 1) / 2}, {"G", (k + 31) / 32}};
            const dsl::RunResult ref = testing::random_reference(p->g, symbols, (uint64_t)(m * 100 + k));
            CHECK(testing::max_relative_difference(p->compiled->run(ref.inputs, ref.symbols), ref.outputs) < 1e-4);
        }
    }
}

TEST_CASE("int4 quantized from f32 weights: K not a multiple of the group, special activations, zero and extreme groups") {
    for (const std::string &t : targets()) {
        const int64_t k = 70, n = 21, group = 32;  // groups of 32, 32 and 6 rows
        INFO("target " << t);
        auto p = testing::compile_blocked(quantized_graph(k, n, group, "strict"), parse_target(t));
        for (int64_t m : {1, 3, 17}) {
            INFO("M=" << m);
            const std::map<std::string, int64_t> symbols{{"M", m}};
            std::map<std::string, dsl::Tensor> inputs = testing::random_reference(p->g, symbols, 11).inputs;
            dsl::Tensor &w = inputs.at("w"), &x = inputs.at("x");
            for (int64_t r = 0; r < group; r++) {
                w.data[r * n + 0] = 0.0;  // group 0 of column 0 all zero: scale 0, values 0
                // One element near the float range's end: scale ~ FLT_MAX / 28, the rest of the
                // group rounds to 0 (no partial sum can overflow, so any order of summing agrees).
                w.data[r * n + 1] = r == 7 ? -FLT_MAX / 4 : 1.0;
                w.data[r * n + 2] = r == 4 ? -0.0 : 1e-30;  // tiny, with a -0
            }
            w.data[(k - 1) * n + 3] = 5.0;  // the short last group's maximum
            const double specials[] = {NAN, INFINITY, -INFINITY, -0.0};
            for (size_t i = 0; i < 4; i++) x.data[(i * 5 + 3) % x.data.size()] = specials[i];
            const auto want = testing::interpreted(p->g, inputs, symbols);
            const auto got = p->compiled->run(inputs, symbols);
            INFO(dsl::to_string(got[0]) << "\nwant " << dsl::to_string(want[0]));
            CHECK(testing::max_relative_difference(got, want) < 1e-4);
        }
    }
}

TEST_CASE("int4's error against the f32 weights is reported: within half a step of each group's scale") {
    // The widened graph (dsl/interp/StorageReference.h) reads w itself: unpack(pack(q)) is q.
    const int64_t k = 64, n = 8, group = 32;
    const dsl::Graph g = quantized_graph(k, n, group, "strict");
    const dsl::Graph wide = dsl::widen_storage(g);
    const dsl::RunResult ref = testing::random_reference(g, {{"M", 1}}, 5);
    dsl::RunOptions ro;
    ro.symbol_sizes = {{"M", 1}};
    const dsl::Tensor y4 = ref.outputs[0], y32 = dsl::interpret(wide, ref.inputs, ro).outputs[0];
    // |x @ (w4 - w)| <= sum_k |x_k| * s_group / 2 with s = max |w| / 7 over the group.
    const dsl::Tensor &x = ref.inputs.at("x"), &w = ref.inputs.at("w");
    for (int64_t j = 0; j < n; j++) {
        double bound = 0;
        for (int64_t g0 = 0; g0 < k; g0 += group) {
            double top = 0, xs = 0;
            for (int64_t r = g0; r < g0 + group; r++) top = std::max(top, std::fabs(w.data[r * n + j]));
            for (int64_t r = g0; r < g0 + group; r++) xs += std::fabs(x.data[r]);
            bound += xs * top / 7 / 2;
        }
        // gelu's slope is at most 1.13.
        CHECK(std::fabs(y4.data[j] - y32.data[j]) <= 1.13 * bound * (1 + 1e-6) + 1e-12);
        CHECK(y4.data[j] != y32.data[j]);  // the quantization changed something: the bound is not vacuous
    }
}

TEST_CASE("the unpacked, scaled weight is the matmul's view w: the kernel reads the packed bytes and the group scales") {
    const dsl::Graph g = dsl::simplify_graph(dsl::parse(loaded_graph("fast", 32), "q4.tsl")).graph;
    const auto groups = testing::lowered_matmul_groups(g, parse_target("host"));
    REQUIRE(groups.size() == 1);
    CHECK(groups[0].funcs.count("w") == 1);
    int narrow = 0, scales = 0;
    for (const auto &in : groups[0].inputs) {
        narrow += in.type() == Halide::Int(8);
        scales += in.name() == "s";
    }
    CHECK(narrow == 1);
    CHECK(scales == 1);
}
