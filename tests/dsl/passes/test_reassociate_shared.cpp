// Reassociation on chains whose nodes are shared: a value used twice by one node (%s + %s) or by
// several nodes is a leaf of every chain that reads it, never an interior node.
#include <doctest/doctest.h>

#include "../TestUtil.h"
#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/passes/Reassociate.h"

using namespace tessel::dsl;
using namespace tessel::dsl::test;

namespace {

/** Interpreter outputs of `text` before and after the fast pipeline, on the same random inputs. */
void check_pipeline_keeps_values(const std::string &text) {
    Graph g = parse(text);
    RunOptions o;
    o.random_missing_inputs = true;
    RunResult a = interpret(g, {}, o);
    SimplifyResult r = simplify_text(text, "shared.tsl");
    INFO(r.graph_text << r.log_text);
    CHECK(r.converged);
    CHECK(verify(r.graph).empty());
    RunResult b = interpret(r.graph, a.inputs, o);
    REQUIRE(a.outputs.size() == b.outputs.size());
    for (size_t k = 0; k < a.outputs.size(); ++k)
        for (size_t i = 0; i < a.outputs[k].data.size(); ++i)
            CHECK(b.outputs[k].data[i] == doctest::Approx(a.outputs[k].data[i]).epsilon(1e-6));
}

}  // namespace

TEST_CASE("reassociate: an operand used twice by one node is a leaf, not an interior node") {
    // %s has one user (%t) but two uses; taking it for an interior node collected it twice and
    // erased it twice ("value 2 is not in program order").
    for (const char *op : {"add", "mul"}) {
        CAPTURE(op);
        const std::string text = std::string(R"(graph g mode=fast {
          %x = input : f32[4]
          %y = input : f32[4]
          %s = )") + op + R"((%x, %y) : f32[4]
          %t = )" + op + R"((%s, %s) : f32[4]
          output %t
        })";
        expect_no_change(reassociate, text);  // two leaves (%s, %s): nothing to reorder
    }
}

TEST_CASE("reassociate: a shared operand inside a longer chain stays a leaf") {
    // %u = %s + %s sits inside the chain of %v; %s is a leaf (two uses), %u is interior, so the
    // chain is %z + (%s + %s), rebuilt left-leaning in id order with %s computed once.
    auto log = expect_rewrite(reassociate, R"(graph g mode=fast {
      %x = input : f32[4]
      %y = input : f32[4]
      %z = input : f32[4]
      %s = add(%x, %y) : f32[4]
      %u = add(%s, %s) : f32[4]
      %v = add(%z, %u) : f32[4]
      output %v
    })",
                              R"(graph g mode=fast {
      %x = input : f32[4]
      %y = input : f32[4]
      %z = input : f32[4]
      %s = add(%x, %y) : f32[4]
      %6 = add(%z, %s) : f32[4]
      %v = add(%6, %s) : f32[4]
      output %v
    })");
    CHECK(log.records()[0].before == "(%z + (%s + %s))");
}

TEST_CASE("reassociate: an operand read by two chain nodes is a leaf of the chain") {
    // Neighbour of the case above: %s has two users (%u, %v), which was always a leaf.
    auto log = expect_rewrite(reassociate, R"(graph g mode=fast {
      %x = input : f32[4]
      %y = input : f32[4]
      %z = input : f32[4]
      %s = add(%x, %y) : f32[4]
      %u = add(%s, %z) : f32[4]
      %v = add(%u, %s) : f32[4]
      output %v
    })",
                              R"(graph g mode=fast {
      %x = input : f32[4]
      %y = input : f32[4]
      %z = input : f32[4]
      %s = add(%x, %y) : f32[4]
      %6 = add(%z, %s) : f32[4]
      %v = add(%6, %s) : f32[4]
      output %v
    })");
    CHECK(log.records()[0].before == "((%s + %z) + %s)");
}

TEST_CASE("fast pipeline: (x + y) + (x + y) after CSE, and neighbours, keep their values") {
    // CSE turns the two copies into one node used twice; the next reassociate round must cope.
    check_pipeline_keeps_values(R"(graph g mode=fast {
      %x = input : f32[4]
      %y = input : f32[4]
      %t = (%x + %y) + (%x + %y)
      output %t
    })");
    check_pipeline_keeps_values(R"(graph g mode=fast {
      %x = input : f32[4]
      %y = input : f32[4]
      %t = (%x * %y) * (%x * %y)
      output %t
    })");
    check_pipeline_keeps_values(R"(graph g mode=fast {
      %x = input : f32[4]
      %y = input : f32[4]
      %z = input : f32[4]
      %t = ((%x + %y) + %z) + ((%x + %y) + %z) + (%x + %y)
      output %t
    })");
    check_pipeline_keeps_values(R"(graph g mode=fast {
      %x = input : f32[4]
      %y = input : f32[4]
      %s = %x + %y
      %t = (%s + 1) + (%s + 2)
      output %t, %s
    })");
}
