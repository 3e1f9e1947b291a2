// The graph's interface: output names and their order survive every pass, also when an output
// simplifies to another value (an input, another output, a CSE'd duplicate). Text in, text out,
// and the interpreter's outputs under the same names before and after.
#include <doctest/doctest.h>

#include "../TestUtil.h"
#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"

using namespace tessel::dsl;
using tessel::dsl::test::canon;

namespace {

/** The interface the interpreter reports: output names in order, as "y, b, a". */
std::string names_of(const RunResult &r) {
    std::string s;
    for (const std::string &n : r.output_names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

/** Simplify `before`; it must print as `expected`, round-trip, and run to the same named outputs. */
void expect_interface_kept(const std::string &before, const std::string &expected, const std::string &names) {
    Graph g = parse(before, "<before>");
    SimplifyResult r = simplify_graph(g);
    INFO(r.graph_text << r.log_text);
    CHECK(r.graph_text == canon(expected));
    CHECK(print(parse(r.graph_text)) == r.graph_text);
    RunOptions o;
    o.random_missing_inputs = true;
    RunResult a = interpret(g, {}, o), b = interpret(r.graph, a.inputs, o);
    CHECK(names_of(a) == names);
    CHECK(names_of(b) == names);
    REQUIRE(a.outputs.size() == b.outputs.size());
    for (size_t i = 0; i < a.outputs.size(); ++i) CHECK(bitwise_equal(a.outputs[i], b.outputs[i]));
}

}  // namespace

TEST_CASE("interface: an output that simplifies to an input keeps its name") {
    expect_interface_kept(R"(graph g {
      %x = input : f32[4, 8]
      %y = transpose(transpose(%x))
      output %y
    })",
                          R"(graph g {
      %x = input : f32[4, 8]
      output %y = %x
    })",
                          "y");
    // fast mode: x + 0 -> x.
    expect_interface_kept(R"(graph g mode=fast {
      %x = input : f32[4]
      %y = add(%x, 0)
      output %y
    })",
                          R"(graph g mode=fast {
      %x = input : f32[4]
      output %y = %x
    })",
                          "y");
    // Rewritten twice (mul-one, then the transpose pair): still named y.
    expect_interface_kept(R"(graph g {
      %x = input : f32[4, 8]
      %t = transpose(transpose(%x))
      %y = %t * 1
      output %x, %y
    })",
                          R"(graph g {
      %x = input : f32[4, 8]
      output %x, %y = %x
    })",
                          "x, y");
}

TEST_CASE("interface: an output that simplifies to another output keeps both names, in order") {
    expect_interface_kept(R"(graph g {
      %x = input : f32[4]
      %a = relu(%x)
      %b = mul(%a, 1)
      output %b, %a
    })",
                          R"(graph g {
      %x = input : f32[4]
      %a = relu(%x) : f32[4]
      output %b = %a, %a
    })",
                          "b, a");
}

TEST_CASE("interface: outputs merged by CSE keep their names") {
    expect_interface_kept(R"(graph g {
      %x = input : f32[4]
      %a = exp(%x)
      %b = exp(%x)
      %c = exp(%x)
      output %c, %a, %b
    })",
                          R"(graph g {
      %x = input : f32[4]
      %a = exp(%x) : f32[4]
      output %c = %a, %a, %b = %a
    })",
                          "c, a, b");
}

TEST_CASE("interface: a folded output takes its name over, so nothing needs binding") {
    expect_interface_kept(R"(graph g {
      %y = 2 + 3
      %c = -1.5 : f32[]
      %z = relu(%c)
      output %z, %y
    })",
                          R"(graph g {
      %y = 5 : i64[]
      %z = 0 : f32[]
      output %z, %y
    })",
                          "z, y");
}

TEST_CASE("interface: the running example keeps its output name") {
    SimplifyResult r = simplify_file(TESSEL_SOURCE_DIR "/algorithms/gelu_mlp.tsl");
    CHECK(r.graph_text.find("  output %y\n") != std::string::npos);
}

TEST_CASE("interface: output bindings parse and print back; their names are checked") {
    const char *text =
        "graph g mode=strict {\n  %x = input : f32[4]\n  %a = relu(%x) : f32[4]\n"
        "  output %first = %x, %a, %second = %a\n}\n";
    Graph g = parse(text);
    CHECK(print(g) == text);
    REQUIRE(g.outputs.size() == 3);
    CHECK(g.output_name(0) == "first");
    CHECK(g.output_name(1) == "a");
    CHECK(g.output_name(2) == "second");
    CHECK(g.outputs[2] == g.find("a"));
    // Binding a value to its own name is the plain form.
    CHECK(print(parse("graph g {\n %x = input : f32[4]\n output %x = %x\n}\n")) ==
          "graph g mode=strict {\n  %x = input : f32[4]\n  output %x\n}\n");
    CHECK_THROWS_WITH_AS(parse("graph g {\n %x = input : f32[4]\n %a = relu(%x)\n output %a = %x\n}\n", "b.tsl"),
                         "b.tsl:4:9: error: output name %a is the name of another value; write 'output %a' "
                         "or bind another name",
                         ParseError);
    CHECK_THROWS_WITH_AS(parse("graph g {\n %x = input : f32[4]\n output %y = %z\n}\n", "b.tsl"),
                         "b.tsl:3:14: error: use of undefined value %z", ParseError);
}
