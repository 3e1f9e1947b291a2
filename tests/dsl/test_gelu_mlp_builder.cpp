// The running example written with the C++ builder (algorithms/GeluMlp.h) is the graph the text
// form gives: same printed text before and after simplification, and the same rewrite log.
#include <doctest/doctest.h>

#include "TestUtil.h"
#include "algorithms/GeluMlp.h"
#include "dsl/Simplify.h"

#include <fstream>
#include <sstream>

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
            std::string text = std::string("graph gelu_mlp mode=") + (mode == NumericMode::Fast ? "fast" : "strict") +
                               " {\n"
                               "  %x = input : f32[M, K]\n"
                               "  %w = input : f32[K, N]\n"
                               "  %bias = input : f32[N]\n"
                               "  %y = " +
                               (tanh_form ? "gelu_tanh" : "gelu") +
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

TEST_CASE("docs/TSL.md shows the simplified running example and the rewrite log as tessel simplify prints them") {
    // Every line of the doc's two blocks after "`tessel simplify algorithms/gelu_mlp.tsl` prints"
    // must appear in the real output, in order ("..." stands for omitted lines).
    std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/docs/TSL.md");
    REQUIRE(in);
    std::stringstream doc;
    doc << in.rdbuf();
    const std::string text = doc.str();
    const size_t start = text.find("`tessel simplify algorithms/gelu_mlp.tsl` prints");
    REQUIRE(start != std::string::npos);
    std::vector<std::string> shown;
    size_t pos = start;
    for (int block = 0; block < 2; block++) {
        const size_t open = text.find("```\n", pos);
        const size_t close = text.find("```", open + 4);
        REQUIRE(open != std::string::npos);
        REQUIRE(close != std::string::npos);
        std::istringstream lines(text.substr(open + 4, close - open - 4));
        for (std::string line; std::getline(lines, line);)
            if (line != "...") shown.push_back(line);
        pos = close + 3;
    }
    const tessel::dsl::SimplifyResult r = tessel::dsl::simplify_file(std::string(TESSEL_SOURCE_DIR) + "/algorithms/gelu_mlp.tsl");
    std::istringstream actual(r.graph_text + "\n" + r.log_text);
    std::vector<std::string> printed;
    for (std::string line; std::getline(actual, line);) printed.push_back(line);
    size_t at = 0;
    for (const std::string &line : shown) {
        CAPTURE(line);
        while (at < printed.size() && printed[at] != line) at++;
        CHECK(at < printed.size());  // the doc's line is printed, after the previous one
        if (at == printed.size()) break;
        at++;
    }
}
