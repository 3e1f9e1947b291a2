// The equivalence the one path guarantees: the running example written in C++
// (algorithms/GeluMlp.h) and parsed from algorithms/gelu_mlp.tsl simplify to the same graph,
// and compiled through CompiledKernel by every CPU library schedule both compute GELU(x @ w + b)
// within float32 accumulation error of the float64 reference, on awkward shapes (M = 1, primes,
// sizes not divisible by any tile or vector width). Also: what `tessel compile` writes for the
// graph and what the benchmark and tuner run are the same kernel (same schedule, same group).
#include "algorithms/GeluMlp.h"
#include "baselines/GeluReference.h"
#include "codegen/Compile.h"
#include "driver/GeluLayer.h"
#include "dsl/Simplify.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "lowering/CompiledKernel.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/Library.h"
#include "support/Random.h"

#include <doctest/doctest.h>

#include <cmath>

#ifndef TESSEL_SOURCE_DIR
#error "TESSEL_SOURCE_DIR must point at the repository"
#endif

using namespace tessel;
using Halide::Runtime::Buffer;

namespace {

const std::string kGeluMlpFile = std::string(TESSEL_SOURCE_DIR) + "/algorithms/gelu_mlp.tsl";

/** Runs `kernel` (a gelu_mlp group: x, w, bias -> y) on seeded inputs and returns the worst
 * relative error against the float64 reference. */
double error_vs_reference(const CompiledKernel &kernel, int M, int K, int N, uint32_t seed) {
    Buffer<float> x(K, M), w(N, K), bias(N), y(N, M);
    fill_uniform(x, seed), fill_uniform(w, seed + 1), fill_uniform(bias, seed + 2);
    y.fill(NAN);  // an output element the kernel forgets stays NaN and fails
    std::vector<halide_buffer_t *> args;
    for (const auto &a : kernel.arguments()) {
        if (a.name == "x")
            args.push_back(x.raw_buffer());
        else if (a.name == "w")
            args.push_back(w.raw_buffer());
        else if (a.name == "bias")
            args.push_back(bias.raw_buffer());
        else if (a.name == "y")
            args.push_back(y.raw_buffer());
    }
    REQUIRE(args.size() == 4);
    kernel.run(args);
    const auto want = gelu_mlp_reference(x.data(), w.data(), bias.data(), M, K, N, GeluForm::Erf);
    return compare(y.data(), want.data(), want.size()).max_rel;
}

}  // namespace

TEST_CASE("the running example in C++ and in text is one graph, and every CPU schedule computes it") {
    const dsl::Graph from_cpp = gelu_mlp_design();
    const dsl::Graph from_text = dsl::parse_file(kGeluMlpFile);
    REQUIRE(dsl::print(from_cpp) == dsl::print(from_text));
    const dsl::Graph cpp = dsl::simplify_graph(from_cpp).graph;
    const dsl::Graph text = dsl::simplify_graph(from_text).graph;
    REQUIRE(dsl::print(cpp) == dsl::print(text));

    const Halide::Target host = parse_target("host");
    // hidden = 2048 * 2 fixes N; M and K are symbols: one row, primes, non-multiples of tiles.
    const int N = 4096;
    const std::pair<int, int> shapes[] = {{1, 37}, {7, 13}, {37, 101}, {9, 64}};
    int checked = 0;
    for (const auto &entry : sched::schedule_library()) {
        if (entry.device != sched::Device::Cpu || entry.group != dsl::GroupKind::MatmulEpilogue) continue;
        CAPTURE(entry.name);
        for (const dsl::Graph *g : {&cpp, &text}) {
            const dsl::FusionGroup group = gelu_layer_group(*g, host);
            const CompiledKernel kernel(*g, group, entry.build(host), host);
            uint32_t seed = 1;
            for (auto [M, K] : shapes) {
                CAPTURE(M);
                CAPTURE(K);
                // float32 accumulation over K terms of magnitude <= 1 loses about sqrt(K) ulps.
                CHECK(error_vs_reference(kernel, M, K, N, seed += 3) <= 2e-5 * std::sqrt((double)K) + 1e-6);
                checked++;
            }
        }
    }
    CHECK(checked >= 3 * 2 * 4);  // cpu_blocked, cpu_decode, cpu_tiled; two graphs; four shapes
}

TEST_CASE("the layer the benchmark times is the group tessel compile ships") {
    // tessel compile plans the parsed file for the target; the benchmark and demo plan the
    // builder's layer. With the same schedule both lower the same group structure.
    const Halide::Target host = parse_target("host");
    const GeluLayer layer(GeluForm::Erf, dsl::NumericMode::Strict, sched::library_schedule("cpu_tiled", host), host);
    const dsl::Graph text = dsl::simplify_text(
                                "graph gelu_mlp {\n  %x = input : f32[M, K]\n  %w = input : f32[K, N]\n"
                                "  %bias = input : f32[N]\n  %y = gelu(matmul(%x, %w) + %bias)\n"
                                "  output %y\n}\n",
                                "<layer>")
                                .graph;
    CHECK(dsl::print(layer.graph()) == dsl::print(text));
    const dsl::FusionGroup group = gelu_layer_group(text, host);
    CHECK(group.name == layer.group().name);
    CHECK(group.nodes.size() == layer.group().nodes.size());
    const CompiledKernel shipped(text, group, sched::library_schedule("cpu_tiled", host), host, KernelBackend::AheadOfTime);
    REQUIRE(shipped.arguments().size() == layer.kernel().arguments().size());
    for (size_t i = 0; i < shipped.arguments().size(); i++)
        CHECK(shipped.arguments()[i].name == layer.kernel().arguments()[i].name);
    CHECK(shipped.variants().size() == layer.kernel().variants().size());
}
