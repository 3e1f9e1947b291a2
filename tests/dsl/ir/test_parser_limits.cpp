// The front end's limits (docs/TSL.md, "Limits"): nesting depth, integer literals, checked
// shape arithmetic, the interpreter's element limit, graphs without outputs, and diagnostics
// that quote hostile bytes. Text in, error text out.
#include <doctest/doctest.h>

#include <string>

#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

using namespace tessel::dsl;

namespace {

/** The message parse(text) throws, "" if it parses. */
std::string parse_error(const std::string &text) {
    try {
        parse(text, "t.tsl");
    } catch (const UserError &e) {
        return e.what();
    }
    return "";
}

std::string nested(const std::string &open, const std::string &close, int depth, const std::string &core) {
    std::string s;
    for (int i = 0; i < depth; i++) s += open;
    s += core;
    for (int i = 0; i < depth; i++) s += close;
    return s;
}

std::string graph_with(const std::string &expr) {
    return "graph g {\n  %x = input : f32[4]\n  %y = " + expr + "\n  output %y\n}\n";
}

}  // namespace

TEST_CASE("nesting deeper than kMaxNestingDepth is an error at the level that crosses it, not a crash") {
    // Well past the depth that used to overflow the stack (about 5,000).
    for (const auto &[open, close] : {std::pair<std::string, std::string>{"relu(", ")"}, {"(", ")"}, {"-", ""}}) {
        CAPTURE(open);
        const std::string e = parse_error(graph_with(nested(open, close, 100000, "%x")));
        CHECK_MESSAGE(e.find("t.tsl:3:") == 0, e);
        CHECK_MESSAGE(e.find("expression nested too deeply (more than 256 levels") != std::string::npos, e);
        // At the limit it parses.
        CHECK(parse_error(graph_with(nested(open, close, kMaxNestingDepth - 1, "relu(%x)"))) == "");
    }
    const std::string e = parse_error(graph_with(nested("relu(", ")", 300, "%x")));
    CHECK_MESSAGE(e.find("t.tsl:3:" + std::to_string(8 + 5 * kMaxNestingDepth)) == 0, e);
}

TEST_CASE("integer literals are read as integers: exact, or refused with their text") {
    struct Case {
        const char *text, *message;
    } cases[] = {
        {"graph g {\n  %x = input : f32[99999999999999999999]\n  output %x\n}\n",
         "t.tsl:2:20: error: extent 99999999999999999999 is too large (at most 2^62 = 4611686018427387904)"},
        {"graph g {\n  %x = input : f32[4611686018427387905]\n  output %x\n}\n", "extent 4611686018427387905 is too large"},
        // Operands within the limit whose inferred result is past it (fuzz_parse: the parser built
        // a graph the verifier then refused, tests/fuzz/reproducers/tsl/result_past_2_62.tsl).
        {"graph g {\n  %x = input : f32[490007199254740993, 8]\n  %w = input : f32[8, 16]\n"
         "  %y = matmul(%x, %w)\n  output %y\n}\n",
         "t.tsl:4:8: error: matmul: f32[490007199254740993, 16] has more than 2^62 elements"},
        {"graph g {\n  %x = input : f32[0]\n  output %x\n}\n", "extent 0 is not positive"},
        {"graph g {\n  %x = input : f32[-3]\n  output %x\n}\n", "t.tsl:2:20: error: extent -3 is not positive"},
        {"graph g {\n  %n = 9007199254740993\n  output %n\n}\n",
         "t.tsl:2:8: error: integer literal 9007199254740993 is out of range for i64 (integer constants are exact up to 2^53"},
        {"graph g {\n  %n = 99999999999999999999\n  output %n\n}\n",
         "integer literal 99999999999999999999 is out of range for i64"},
        {"graph g {\n  %n = -9223372036854775808\n  output %n\n}\n", "integer literal -9223372036854775808 is out of range"},
        // A float token with an integral value past 2^53 (it would print as an integer literal
        // the parser refuses: fuzz_parse's round trip, tests/fuzz/reproducers).
        {"graph g {\n  %n = 22222222222222222.5 : i64[]\n  output %n\n}\n",
         "t.tsl:2:8: error: literal 22222222222222222.5 is out of range for i64 (integer constants are exact up to 2^53"},
        {"graph g {\n  %n = -3e9 : i32[]\n  output %n\n}\n", "literal -3e9 is out of range for i32 (32 bits)"},
        {"graph g {\n  %n = 4294967296 : i32[]\n  output %n\n}\n",
         "integer literal 4294967296 is out of range for i32 (32 bits)"},
        {"graph g {\n  %n = constant(value=[1, 9007199254740993]) : i64[2]\n  output %n\n}\n",
         "t.tsl:2:27: error: integer value 9007199254740993 is out of range for i64"},
        {"graph g {\n  %x = input : f32[4]\n  %y = softmax(%x, axis=99999999999999999999)\n  output %y\n}\n",
         "integer 99999999999999999999 is out of range for an axis"},
        {"graph g {\n  %x = input : f32[4]\n  %s = shape_of(%x)[9223372036854775807]\n  output %s\n}\n",
         "out of range for an axis"},
    };
    for (const Case &c : cases) {
        CAPTURE(c.text);
        const std::string e = parse_error(c.text);
        CHECK_MESSAGE(e.find(c.message) != std::string::npos, e);
    }
    // 2^53 itself and an exact 2^62 extent are fine, and print back exactly.
    Graph g = parse("graph g {\n  %n = 9007199254740992\n  %x = input : f32[4611686018427387904]\n  output %n, %x\n}\n");
    CHECK(print(g).find("9007199254740992") != std::string::npos);
    CHECK(print(g).find("f32[4611686018427387904]") != std::string::npos);
}

