// The transformer block (algorithms/TransformerBlock.h) through plan and the compiled path,
// against the reference interpreter at awkward sizes: hidden 48 and 200, 3 and 5 query heads over
// one kv head, T = 1, 7 and 37; and algorithms/transformer_block.tsl is the builder's graph.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "algorithms/TransformerBlock.h"
#include "dsl/Pipeline.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "tests/TensorCompare.h"

using namespace tessel;

namespace {

/** The rotary tables of positions first, first + 1, ...; the weights are the interpreter's random
 * ones (matrices scaled by their fan-in, as a trained model's). */
std::map<std::string, dsl::Tensor> rotary_inputs(int64_t first, int64_t tokens, int64_t head_dim) {
    dsl::Tensor c = dsl::Tensor::filled(dsl::DType::F32, {tokens, head_dim}, 0), s = c;
    rotary_tables(first, tokens, head_dim, &c.data, &s.data);
    return {{"cos", c}, {"sin", s}};
}

}  // namespace

TEST_CASE("transformer block: algorithms/transformer_block.tsl and transformer_block_kv.tsl are the builder's graphs") {
    for (const bool kv : {false, true}) {
        std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/algorithms/transformer_block" + (kv ? "_kv" : "") + ".tsl");
        REQUIRE(in);
        std::stringstream text;
        text << in.rdbuf();
        CHECK(dsl::print(dsl::parse(text.str())) == dsl::print(transformer_block_graph({.kv_cache = kv})));
    }
}

TEST_CASE("transformer block: compiled plans match the interpreter at awkward sizes") {
    struct Case {
        int64_t hidden, heads, kv_heads, head_dim, ffn, tokens;
        dsl::NumericMode mode = dsl::NumericMode::Fast;
        bool bf16 = false;
    };
    for (const Case c :
         {Case{48, 3, 1, 16, 80, 7}, Case{200, 5, 1, 40, 72, 37}, Case{48, 4, 2, 12, 40, 1},
          Case{48, 3, 1, 16, 80, 7, dsl::NumericMode::Strict}, Case{48, 3, 1, 16, 80, 7, dsl::NumericMode::Fast, true}}) {
        CAPTURE(c.hidden);
        CAPTURE(c.tokens);
        CAPTURE(dsl::to_string(c.mode));
        CAPTURE(c.bf16);
        dsl::Graph g = transformer_block_graph({.hidden = c.hidden,
                                                .heads = c.heads,
                                                .kv_heads = c.kv_heads,
                                                .head_dim = c.head_dim,
                                                .ffn = c.ffn,
                                                .mode = c.mode,
                                                .bf16_weights = c.bf16});
        const std::map<std::string, int64_t> symbols{{"T", c.tokens}};
        dsl::default_pipeline().run(g);
        const dsl::FusionPlan plan = dsl::plan_fusion(g, lower::fusion_options(parse_target("host"), symbols));
        dsl::RunOptions ro;
        ro.random_missing_inputs = true;
        ro.symbol_sizes = symbols;
        const dsl::RunResult ref = dsl::interpret(g, rotary_inputs(3, c.tokens, c.head_dim), ro);
        CompiledGraph program(g, plan, parse_target("host"));
        CHECK(testing::max_relative_difference(program.run(ref.inputs, ref.symbols), ref.outputs) < 1e-5);
        // Fast mode: the grouped-query attention (k and v broadcast over each kv head's query
        // heads) is one attention group; strict mode keeps the exact-order unfused plan.
        CHECK(std::count_if(plan.groups.begin(), plan.groups.end(), [](const dsl::FusionGroup &grp) {
                  return grp.kind == dsl::GroupKind::Attention;
              }) == (c.mode == dsl::NumericMode::Fast ? 1 : 0));
    }
}
