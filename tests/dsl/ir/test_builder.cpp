// The C++ builder builds the graph the parser builds: each case writes one program twice, as TSL
// text and through GraphBuilder, and compares the printed graphs (text in, text out). Operands that
// create nodes are built in separate statements, because C++ does not fix the order in which an
// operator's operands are evaluated (see Builder.h).
#include <doctest/doctest.h>

#include "../TestUtil.h"
#include "dsl/ir/Builder.h"

using namespace tessel::dsl;
using tessel::dsl::test::canon;

namespace {

/** The builder's graph must print exactly as `text` parses. */
void check_same(GraphBuilder &b, const std::string &text) {
    const Graph &g = b.graph();
    CHECK(verify(g).empty());
    CHECK(print(g) == canon(text));
}

/** Message of the exception `f` throws as E; fails the test if it throws nothing. */
template <typename E, typename F>
std::string message_of(F f) {
    try {
        f();
    } catch (const E &e) {
        return e.what();
    }
    FAIL("expected an exception");
    return "";
}

}  // namespace

TEST_CASE("builder: elementwise ops, infix and literals") {
    GraphBuilder b("f");
    Dim M = b.symbol("M");
    Value x = b.input("x", DType::F32, {M, 4});
    Value y = b.input("y", DType::F32, {M, 4});
    Value h = b.input("h", DType::F16, {4});
    Value r = relu(x);
    Value s = y * 2;
    Value a = (r + s).named("a");
    Value d = (2 - a).named("d");
    Value e = (d / 4.0).named("e");
    Value u = rsqrt(sqrt(abs(neg(exp(tanh(gelu_tanh(gelu(e)))))))).named("u");
    Value m = max(u, 0.0).named("m");
    Value n = min(m, x).named("n");
    Value q = (-n).named("q");
    Value hh = (h * 0.1).named("hh");
    b.output(q);
    b.output(hh);
    check_same(b, R"(graph f {
  %x = input : f32[M, 4]
  %y = input : f32[M, 4]
  %h = input : f16[4]
  %a = relu(%x) + %y * 2
  %d = 2 - %a
  %e = %d / 4.0
  %u = rsqrt(sqrt(abs(neg(exp(tanh(gelu_tanh(gelu(%e))))))))
  %m = max(%u, 0)
  %n = min(%m, %x)
  %q = -%n
  %hh = %h * 0.1
  output %q, %hh
})");
}

TEST_CASE("builder: broadcasting and batched matmul") {
    GraphBuilder b("bcast");
    Dim B = b.symbol("B"), M = b.symbol("M"), K = b.symbol("K");
    Value a = b.input("a", DType::F32, {B, M, K});
    Value w = b.input("w", DType::F32, {K, 8});
    Value col = b.input("col", DType::F32, {M, 1});
    Value row = b.input("row", DType::F32, {8});
    Value mm = matmul(a, w).named("mm");
    Value t = (mm + row).named("t");
    b.output("out", t * col);
    check_same(b, R"(graph bcast {
  %a = input : f32[B, M, K]
  %w = input : f32[K, 8]
  %col = input : f32[M, 1]
  %row = input : f32[8]
  %mm = matmul(%a, %w)
  %t = %mm + %row
  %out = %t * %col
  output %out
})");
    TensorType want{DType::F32, {Dim::sym("B"), Dim::sym("M"), Dim::fixed(8)}};
    CHECK(b.graph().node(b.graph().find("out")).type == want);
}

TEST_CASE("builder: reductions with axes and keepdims, softmax") {
    GraphBuilder b("red");
    Value x = b.input("x", DType::F32, {"M", "N", 3});
    reduce_sum(x, {0, 2}).named("s");
    reduce_max(x, {1}, true).named("mx");
    Value mean = reduce_mean(x, {2}, false).named("mean");
    Value sm = softmax(x, 1).named("sm");
    b.output(mean);
    b.output(sm);
    check_same(b, R"(graph red {
  %x = input : f32[M, N, 3]
  %s = reduce_sum(%x, axes=[0, 2])
  %mx = reduce_max(%x, axes=[1], keepdims=true)
  %mean = reduce_mean(%x, axes=[2])
  %sm = softmax(%x, axis=1)
  output %mean, %sm
})");
}

