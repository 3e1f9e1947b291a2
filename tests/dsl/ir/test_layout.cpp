// Layouts as data (dsl/ir/Layout.h): text form, checks, physical shapes and index maps, and
// their place in the graph text (layout= on ops, input(...)/weight(...), errors at file:line:col).
#include <doctest/doctest.h>

#include "dsl/ir/Diagnostics.h"
#include "dsl/ir/Layout.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"

using namespace tessel::dsl;

TEST_CASE("layout text round-trips; row-major prints as nothing") {
    for (const char *text : {"[1, 0]", "panels(axis=1, width=48)", "[1, 0] panels(axis=0, width=16)", "[2, 0, 1]"}) {
        std::string why;
        const auto l = parse_layout(text, &why);
        REQUIRE_MESSAGE(l, why);
        CHECK(to_string(*l) == text);
    }
    CHECK(parse_layout("row_major", nullptr)->empty());
    CHECK(parse_layout("[0, 1, 2]", nullptr)->canonical().empty());  // the identity order is row-major
    CHECK(to_string(Layout::row_major()) == "");
}

TEST_CASE("bad layouts are refused with what is wrong") {
    std::string why;
    CHECK_FALSE(parse_layout("panels(axis=1)", &why));
    CHECK(why.find("width=W") != std::string::npos);
    CHECK_FALSE(parse_layout("[1, 0", &why));
    CHECK(why.find("expected ',' or ']'") != std::string::npos);
    CHECK_FALSE(parse_layout("tiles", &why));
    CHECK(check_layout(Layout::ordered({0, 0}), 2).find("not a permutation") != std::string::npos);
    CHECK(check_layout(Layout::ordered({1, 0}), 3).find("not a permutation") != std::string::npos);
    CHECK(check_layout(Layout::panels(2, 8), 2).find("panel axis 2") != std::string::npos);
    CHECK(check_layout(Layout::panels(1, 0), 2).find("panel width 0") != std::string::npos);
    CHECK(check_layout(Layout::panels(1, 8, {1, 0}), 2).empty());
}

TEST_CASE("physical shapes: order, panels with a padded last panel") {
    CHECK(physical_shape(Layout::ordered({1, 0}), {19, 37}) == std::vector<int64_t>{37, 19});
    CHECK(physical_shape(Layout::panels(1, 8), {37, 19}) == std::vector<int64_t>{3, 37, 8});
    CHECK(physical_shape(Layout::panels(0, 8, {1, 0}), {19, 37}) == std::vector<int64_t>{3, 37, 8});
    CHECK(physical_shape(Layout::row_major(), {5}) == std::vector<int64_t>{5});
}

TEST_CASE("physical_index and logical_index are inverse on every element") {
    const std::vector<int64_t> shape{5, 19, 7};
    for (const Layout &l : {Layout::row_major(), Layout::ordered({2, 0, 1}), Layout::panels(1, 8),
                            Layout::panels(2, 3, {1, 2, 0}), Layout::panels(0, 1)}) {
        INFO(to_string(l));
        const auto dims = physical_dims(l, 3);
        const auto phys = physical_shape(l, shape);
        std::vector<char> hit(phys[0] * phys[1] * phys[2] * (phys.size() > 3 ? phys[3] : 1), 0);
        for (int64_t a = 0; a < shape[0]; a++)
            for (int64_t b = 0; b < shape[1]; b++)
                for (int64_t c = 0; c < shape[2]; c++) {
                    const std::vector<int64_t> idx{a, b, c};
                    const std::vector<int64_t> p = physical_index(dims, idx);
                    REQUIRE(p.size() == phys.size());
                    int64_t linear = 0;
                    for (size_t d = 0; d < p.size(); d++) {
                        REQUIRE(p[d] >= 0);
                        REQUIRE(p[d] < phys[d]);
                        linear = linear * phys[d] + p[d];
                    }
                    CHECK_FALSE(hit[linear]);  // no two elements share a place
                    hit[linear] = 1;
                    CHECK(logical_index(dims, p, 3) == idx);
                }
    }
}

TEST_CASE("layouts in the graph text: on ops, inputs and weights; errors name the place") {
    const std::string text = R"TSL(graph g mode=strict {
  %x = input(layout="[1, 0]") : f32[M, 4]
  %w = weight(layout="panels(axis=1, width=8)") : f32[4, 19]
  %b = weight : f32[19]
  %m = matmul(%x, %w) : f32[M, 19]
  %y = add(%m, %b, layout="[1, 0]") : f32[M, 19]
  output %y
}
)TSL";
    const Graph g = parse(text, "t.tsl");
    CHECK(print(g) == text);
    CHECK(g.node(g.find("w")).attrs.weight);
    CHECK_FALSE(g.node(g.find("x")).attrs.weight);
    CHECK(g.node(g.find("w")).layout == Layout::panels(1, 8));
    try {
        parse("graph g {\n  %x = input(layout=\"[0, 1, 2]\") : f32[4, 4]\n  output %x\n}", "bad.tsl");
        FAIL("a rank-3 order on a rank-2 input was accepted");
    } catch (const ParseError &e) {
        const std::string m = e.what();
        CHECK(m.find("bad.tsl:2:") != std::string::npos);
        CHECK(m.find("not a permutation of the 2 axes") != std::string::npos);
    }
    try {
        parse("graph g {\n  %x = input : f32[4, 4]\n  %y = relu(%x, layout=\"panels(axis=1, width=-3)\")\n  output %y\n}",
              "bad.tsl");
        FAIL("a negative width was accepted");
    } catch (const ParseError &e) {
        CHECK(std::string(e.what()).find("bad.tsl:3:") != std::string::npos);
    }
}
