#include <doctest/doctest.h>

#include "../TestUtil.h"
#include "dsl/PassManager.h"
#include "dsl/Pipeline.h"
#include "dsl/Simplify.h"
#include "dsl/passes/DCE.h"

using namespace tessel::dsl;
using namespace tessel::dsl::test;

namespace {
const char *kSmall = R"(graph g {
  %x = input : f32[4]
  %d = neg(%x) : f32[4]
  %y = relu(%x) : f32[4]
  output %y
}
)";
}  // namespace

TEST_CASE("pass manager verifies after every pass and names the pass that broke the IR") {
    PassManager pm("test");
    pm.add("break-types", [](Graph &g, RewriteLog *) {
        g.node(g.find("y")).type.dims[0] = Dim::fixed(5);
        return true;
    });
    Graph g = parse(kSmall);
    try {
        pm.run(g);
        FAIL("expected InternalError");
    } catch (const InternalError &e) {
        CHECK(std::string(e.what()).find("after pass break-types") != std::string::npos);
    }
}

TEST_CASE("fixed-point group stops at its bound and reports non-convergence") {
    int runs = 0;
    PassManager pm("test");
    pm.add_fixed_point("spin",
                       {{"always-changes",
                         [&](Graph &, RewriteLog *) {
                             ++runs;
                             return true;
                         }}},
                       3);
    Graph g = parse(kSmall);
    PassRunResult r = pm.run(g);
    CHECK(runs == 3);
    CHECK_FALSE(r.converged);
    CHECK(r.trace.back().find("without reaching a fixed point") != std::string::npos);
}

TEST_CASE("dump after a pass, after a group, and after all") {
    Graph g = parse(kSmall);
    PassRunOptions o;
    o.dump_after = {"dce"};
    PassRunResult r = default_pipeline().run(g, o);
    REQUIRE(r.dumps.size() == 2);  // dce runs in iterations 1 and 2 of the group
    CHECK(r.dumps[0].label == "dce (simplify, iteration 1)");
    CHECK(r.dumps[0].text == canon("graph g {\n %x = input : f32[4]\n %y = relu(%x) : f32[4]\n output %y\n}\n"));

    auto s = simplify_text(kSmall, "small.tsl", {{"simplify", "fold-constants"}, {}});
    REQUIRE(s.dumps.size() == 4);  // fold-constants: stage 1 + 2 iterations, then the group
    CHECK(s.dumps.back().label == "simplify");
    CHECK(s.dumps.front().text == canon(kSmall));

    auto all = simplify_text(kSmall, "small.tsl", {{"all"}, {}});
    CHECK(all.dumps.size() == all.trace.size());
}

TEST_CASE("unknown pass names are user errors that list the valid ones") {
    try {
        simplify_text(kSmall, "small.tsl", {{"fusion"}, {}});
        FAIL("expected UserError");
    } catch (const UserError &e) {
        CHECK(std::string(e.what()).find("unknown pass 'fusion'") != std::string::npos);
        CHECK(std::string(e.what()).find("cse") != std::string::npos);
    }
    CHECK_THROWS_AS(pipeline_from_names({"nope"}), UserError);
}

TEST_CASE("--passes runs the named passes once each, in order") {
    auto r = simplify_text(kSmall, "small.tsl", {{}, {"dce"}});
    CHECK(r.trace == std::vector<std::string>{"dce: changed"});
    CHECK(r.graph_text == canon("graph g {\n %x = input : f32[4]\n %y = relu(%x) : f32[4]\n output %y\n}\n"));
}

TEST_CASE("simplify_file reports parse errors with file:line:col") {
    try {
        simplify_text("graph g {\n  %y = relu(%nope)\n}\n", "broken.tsl");
        FAIL("expected ParseError");
    } catch (const ParseError &e) {
        CHECK(std::string(e.what()) == "broken.tsl:2:13: error: use of undefined value %nope");
    }
}
