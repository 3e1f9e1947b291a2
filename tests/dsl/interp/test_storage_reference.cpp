// widen_storage: the f32 graph a narrow storage type's error is measured against.
#include <doctest/doctest.h>

#include "dsl/interp/Interpreter.h"
#include "dsl/interp/StorageReference.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"

using namespace tessel::dsl;

TEST_CASE("widen_storage computes casts into narrow types, and what follows them, in f32; inputs keep their types") {
    const Graph g = parse(R"TSL(graph q {
  %x = input : f32[2, 3]
  %w = weight : f32[3, 4]
  %b = input : bf16[4]
  %s = reduce_max(abs(%w), axes=[0], keepdims=true) / 127
  %q = cast(%w / %s) : i8[3, 4]
  %qt = transpose(%q)
  %wq = cast(transpose(%qt)) : f32[3, 4]
  %bf = cast(%b) : f32[4]
  %y = matmul(%x, %wq * %s) + %bf
  output %y
})TSL",
                          "q.tsl");
    CHECK(has_narrow_storage(g));
    const Graph wide = widen_storage(g);
    CHECK(!has_narrow_storage(wide));
    const std::string text = print(wide);
    CHECK(text.find(") : f32[3, 4]\n  %qt = transpose(%q") != std::string::npos);  // %q = cast(...) : f32
    CHECK(text.find("%qt = transpose(%q, perm=[1, 0]) : f32[4, 3]") != std::string::npos);
    CHECK(text.find("%b = input : bf16[4]") != std::string::npos);
    // Without the rounding the dequantized weight is w up to f32 rounding: the outputs differ
    // from the quantized graph's by the quantization error only.
    RunOptions ro;
    ro.random_missing_inputs = true;
    const RunResult narrow = interpret(g, {}, ro);
    const RunResult exact = interpret(wide, narrow.inputs, ro);
    const Graph f32 = parse(R"TSL(graph f {
  %x = input : f32[2, 3]
  %w = weight : f32[3, 4]
  %b = input : bf16[4]
  %bf = cast(%b) : f32[4]
  %y = matmul(%x, %w) + %bf
  output %y
})TSL",
                            "f.tsl");
    const RunResult plain = interpret(f32, narrow.inputs, ro);
    double worst_exact = 0, worst_narrow = 0;
    for (size_t i = 0; i < plain.outputs[0].data.size(); i++) {
        worst_exact = std::max(worst_exact, std::abs(exact.outputs[0].data[i] - plain.outputs[0].data[i]));
        worst_narrow = std::max(worst_narrow, std::abs(narrow.outputs[0].data[i] - plain.outputs[0].data[i]));
    }
    CHECK(worst_exact < 1e-5);
    CHECK(worst_narrow > 1e-4);  // the i8 rounding is visible
}
