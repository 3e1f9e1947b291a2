#include <doctest/doctest.h>

#include "../TestUtil.h"
#include "dsl/Simplify.h"
#include "dsl/ir/TypeInference.h"

using namespace tessel::dsl;
using tessel::dsl::test::canon;

namespace {

// Every op, every attribute, special float values, f16/bf16, effects and a layout tag.
const char *kAllOps = R"(graph all_ops mode=fast {
  %x = input : f32[M, 4]
  %w = input : f32[4, 4]
  %b = input : bf16[2, 3, 4]
  %h = input : f16[4]
  %b2 = input : bf16[4, 3]
  %d16 = input : f16[4]
  %c0 = 2048 : i64[]
  %c1 = 2 : i64[]
  %n = shape.mul(%c0, %c1) : i64[]
  %n1 = shape.add(%n, %c1) : i64[]
  %n2 = shape.sub(%n1, %c1) : i64[]
  %n3 = shape.floordiv(%n2, %c1) : i64[]
  %n4 = shape.mod(%n3, %c1) : i64[]
  %n5 = shape.min(%n4, %c1) : i64[]
  %n6 = shape.max(%n5, %c1) : i64[]
  %k = shape_of(%x, axis=1) : i64[]
  %mm = matmul(%x, %w) : f32[M, 4]
  %bm = matmul(%b, %b2) : bf16[2, 3, 3]
  %s = -0 : f32[]
  %nn = nan : f32[]
  %ni = -inf : f32[4]
  %d = constant(value=[1, -2.5, 0.1, 1e+20]) : f32[4]
  %e1 = add(%mm, %s) : f32[M, 4]
  %e2 = sub(%e1, %nn) : f32[M, 4]
  %e3 = mul(%e2, %ni) : f32[M, 4]
  %e4 = div(%e3, %e1) : f32[M, 4]
  %e5 = max(%e4, %e1) : f32[M, 4]
  %e6 = min(%e5, %e1) : f32[M, 4]
  %u1 = gelu(%e6) : f32[M, 4]
  %u2 = gelu_tanh(%u1) : f32[M, 4]
  %u3 = tanh(%u2) : f32[M, 4]
  %u4 = exp(%u3) : f32[M, 4]
  %u5 = relu(%u4) : f32[M, 4]
  %u6 = neg(%u5) : f32[M, 4]
  %u7 = abs(%u6) : f32[M, 4]
  %u8 = sqrt(%u7) : f32[M, 4]
  %u9 = rsqrt(%u8, layout="[1, 0]") : f32[M, 4]
  %t = transpose(%u9, perm=[1, 0]) : f32[4, M]
  %r = reshape(%t) : f32[%k, M]
  %cs = cast(%x) : f16[M, 4]
  %hs = add(%h, %d16) : f16[4]
  %rs = reduce_sum(%x, axes=[0, 1]) : f32[]
  %rm = reduce_max(%x, axes=[1], keepdims=true) : f32[M, 1]
  %ra = reduce_mean(%x, axes=[0]) : f32[4]
  %sm = softmax(%x, axis=1) : f32[M, 4]
  %ru = random_uniform(seed=7) : f32[2, %n6]
  %rn = random_normal(seed=18446744073709551615) : bf16[3]
  %sr = state_read(var="acc") : f32[4]
  state_write(%ra, var="acc")
  print(%sr, label="acc \"before\"")
  assert(%u5, msg="relu is non-negative")
  output %r, %rm, %cs
}
)";

}  // namespace

TEST_CASE("parse/print round trip over every op") {
    std::string text = kAllOps;
    Graph g = parse(text, "all.tsl");
    CHECK(verify(g).empty());
    std::string once = print(g);
    CHECK(once == text);  // the text above is already canonical
    Graph g2 = parse(once);
    CHECK(print(g2) == once);
    CHECK(g2.mode == NumericMode::Fast);
    CHECK(g2.node(g2.find("u9")).layout == Layout::ordered({1, 0}));
    CHECK(g2.node(g2.find("rn")).attrs.seed == 18446744073709551615ull);
}