TEST_CASE("shape arithmetic is checked: overflow is an error at its op, naming the op and operands") {
    CHECK_FALSE(eval_shape_op(Op::ShapeMul, int64_t(1) << 40, int64_t(1) << 40).has_value());
    std::string why;
    CHECK_FALSE(eval_shape_op(Op::ShapeMul, int64_t(1) << 40, int64_t(1) << 40, DType::I64, &why));
    CHECK(why == "shape.mul: 1099511627776 * 1099511627776 overflows 64 bits");
    CHECK_FALSE(eval_shape_op(Op::ShapeAdd, kMaxExactInteger, 1, DType::I64, &why));
    CHECK(why.find("shape.add: 9007199254740992 + 1 = 9007199254740993 is out of range (shape values are limited to 2^53") == 0);
    CHECK_FALSE(eval_shape_op(Op::ShapeAdd, INT32_MAX, 1, DType::I32, &why));
    CHECK(why == "shape.add: 2147483647 + 1 = 2147483648 overflows i32");
    CHECK_FALSE(eval_shape_op(Op::ShapeFloorDiv, INT64_MIN, -1, DType::I64, &why));
    CHECK(*eval_shape_op(Op::ShapeMod, 7, -1) == 0);
    CHECK(*eval_shape_op(Op::ShapeFloorDiv, -7, 2) == -4);

    // Constant folding reports it where it is written, as a static failure.
    const std::string text = "graph g {\n  %a = 4294967296\n  %b = %a * %a\n  %x = input : f32[%b]\n  output %x\n}\n";
    try {
        simplify_text(text, "m.tsl");
        FAIL("overflow was accepted");
    } catch (const UserError &e) {
        const std::string m = e.what();
        CHECK_MESSAGE(m.find("m.tsl:3:") == 0, m);
        CHECK_MESSAGE(m.find("shape.mul: 4294967296 * 4294967296") != std::string::npos, m);
    }
    // The interpreter too, when the operands are known only at run time.
    Graph g = parse(
        "graph g {\n  %x = input : f32[M]\n  %m = shape_of(%x)[0]\n  %k = %m * 4503599627370496\n"
        "  %y = input : f32[%k]\n  output %y\n}\n");
    RunOptions ro;
    ro.random_missing_inputs = true;
    CHECK_THROWS_WITH_AS(interpret(g, {}, ro),
                         doctest::Contains("shape.mul: 4 * 4503599627370496 = 18014398509481984 is out of range"), RuntimeError);
}

TEST_CASE("deep and shared shape code is evaluated without recursion, once per value") {
    // 100,000 chained additions, and a 64-level DAG that doubles the paths at every level.
    std::string chain = "graph g {\n  %s0 = 1\n";
    for (int i = 1; i <= 100000; i++) chain += "  %s" + std::to_string(i) + " = %s" + std::to_string(i - 1) + " + 1\n";
    chain += "  %x = input : f32[%s100000]\n  output %x\n}\n";
    Graph g = parse(chain);
    CHECK(constant_shape_value(g, g.find("s100000")) == 100001);
    std::string dag = "graph g {\n  %d0 = 1\n";
    for (int i = 1; i <= 52; i++)
        dag += "  %d" + std::to_string(i) + " = %d" + std::to_string(i - 1) + " + %d" + std::to_string(i - 1) + "\n";
    dag += "  %x = input : f32[%d52]\n  output %x\n}\n";
    Graph d = parse(dag);
    CHECK(constant_shape_value(d, d.find("d52")) == int64_t(1) << 52);
}