TEST_CASE("builder: transpose with and without perm, reshape with a shape-code dim") {
    GraphBuilder b("move");
    Value x = b.input("x", DType::F32, {4, 6, "K"});
    Value n = (b.shape_const(2) * 12).named("n");
    Value k = shape_of(x, 2).named("k");
    Value q = floordiv(n, 4).named("q");
    Value r = mod(n, q).named("r");
    Value lo = min(q, r).named("lo");
    Value hi = max(lo, n).named("hi");
    Value s = (hi - k).named("s");
    Value f = (n / q).named("f");
    Value t = transpose(x).named("t");
    Value p = transpose(x, {1, 0, 2}).named("p");
    Value rs = reshape(p, {n, k}).named("rs");
    b.output(t);
    b.output(rs);
    b.output(s);
    b.output(f);
    check_same(b, R"(graph move {
  %x = input : f32[4, 6, K]
  %n = 2 * 12
  %k = shape_of(%x)[2]
  %q = shape.floordiv(%n, 4)
  %r = shape.mod(%n, %q)
  %lo = shape.min(%q, %r)
  %hi = shape.max(%lo, %n)
  %s = %hi - %k
  %f = %n / %q
  %t = transpose(%x)
  %p = transpose(%x, perm=[1, 0, 2])
  %rs = reshape(%p) : f32[%n, %k]
  output %t, %rs, %s, %f
})");
}

TEST_CASE("builder: casts and constants") {
    GraphBuilder b("consts");
    Value x = b.input("x", DType::F32, {"M", 4});
    Value c = b.constant(2.0f).named("c");
    Value z = b.constant(0, DType::F32, {4, 4}).named("z");
    Value d = b.constant({1, -2.5, 0.1, 1e20}, DType::F32, {4}).named("d");
    Value i = b.shape_const(7, DType::I32).named("i");
    Value k = cast(shape_of(x, 1), DType::F32).named("k");
    Value xh = cast(x, DType::F16).named("xh");
    Value y = (x * c + d).named("y");
    Value yz = matmul(y, z).named("yz");
    b.output(yz / k);
    b.output(xh);
    b.output(i);
    check_same(b, R"(graph consts {
  %x = input : f32[M, 4]
  %c = 2.0
  %z = 0 : f32[4, 4]
  %d = constant(value=[1, -2.5, 0.1, 1e20]) : f32[4]
  %i = 7 : i32[]
  %k = cast(shape_of(%x)[1]) : f32[]
  %xh = cast(%x) : f16[M, 4]
  %y = %x * %c + %d
  %yz = matmul(%y, %z)
  %11 = %yz / %k
  output %11, %xh, %i
})");
}

TEST_CASE("builder: effects keep their order; numeric mode fast") {
    GraphBuilder b("fx", NumericMode::Fast);
    Value n = (b.shape_const(3) + 1).named("n");
    Value u = b.random_uniform(DType::F32, {2, n}, 7).named("u");
    Value g = b.random_normal(DType::BF16, {3}, 18446744073709551615ull).named("g");
    Value s = b.state_read("acc", DType::F32, {2, n}).named("s");
    Value t = (s + u).named("t");
    state_write("acc", t);
    print("acc \"after\"", t);
    assert_that(relu(t), "relu is non-negative");
    b.output(t);
    b.output(g);
    check_same(b, R"(graph fx mode=fast {
  %n = 3 + 1
  %u = random_uniform(seed=7) : f32[2, %n]
  %g = random_normal(seed=18446744073709551615) : bf16[3]
  %s = state_read(var="acc") : f32[2, %n]
  %t = %s + %u
  state_write(%t, var="acc")
  print(%t, label="acc \"after\"")
  assert(relu(%t), msg="relu is non-negative")
  output %t, %g
})");
    CHECK(b.graph().mode == NumericMode::Fast);
}

TEST_CASE("builder: a name that looks like an id renames the unnamed value, as the parser does") {
    GraphBuilder b("g");
    Value x = b.input("x", DType::F32, {2});
    Value r = relu(x);
    Value y = (r + 1).named("y");
    Value two = neg(x).named("2");
    b.output(y);
    b.output(two);
    check_same(b,
               "graph g {\n %x = input : f32[2]\n %y = relu(%x) + 1\n %2 = neg(%x)\n"
               " output %y, %2\n}\n");
    Graph g = std::move(b).build();
    CHECK(g.display_name(r.id()) == "1");
    CHECK(g.node(g.find("_2")).op == Op::Constant);  // the literal 1, which printed as %2
}

TEST_CASE("builder: output(v) keeps an unnamed value unnamed; build() hands the graph over") {
    GraphBuilder b("h");
    Value x = b.input("x", DType::F32, {2});
    b.output(exp(x));
    Graph g = std::move(b).build();
    CHECK(print(g) == canon("graph h {\n %x = input : f32[2]\n %1 = exp(%x)\n output %1\n}\n"));
    std::string msg = message_of<UserError>([&] { relu(x); });
    CHECK(msg.find("already finished by build()") != std::string::npos);
}