TEST_CASE("sugar: nested calls, infix, literals take the other operand's dtype") {
    Graph g = parse(R"(graph g {
      %hidden = 2048 * 2
      %x = input : f16[M, K]
      %w = input : f16[K, %hidden]
      %y = gelu(matmul(%x, transpose(transpose(%w))) + 0.5) * -1
      %k = shape_of(%x)[1] / 2
      output %y
    })");
    CHECK(print(g) == R"(graph g mode=strict {
  %0 = 2048 : i64[]
  %1 = 2 : i64[]
  %hidden = shape.mul(%0, %1) : i64[]
  %x = input : f16[M, K]
  %w = input : f16[K, %hidden]
  %5 = transpose(%w, perm=[1, 0]) : f16[%hidden, K]
  %6 = transpose(%5, perm=[1, 0]) : f16[K, %hidden]
  %7 = matmul(%x, %6) : f16[M, %hidden]
  %8 = 0.5 : f16[]
  %9 = add(%7, %8) : f16[M, %hidden]
  %10 = gelu(%9) : f16[M, %hidden]
  %11 = -1 : f16[]
  %y = mul(%10, %11) : f16[M, %hidden]
  %13 = shape_of(%x, axis=1) : i64[]
  %14 = 2 : i64[]
  %k = shape.floordiv(%13, %14) : i64[]
  output %y
}
)");
    CHECK(print(parse(print(g))) == print(g));
}

TEST_CASE("constants are stored rounded to their dtype and print back exactly") {
    Graph g = parse("graph g {\n %a = 0.1 : f32[]\n %b = 0.1 : f16[]\n %c = 0.1 : bf16[]\n output %a, %b, %c\n}\n");
    CHECK(print(g) ==
          "graph g mode=strict {\n  %a = 0.1 : f32[]\n  %b = 0.1 : f16[]\n  %c = 0.1 : bf16[]\n  output %a, %b, %c\n}\n");
    CHECK(g.node(g.find("a")).attrs.value[0] == (double)0.1f);
    CHECK(g.node(g.find("b")).attrs.value[0] == 0.0999755859375);
    CHECK(g.node(g.find("c")).attrs.value[0] == 0.10009765625);
    CHECK(canon(print(g)) == print(g));
}

TEST_CASE("a user name that looks like an id does not collide with unnamed values") {
    Graph g = parse("graph g {\n %x = input : f32[2]\n %y = relu(%x) + 1\n %2 = neg(%x)\n output %y, %2\n}\n");
    CHECK(verify(g).empty());
    CHECK(print(parse(print(g))) == print(g));
}

namespace {
struct ErrorCase {
    const char *name;
    const char *text;
    int line, col;
    const char *message;  // substring of the message
};
}  // namespace

TEST_CASE("parse errors name file, line, column and what was expected") {
    const ErrorCase cases[] = {
        {"undefined value", "graph g {\n  %y = relu(%z)\n}\n", 2, 13, "use of undefined value %z"},
        {"unknown op", "graph g {\n  %x = input : f32[4]\n  %y = frobnicate(%x)\n}\n", 3, 8, "unknown op 'frobnicate'"},
        {"input needs a type", "graph g {\n  %x = input\n}\n", 3, 1, "expected ':' and a result type after 'input(...)'"},
        {"bad dtype", "graph g {\n  %x = input : f31[4]\n}\n", 2, 16, "expected a dtype (f32, f16, bf16, i32, i64), got 'f31'"},
        {"incompatible shapes", "graph g {\n  %a = input : f32[4, 8]\n  %b = input : f32[3]\n  %c = add(%a, %b)\n}\n", 4, 8,
         "add: incompatible shapes f32[4, 8] and f32[3]"},
        {"dtype mismatch", "graph g {\n  %a = input : f32[4]\n  %b = input : f16[4]\n  %c = %a * %b\n}\n", 4, 11,
         "mul: dtype mismatch f32[4] and f16[4]"},
        {"matmul contraction", "graph g {\n  %a = input : f32[M, K]\n  %b = input : f32[N, 8]\n  %c = matmul(%a, %b)\n}\n", 4, 8,
         "matmul: contraction dims differ: f32[M, K] and f32[N, 8]"},
        {"declared type differs", "graph g {\n  %a = input : f32[4]\n  %b = relu(%a) : f32[5]\n}\n", 3, 19,
         "relu: declared type f32[5] does not match inferred type f32[4]"},
        {"redefinition", "graph g {\n  %a = input : f32[4]\n  %a = relu(%a)\n}\n", 3, 3,
         "redefinition of %a (first defined at line 2)"},
        {"missing brace", "graph g {\n  %a = input : f32[4]\n", 3, 1, "expected '}' to close graph 'g'"},
        {"bad character", "graph g {\n  %a = input : f32[4] $\n}\n", 2, 23, "unexpected character '$'"},
        {"unknown attribute", "graph g {\n  %a = input : f32[4]\n  %b = relu(%a, axis=1)\n}\n", 3, 17,
         "relu has no attribute 'axis'"},
        {"bad perm", "graph g {\n  %a = input : f32[4, 2]\n  %b = transpose(%a, perm=[0, 0])\n}\n", 3, 8,
         "transpose: perm [0, 0] is not a permutation of the axes of f32[4, 2]"},
        {"nested reshape", "graph g {\n  %a = input : f32[4, 2]\n  %b = relu(reshape(%a)) : f32[8]\n}\n", 3, 13,
         "'reshape' needs a result type"},
        {"reshape count", "graph g {\n  %a = input : f32[4, 2]\n  %b = reshape(%a) : f32[7]\n}\n", 3, 8,
         "reshape: element counts differ: f32[4, 2] and f32[7]"},
        {"missing operand", "graph g {\n  %a = input : f32[4]\n  %b = add(%a)\n}\n", 3, 8, "add expects 2 operand(s), got 1"},
        {"unnamed result", "graph g {\n  %a = input : f32[4]\n  relu(%a)\n}\n", 3, 3, "the result of 'relu' must be named"},
        {"non-integer literal", "graph g {\n  %a = 2.5 : i64[]\n}\n", 2, 8, "literal 2.5 is not an integer"},
        {"trailing text", "graph g {\n}\nx\n", 3, 1, "expected end of file after '}'"},
        {"bad mode", "graph g mode=quick {\n}\n", 1, 14, "expected 'exact', 'strict' or 'fast', got 'quick'"},
        {"reduction axis", "graph g {\n  %a = input : f32[4]\n  %b = reduce_sum(%a, axes=[1])\n}\n", 3, 8,
         "reduce_sum: axis 1 out of range for rank 1"},
        {"dim must be integer", "graph g {\n  %f = 1.5 : f32[]\n  %a = input : f32[%f]\n}\n", 3, 8,
         "input: dimension %f must be a scalar integer value, got f32[]"},
    };
    for (const ErrorCase &c : cases) {
        SUBCASE(c.name) {
            try {
                parse(c.text, "bad.tsl");
                FAIL("expected a ParseError");
            } catch (const ParseError &e) {
                INFO(e.what());
                CHECK(e.file == "bad.tsl");
                CHECK(e.loc.line == c.line);
                CHECK(e.loc.col == c.col);
                CHECK(e.message.find(c.message) != std::string::npos);
                std::string prefix = "bad.tsl:" + std::to_string(c.line) + ":" + std::to_string(c.col) + ": error: ";
                CHECK(std::string(e.what()).rfind(prefix, 0) == 0);
            }
        }
    }
}