TEST_CASE("the interpreter checks sizes before it allocates: value, shape and limit named") {
    Graph g = parse("graph g {\n  %x = input : f32[1099511627776]\n  %y = relu(%x)\n  output %y\n}\n");
    RunOptions ro;
    ro.random_missing_inputs = true;
    CHECK_THROWS_WITH_AS(interpret(g, {}, ro),
                         "%x (input): f32[1099511627776] has more than 268435456 elements, the reference interpreter's "
                         "limit (2^28; docs/TSL.md, \"Limits\")",
                         RuntimeError);
    Graph s = parse("graph g {\n  %x = input : f32[M, N]\n  output %x\n}\n");
    ro.symbol_sizes = {{"M", int64_t(1) << 31}, {"N", int64_t(1) << 31}};
    CHECK_THROWS_WITH_AS(interpret(s, {}, ro), doctest::Contains("f32[2147483648, 2147483648] has more than"), RuntimeError);
    // A negative extent from shape code is refused before any vector is sized.
    Graph n = parse(
        "graph g {\n  %x = input : f32[M]\n  %m = shape_of(%x)[0]\n  %k = 2 - %m\n  %y = input : f32[%k]\n"
        "  output %y\n}\n");
    ro.symbol_sizes = {{"M", 9}};
    CHECK_THROWS_WITH_AS(interpret(n, {}, ro), doctest::Contains("dimension %k is -7 at run time; extents must be positive"),
                         RuntimeError);
}

TEST_CASE("a graph without an output is refused") {
    CHECK(parse_error("graph g {\n  %x = input : f32[4]\n}\n") ==
          "t.tsl:3:1: error: graph 'g' has no output; add 'output %value' before '}'");
    CHECK(parse_error("graph g {\n}\n") == "t.tsl:2:1: error: graph 'g' has no output; add 'output %value' before '}'");
}

TEST_CASE("empty, truncated and binary text get errors that name the place and escape raw bytes") {
    CHECK(parse_error("") == "t.tsl:1:1: error: expected 'graph', got end of file");
    CHECK(parse_error("graph g {\n  %x = input : f32[4") == "t.tsl:2:21: error: expected ',' or ']' in shape, got end of file");
    CHECK(parse_error("graph g {\n  %x = input : f32[4]\n  %y = relu(%x") ==
          "t.tsl:3:15: error: expected ',' or ')' in call to 'relu', got end of file");
    CHECK(parse_error("graph g {\n  %x = input : f32[4]\n  %y = relu(%x)\n") ==
          "t.tsl:4:1: error: expected '}' to close graph 'g'");
    CHECK(parse_error(std::string("\x7f"
                                  "ELF\x02\x01",
                                  6)) == "t.tsl:1:1: error: unexpected character '\\x7f'");
    CHECK(parse_error(std::string("graph g {\0", 10)) ==
          "t.tsl:1:10: error: unexpected character '\\x00' (is this a binary file?)");
    CHECK(parse_error("graph g {\n  \xff\xfe") == "t.tsl:2:3: error: unexpected character '\\xff' (is this a binary file?)");
    CHECK(parse_error("graph g {\n  %x = input : f32[4]\n  %y = relu(%x, \"\x1b\xff\")") ==
          "t.tsl:3:17: error: expected a value (%name), a number or an op call, got string \"\\x1b\\xff\"");
    // format_error escapes whatever else reaches the command line, keeping line breaks.
    CHECK(format_error(std::runtime_error("bad \x01 byte\nnext \xff")) == "tessel: error: bad \\x01 byte\nnext \\xff");
    CHECK(escape_bytes("tab\there") == "tab\\there");
}

TEST_CASE("a directory or missing file is named as such") {
    CHECK_THROWS_WITH_AS(parse_file("/"), "/: error: is a directory, not a graph file", ParseError);
    CHECK_THROWS_WITH_AS(parse_file("/nonexistent/x.tsl"), "/nonexistent/x.tsl: error: cannot open file", ParseError);
}
