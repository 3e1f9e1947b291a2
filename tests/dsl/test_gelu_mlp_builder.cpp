// The running example written with the C++ builder (algorithms/GeluMlp.h) is the graph the text
// form gives: same printed text before and after simplification, and the same rewrite log.
#include <doctest/doctest.h>

#include "TestUtil.h"
#include "algorithms/GeluMlp.h"
#include "dsl/Simplify.h"

using namespace tessel::dsl;
using tessel::dsl::test::canon;

namespace {
const std::string kFile = TESSEL_SOURCE_DIR "/algorithms/gelu_mlp.tsl";
}  // namespace

TEST_CASE("gelu_mlp_design() prints as algorithms/gelu_mlp.tsl parses") {
    Graph built = tessel::gelu_mlp_design();
    Graph parsed = parse_file(kFile);
    CHECK(verify(built).empty());
    CHECK(print(built) == print(parsed));
}

TEST_CASE("gelu_mlp_design() simplifies exactly as the text does") {
    SimplifyResult from_text = simplify_file(kFile);
    SimplifyResult from_cpp = simplify_graph(tessel::gelu_mlp_design());
    CHECK(from_cpp.converged);
    CHECK(from_cpp.graph_text == from_text.graph_text);
    CHECK(from_cpp.log_text == from_text.log_text);
    CHECK(from_cpp.graph_text.find("%y = gelu(%9) : f32[M, 4096]") != std::string::npos);
}

TEST_CASE("gelu_mlp_layer() prints as its text parses, for both forms and modes") {
    for (bool tanh_form : {true, false}) {
        for (NumericMode mode : {NumericMode::Strict, NumericMode::Fast}) {
            std::string text = std::string("graph gelu_mlp mode=") +
                               (mode == NumericMode::Fast ? "fast" : "strict") + " {\n"
                               "  %x = input : f32[M, K]\n"
                               "  %w = input : f32[K, N]\n"
                               "  %bias = input : f32[N]\n"
                               "  %y = " + (tanh_form ? "gelu_tanh" : "gelu") +
                               "(matmul(%x, %w) + %bias)\n"
                               "  output %y\n"
                               "}\n";
            CAPTURE(text);
            Graph g = tessel::gelu_mlp_layer(tanh_form, mode);
            CHECK(g.mode == mode);
            CHECK(print(g) == canon(text));
        }
    }
}
