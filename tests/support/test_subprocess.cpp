// run_subprocess: arguments reach the child verbatim, status and output come back, the time
// limit kills, a missing program is a status (127) rather than an exception.
#include "support/Clock.h"
#include "support/Subprocess.h"

#include <doctest/doctest.h>

#include <chrono>

using namespace tessel;

TEST_CASE("arguments reach the child exactly, with no shell between") {
    const SubprocessResult r = run_subprocess({"printf", "%s|", "a b", "it's", "$HOME", "*"});
    CHECK(r.ok());
    CHECK(r.output == "a b|it's|$HOME|*|");
}

TEST_CASE("exit status and stderr are reported") {
    const SubprocessResult r = run_subprocess({"sh", "-c", "echo out; echo err >&2; exit 3"});
    CHECK(r.status == 3);
    CHECK_FALSE(r.ok());
    CHECK(r.output.find("out") != std::string::npos);
    CHECK(r.output.find("err") != std::string::npos);
}

TEST_CASE("a child past its time limit is killed, promptly") {
    const tessel::SteadyClock::time_point start = tessel::SteadyClock::now();
    const SubprocessResult r = run_subprocess({"sleep", "30"}, {0.3});
    const double seconds = tessel::seconds_since(start);
    CHECK(r.timed_out);
    CHECK_FALSE(r.ok());
    CHECK(r.status == 128 + 9);
    CHECK(seconds < 10);
}

TEST_CASE("a program that is not there is status 127 with its name") {
    const SubprocessResult r = run_subprocess({"tessel-no-such-program-here"});
    CHECK(r.status == 127);
    CHECK(r.output.find("tessel-no-such-program-here") != std::string::npos);
    CHECK(find_program("tessel-no-such-program-here").empty());
    CHECK_FALSE(find_program("sh").empty());
    CHECK_THROWS_AS(run_subprocess({}), std::invalid_argument);
}

TEST_CASE("format_command quotes only the words that need it") {
    CHECK(format_command({"cc", "-c", "a.c"}) == "cc -c a.c");
    CHECK(format_command({"cc", "my file.c", "it's"}) == "cc 'my file.c' 'it'\\''s'");
    CHECK(format_command({"x", ""}) == "x ''");
}