TEST_CASE("builder errors: shape and dtype mismatches throw infer_type's TypeError") {
    GraphBuilder b("bad");
    Value x = b.input("x", DType::F32, {4, 8});
    Value y = b.input("y", DType::F32, {3});
    size_t before = b.graph().order().size();
    std::string msg = message_of<TypeError>([&] { x + y; });
    CHECK(msg == "add: incompatible shapes f32[4, 8] and f32[3] (dim 1)");
    CHECK(b.graph().order().size() == before);  // nothing was added

    Value a = b.input("a", DType::F32, {"M", "K"});
    Value w = b.input("w", DType::F32, {"N", 8});
    msg = message_of<TypeError>([&] { matmul(a, w); });
    CHECK(msg == "matmul: contraction dims differ: f32[M, K] and f32[N, 8]");

    Value n = b.shape_const(4);
    msg = message_of<TypeError>([&] { n + y; });
    CHECK(msg == "add: expected floating-point operands, got i64[] and f32[3]");
    msg = message_of<TypeError>([&] { reduce_sum(y, {1}); });
    CHECK(msg == "reduce_sum: axis 1 out of range for rank 1 operand f32[3]");
    msg = message_of<TypeError>([&] { reshape(x, {7}); });
    CHECK(msg == "reshape: element counts differ: f32[4, 8] and f32[7]");
    msg = message_of<TypeError>([&] { n * 2.5; });
    CHECK(msg == "constant: value 2.5 is not an integer, but type is i64[]");
    msg = message_of<TypeError>([&] { floordiv(y, y); });
    CHECK(msg.find("shape.floordiv: expected two scalar integers") == 0);
    CHECK(verify(b.graph()).empty());
}

TEST_CASE("builder errors: Values of two builders, undefined Values, names") {
    GraphBuilder b1("one"), b2("two");
    Value x = b1.input("x", DType::F32, {4});
    Value y = b2.input("y", DType::F32, {4});
    std::string msg = message_of<UserError>([&] { x + y; });
    CHECK(msg ==
          "add: operand %y belongs to GraphBuilder 'two', not to GraphBuilder 'one'; "
          "a Value can only be used in the builder that made it");
    msg = message_of<UserError>([&] { b1.output(y); });
    CHECK(msg.find("belongs to GraphBuilder 'two'") != std::string::npos);
    Value k = shape_of(y, 0);
    msg = message_of<UserError>([&] { b1.input("z", DType::F32, {k}); });
    CHECK(msg.find("dimension: operand %1 belongs to GraphBuilder 'two'") == 0);

    Value undefined;
    msg = message_of<UserError>([&] { x *undefined; });
    CHECK(msg.find("undefined Value") != std::string::npos);

    msg = message_of<UserError>([&] { b1.input("x", DType::F32, {4}); });
    CHECK(msg == "redefinition of %x");
    Value r = relu(x).named("r");
    msg = message_of<UserError>([&] { r.named("s"); });
    CHECK(msg == "%r cannot also be named %s: a value has one name, as in the text form");
    CHECK(r.named("r").id() == r.id());
    CHECK_THROWS_AS(b1.symbol("2M"), UserError);
    CHECK_THROWS_AS(b1.name(x, "a b"), UserError);
    CHECK_THROWS_AS(GraphBuilder("no spaces"), UserError);
    CHECK(print(b1.graph()) == "graph one mode=strict {\n  %x = input : f32[4]\n  %r = relu(%x) : f32[4]\n}\n");
}

TEST_CASE("builder errors: extents must be positive, as in the text form") {
    GraphBuilder b("sizes");
    std::string msg = message_of<UserError>([&] { b.input("z", DType::F32, {4, 0}); });
    CHECK(msg == "extent 0 is not positive (extents must be >= 1; zero-size tensors are not supported)");
    msg = message_of<UserError>([&] { b.input("n", DType::F32, {-3}); });
    CHECK(msg.find("extent -3 is not positive") == 0);
    Value h = b.shape_const(2) - 3;  // shape code the type check evaluates: -1
    msg = message_of<TypeError>([&] { b.input("x", DType::F32, {h}); });
    CHECK(msg.find("dimension %2 (shape.sub(%0, %1)) evaluates to -1; extents must be positive") != std::string::npos);
    CHECK(verify(b.graph()).empty());
}
