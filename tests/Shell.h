// Running a shell command line from a test: its exit status (128 + signal when killed) and
// everything it wrote to stdout and stderr. For tests that drive the built programs or a
// compiler, the way a user's shell would.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace tessel::testing {

struct ShellResult {
    int rc = -1;
    std::string output;
};

inline ShellResult shell(const std::string &command) {
    ShellResult r;
    FILE *p = popen((command + " 2>&1").c_str(), "r");
    REQUIRE(p);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
    const int st = pclose(p);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return r;
}

}  // namespace tessel::testing
