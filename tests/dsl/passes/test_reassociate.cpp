#include <doctest/doctest.h>

#include "../TestUtil.h"
#include "dsl/Simplify.h"
#include "dsl/passes/Reassociate.h"

using namespace tessel::dsl;
using namespace tessel::dsl::test;

namespace {
const char *kChain = R"(graph g mode=%MODE% {
  %a = input : f32[4]
  %b = input : f32[4]
  %one = 1 : f32[]
  %two = 2 : f32[]
  %t1 = add(%b, %one) : f32[4]
  %t2 = add(%t1, %a) : f32[4]
  %y = add(%t2, %two) : f32[4]
  output %y
}
)";
std::string chain(const std::string &mode) {
    std::string s = kChain;
    s.replace(s.find("%MODE%"), 6, mode);
    return s;
}
}  // namespace

TEST_CASE("reassociate refuses in strict mode") {
    expect_no_change(reassociate, chain("strict"));
    // And the whole strict pipeline leaves the chain alone.
    auto r = simplify_text(chain("strict"), "chain.tsl");
    CHECK(r.graph_text == canon(chain("strict")));
}

TEST_CASE("reassociate in fast mode groups constants and orders variables by id") {
    auto log = expect_rewrite(reassociate, chain("fast"), R"(graph g mode=fast {
      %a = input : f32[4]
      %b = input : f32[4]
      %one = 1 : f32[]
      %two = 2 : f32[]
      %7 = add(%a, %b) : f32[4]
      %8 = add(%one, %two) : f32[]
      %y = add(%7, %8) : f32[4]
      output %y
    })");
    CHECK(log.records()[0].before == "(((%b + %one) + %a) + %two)");
    // Already canonical: a second run changes nothing (the pass converges).
    Graph g = parse(chain("fast"));
    reassociate(g);
    CHECK_FALSE(reassociate(g));
}

TEST_CASE("fast pipeline: reassociation exposes folding (1 + 2 -> 3) and CSE") {
    auto r = simplify_text(R"(graph g mode=fast {
      %a = input : f32[4]
      %b = input : f32[4]
      %y1 = (%a + 1) + (%b + 2)
      %y2 = (%b + %a) + 3
      output %y1, %y2
    })",
                           "f.tsl");
    CHECK(r.converged);
    CHECK(r.graph_text == canon(R"(graph g mode=fast {
      %a = input : f32[4]
      %b = input : f32[4]
      %10 = add(%a, %b) : f32[4]
      %15 = 3 : f32[]
      %y1 = add(%10, %15) : f32[4]
      output %y1, %y2 = %y1
    })"));  // y2 simplified to y1's value and keeps its name
}
