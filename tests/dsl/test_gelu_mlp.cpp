// Done-when for the graph front-end: simplifying the running example yields matmul -> add -> gelu
// over a static 4096, the dead branch is gone, the log explains each step, and the interpreter
// gives bit-identical results before and after.
#include <doctest/doctest.h>

#include "TestUtil.h"
#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"

using namespace tessel::dsl;
using namespace tessel::dsl::test;

namespace {
const std::string kFile = TESSEL_SOURCE_DIR "/algorithms/gelu_mlp.tsl";

bool log_has(const RewriteLog &log, const std::string &rule, const std::string &before_part, const std::string &why_part) {
    for (const auto &r : log.records())
        if (r.rule == rule && r.before.find(before_part) != std::string::npos && r.why.find(why_part) != std::string::npos)
            return true;
    return false;
}
}  // namespace

TEST_CASE("gelu_mlp simplifies to matmul -> add -> gelu with a static 4096") {
    SimplifyResult r = simplify_file(kFile);
    CHECK(r.converged);
    CHECK(r.graph_text == R"(graph gelu_mlp mode=strict {
  %x = input : f32[M, K]
  %w = input : f32[K, 4096]
  %bias = input : f32[4096]
  %8 = matmul(%x, %w) : f32[M, 4096]
  %9 = add(%8, %bias) : f32[M, 4096]
  %y = gelu(%9) : f32[M, 4096]
  output %y
}
)");
    const RewriteLog &log = r.log;
    // hidden = 2048 * 2 folds, and the dims that used it become static.
    CHECK(log_has(log, "fold-constant", "%hidden = shape.mul", "all operands are constants"));
    CHECK(log_has(log, "fold-dim", "%w = input : f32[K, %hidden]", "%hidden evaluates to the constant 4096"));
    // transpose(transpose(w)) -> w, with the reason.
    CHECK(log_has(log, "transpose-pair-identity", "transpose(", "compose to the identity"));
    // The two shape_of(x)[1] merge.
    CHECK(log_has(log, "cse-pure", "%k_scale = shape_of(%x, axis=1)", "pure op"));
    // The diagnostic branch is removed.
    CHECK(log_has(log, "dead-value", "%row_mean = div(", "no output"));
    CHECK(log_has(log, "dead-value", "reduce_sum(", "no output"));
    CHECK(r.log_text.find("[simplify-algebra] transpose-pair-identity") != std::string::npos);
}

TEST_CASE("gelu_mlp: interpreter results are bit-identical before and after simplification") {
    Graph before = parse_file(kFile);
    SimplifyResult r = simplify_file(kFile);
    RunOptions o;
    o.random_missing_inputs = true;
    o.symbol_sizes = {{"M", 3}, {"K", 5}};
    RunResult a = interpret(before, {}, o);
    RunResult b = interpret(r.graph, a.inputs, o);
    REQUIRE(a.outputs.size() == 1);
    CHECK(a.outputs[0].shape == std::vector<int64_t>{3, 4096});
    CHECK(bitwise_equal(a.outputs[0], b.outputs[0]));
    RunResult c = run_file(kFile, a.inputs);
    CHECK(bitwise_equal(a.outputs[0], c.outputs[0]));
}