TEST_CASE("parse_file reports unreadable files as UserError") { CHECK_THROWS_AS(parse_file("/nonexistent/x.tsl"), UserError); }

TEST_CASE("the running example parses and prints back identically") {
    Graph g = parse_file(TESSEL_SOURCE_DIR "/algorithms/gelu_mlp.tsl");
    CHECK(verify(g).empty());
    CHECK(print(parse(print(g))) == print(g));
    // hidden = 2048 * 2 is used as a dimension of w and bias.
    const Node &w = g.node(g.find("w"));
    REQUIRE(w.type.dims[1].kind == Dim::Kind::Value);
    CHECK(g.display_name(w.type.dims[1].value) == "hidden");
    CHECK(resolve_dim(g, w.type.dims[1]) == Dim::fixed(4096));
}

TEST_CASE("op table: effects and iteration spaces") {
    CHECK(op_info(Op::MatMul).iter_space == IterSpace::Contraction);
    CHECK(op_info(Op::Add).iter_space == IterSpace::Broadcast);
    CHECK(op_info(Op::Gelu).iter_space == IterSpace::Elementwise);
    CHECK(op_info(Op::ReduceSum).iter_space == IterSpace::Reduction);
    CHECK(op_info(Op::Transpose).iter_space == IterSpace::Permutation);
    CHECK(op_info(Op::RandomNormal).effect == Effect::Random);
    CHECK(op_info(Op::StateRead).effect == Effect::ReadsState);
    CHECK(op_info(Op::StateWrite).effect == Effect::WritesState);
    CHECK(op_info(Op::Print).effect == Effect::Observable);
    CHECK(op_info(Op::Assert).effect == Effect::Observable);
    CHECK(op_info(Op::Softmax).effect == Effect::Pure);
    for (const OpInfo &i : all_ops()) {
        Op o;
        CHECK(parse_op(i.name, &o));
        CHECK(o == i.op);
    }
}

TEST_CASE("verifier reports a use before definition and a wrong type") {
    Graph g = parse("graph g {\n %x = input : f32[4]\n %y = relu(%x)\n output %y\n}\n");
    Graph bad = g;
    bad.node(bad.find("y")).type.dims[0] = Dim::fixed(5);
    auto errs = verify(bad);
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].find("type f32[5] but inferred f32[4]") != std::string::npos);
    CHECK_THROWS_AS(verify_or_throw(bad, "after pass test"), InternalError);
    Graph bad2 = g;
    ValueId late = bad2.add(Node::make(Op::Input, {}, {DType::F32, {Dim::fixed(4)}}, "late"));
    bad2.node(bad2.find("y")).inputs[0] = late;
    auto errs2 = verify(bad2);
    REQUIRE(!errs2.empty());
    CHECK(errs2[0].find("not defined before it") != std::string::npos);
}

