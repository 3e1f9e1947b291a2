// Helpers shared by the dsl tests: canonical text and Before/Expected checks for passes.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/Verifier.h"
#include "dsl/passes/RewriteLog.h"

namespace tessel::dsl::test {

/** The canonical printed form of a TSL text. */
inline std::string canon(const std::string &text) { return print(parse(text, "<expected>")); }

/** Run `pass` on `before`; it must change the graph into `expected` and leave it valid. */
template <typename Pass>
RewriteLog expect_rewrite(Pass pass, const std::string &before, const std::string &expected) {
    Graph g = parse(before, "<before>");
    RewriteLog log;
    CHECK(pass(g, &log));
    CHECK(verify(g).empty());
    CHECK(print(g) == canon(expected));
    CHECK_FALSE(log.empty());
    return log;
}

/** Run `pass` on `before`; it must report no change and leave the text as it was. */
template <typename Pass>
void expect_no_change(Pass pass, const std::string &before) {
    Graph g = parse(before, "<before>");
    std::string was = print(g);
    RewriteLog log;
    CHECK_FALSE(pass(g, &log));
    CHECK(log.empty());
    CHECK(print(g) == was);
}

}  // namespace tessel::dsl::test
