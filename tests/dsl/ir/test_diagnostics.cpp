// How errors read on the command line (format_error, used by apps/tessel.cpp): a located
// diagnostic prints as itself, "file:line:col: error: ...", anything else as "tessel: error: ...";
// either way "error:" appears once.
#include <doctest/doctest.h>

#include <stdexcept>

#include "../TestUtil.h"
#include "dsl/Simplify.h"
#include "dsl/ir/Diagnostics.h"

using namespace tessel::dsl;

namespace {
size_t count_of(const std::string &s, const std::string &what) {
    size_t n = 0;
    for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
    return n;
}
/** format_error of whatever f throws. */
template <typename F>
std::string formatted(F f) {
    try {
        f();
    } catch (const std::exception &e) {
        return format_error(e);
    }
    FAIL("expected an exception");
    return "";
}
}  // namespace

TEST_CASE("format_error: a parse error prints its location and 'error:' once") {
    ParseError e("gelu.tsl", {4, 16}, "add: incompatible shapes f32[4, 8] and f32[3] (dim 1)");
    CHECK(format_error(e) == "gelu.tsl:4:16: error: add: incompatible shapes f32[4, 8] and f32[3] (dim 1)");
    const std::string parsed = formatted([] { parse("graph g {\n  %y = relu(%z)\n}\n", "bad.tsl"); });
    CHECK(parsed == "bad.tsl:2:13: error: use of undefined value %z");
    CHECK(count_of(parsed, "error:") == 1);
}

TEST_CASE("format_error: an error in a file without a line prints the file once") {
    const std::string e = formatted([] { parse_file("/nonexistent/x.tsl"); });
    CHECK(e == "/nonexistent/x.tsl: error: cannot open file");
}

TEST_CASE("format_error: an error found by a pass at a source location reads like a parse error") {
    const std::string e = formatted([] { simplify_text("graph g {\n  %q = 1 / 0\n  output %q\n}\n", "div.tsl"); });
    CHECK_MESSAGE(e.rfind("div.tsl:2:10: error: ", 0) == 0, e);
    CHECK(count_of(e, "error:") == 1);
    // Without a file (a graph built in C++), the location cannot be printed: the tool prefix.
    LocatedError no_file("", {3, 4}, "assert(%c) always fails at run time");
    CHECK(format_error(no_file) == "tessel: error: assert(%c) always fails at run time");
}

TEST_CASE("format_error: other errors get the tool's prefix once") {
    CHECK(format_error(std::runtime_error("no schedule named 'x'")) == "tessel: error: no schedule named 'x'");
    CHECK(format_error(UserError("--dim 'M': expected NAME=POSITIVE_INTEGER")) ==
          "tessel: error: --dim 'M': expected NAME=POSITIVE_INTEGER");
    CHECK(format_error(std::invalid_argument("bad"), "tessel-measure") == "tessel-measure: error: bad");
}