TEST_CASE("extents must be positive: zero, negative and oversized extents are refused where written") {
    // Zero-size tensors are not supported (docs/TSL.md, "Types"); a negative extent used to parse
    // through shape code and crash the interpreter ("cannot create std::vector larger than max_size()").
    const ErrorCase cases[] = {
        {"negative static extent", "graph g {\n  %x = input : f32[-3]\n}\n", 2, 20,
         "extent -3 is not positive (extents must be >= 1; zero-size tensors are not supported)"},
        {"zero static extent", "graph g {\n  %x = input : f32[4, 0]\n}\n", 2, 23, "extent 0 is not positive"},
        {"extent too large", "graph g {\n  %x = input : f32[99999999999999999999]\n}\n", 2, 20,
         "extent 99999999999999999999 is too large"},
        {"element count overflows", "graph g {\n  %x = input : f32[4294967296, 4294967296]\n}\n", 2, 8,
         "input: f32[4294967296, 4294967296] has more than 2^62 elements"},
        {"reshape annotation", "graph g {\n  %x = input : f32[4]\n  %r = reshape(%x) : f32[0, 4]\n}\n", 3, 26,
         "extent 0 is not positive"},
        {"cast annotation", "graph g {\n  %x = input : f32[4]\n  %c = cast(%x) : f16[-4]\n}\n", 3, 23,
         "extent -4 is not positive"},
        {"constant annotation", "graph g {\n  %c = 1 : f32[0]\n}\n", 2, 16, "extent 0 is not positive"},
        {"random draw annotation", "graph g {\n  %r = random_uniform(seed=1) : f32[2, 0]\n}\n", 2, 40,
         "extent 0 is not positive"},
        {"shape code folding to a negative extent", "graph g {\n  %h = 2 - 3\n  %x = input : f32[%h]\n}\n", 3, 8,
         "input: dimension %h (shape.sub(%0, %1)) evaluates to -1; extents must be positive"},
        {"shape code folding to zero", "graph g {\n  %x = input : f32[4]\n  %h = shape_of(%x)[0] - 4\n  %z = 0 : f32[%h, 2]\n}\n",
         4, 8, "constant: dimension %h (shape.sub(%1, %2)) evaluates to 0; extents must be positive"},
        {"shape code extent of a reshape", "graph g {\n  %x = input : f32[4]\n  %h = 0 - 4\n  %r = reshape(%x) : f32[%h]\n}\n", 4,
         8, "reshape: dimension %h (shape.sub(%1, %2)) evaluates to -4; extents must be positive"},
    };
    for (const ErrorCase &c : cases) {
        SUBCASE(c.name) {
            bool refused = false;
            try {
                parse(c.text, "bad.tsl");
            } catch (const ParseError &e) {
                refused = true;
                INFO(std::string(e.what()));
                CHECK(e.loc.line == c.line);
                CHECK(e.loc.col == c.col);
                CHECK(e.message.find(c.message) != std::string::npos);
                std::string prefix = "bad.tsl:" + std::to_string(c.line) + ":" + std::to_string(c.col) + ": error: ";
                CHECK(std::string(e.what()).rfind(prefix, 0) == 0);
            }
            CHECK_MESSAGE(refused, "expected a ParseError");
        }
    }
    // Positive extents, written or computed, are fine.
    Graph g = parse("graph g {\n  %h = 3 - 2\n  %x = input : f32[%h, 1, 4096]\n  output %x\n}\n");
    CHECK(verify(g).empty());
}

TEST_CASE("an extent that only folds to <= 0 during simplification is reported at fold time, naming the op") {
    // cast() of a float is not shape code the parser looks through; fold-constants evaluates it.
    const char *text = "graph g {\n  %f = -2 : f32[]\n  %h = cast(%f) : i64[]\n  %x = input : f32[%h]\n  output %x\n}\n";
    Graph g = parse(text, "late.tsl");
    try {
        simplify_graph(g);
        FAIL("expected an error");
    } catch (const UserError &e) {
        const std::string msg = e.what();
        CHECK_MESSAGE(msg.rfind("late.tsl:4:8: error: %x = input : f32[%h] always fails at run time: ", 0) == 0, msg);
        CHECK_MESSAGE(msg.find("dimension %h evaluates to -2; extents must be positive") != std::string::npos, msg);
    }
}
