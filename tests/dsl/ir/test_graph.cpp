// Graph's indexes (dsl/ir/Graph.h): the name index behind find(), the linked program order and
// the user index behind users() and replace_all_uses() stay exact through every kind of change.
#include <doctest/doctest.h>

#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "dsl/ir/Verifier.h"

using namespace tessel::dsl;

TEST_CASE("graph indexes: find, order, position and users follow adds, inserts, erases and renames") {
    Graph g = parse("graph g {\n  %x = input : f32[4]\n  %a = relu(%x)\n  %b = neg(%a)\n  output %b\n}\n");
    const ValueId x = g.find("x"), a = g.find("a"), b = g.find("b");
    CHECK(g.users(x) == std::vector<ValueId>{a});
    const ValueId t = g.insert_before(b, make_node(g, Op::Tanh, {a}));
    CHECK(g.position(t) == 2);
    CHECK(g.users(a) == std::vector<ValueId>{t, b});
    // A use added through node() is seen by the user index.
    g.node(b).inputs[0] = t;
    CHECK(g.users(t) == std::vector<ValueId>{b});
    CHECK(g.users(a) == std::vector<ValueId>{t});
    CHECK(g.replace_all_uses(t, a) == 1);
    CHECK(g.node(b).inputs[0] == a);
    g.erase(t);
    CHECK(g.size() == 3);
    CHECK(g.order() == std::vector<ValueId>{x, a, b});
    CHECK(g.find(std::to_string(t)) == kNoValue);
    g.set_name(a, "renamed");
    CHECK(g.find("a") == kNoValue);
    CHECK(g.find("renamed") == a);
    CHECK(verify(g).empty());
    // Copies keep working indexes of their own.
    Graph c = g;
    c.set_name(a, "other");
    CHECK(c.find("other") == a);
    CHECK(g.find("renamed") == a);
    CHECK(c.users(a) == std::vector<ValueId>{b});
}

TEST_CASE("graph indexes: a user name spelled like an id moves the unnamed value out of the way") {
    Graph g = parse("graph g {\n  %x = input : f32[2]\n  %y = relu(%x) + 1\n  %2 = neg(%x)\n  output %y, %2\n}\n");
    CHECK(verify(g).empty());
    CHECK(g.node(g.find("2")).op == Op::Neg);
    CHECK(print(parse(print(g))) == print(g));
}
