// Running a program from an argument vector (never through a shell): its exit status, what it
// wrote to stdout and stderr together, and a wall-clock limit after which it is killed.
//
// Arguments reach the child exactly as given, so paths with spaces or quotes need no escaping
// and nothing a user names can be read as shell syntax. The child inherits the environment.
#pragma once

#include <string>
#include <vector>

namespace tessel {

struct SubprocessResult {
    /** The exit status; 128 + the signal when killed by one; 127 when the program could not be
     * started (not found, not executable). */
    int status = -1;
    bool timed_out = false;  ///< killed after SubprocessOptions::timeout_seconds
    std::string output;      ///< stdout and stderr, interleaved as written
    bool ok() const { return status == 0 && !timed_out; }
};

struct SubprocessOptions {
    /** Kill the child (SIGKILL) after this many seconds; <= 0 waits for as long as it runs. */
    double timeout_seconds = 0;
};

/** Runs argv[0] (searched on PATH when it has no '/') with argv[1..]. Throws
 * std::invalid_argument on an empty argv and std::runtime_error when no pipe or process can be
 * made; a program that starts and fails is reported through the result, not thrown. */
SubprocessResult run_subprocess(const std::vector<std::string> &argv, const SubprocessOptions &options = {});

/** The full path of `program` found on PATH (or `program` itself when it holds a '/' and is
 * executable); "" when there is none. */
std::string find_program(const std::string &program);

/** argv as one line for messages ("cc -c 'a b.c'"): words with spaces or quotes are quoted. */
std::string format_command(const std::vector<std::string> &argv);

}  // namespace tessel
