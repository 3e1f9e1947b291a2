// Running a shell script from a test (pipelines, `unshare -m sh -c ...`): its exit status (128 +
// signal when killed) and everything it wrote to stdout and stderr. Only for scripts that need a
// shell; a single program runs through run_subprocess with its argument vector.
#pragma once

#include "support/Subprocess.h"

#include <string>

namespace tessel::testing {

struct ShellResult {
    int rc = -1;
    std::string output;
};

inline ShellResult shell(const std::string &script) {
    const SubprocessResult r = run_subprocess({"sh", "-c", script});
    return {r.status, r.output};
}

}  // namespace tessel::testing
