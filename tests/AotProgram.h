/** \file
 * A C program over a library `tessel compile --emit lib` wrote: compiled with the Halide runtime
 * header Tessel builds against, linked to the library's archive, then run. For tests of
 * generated code that is called the way a user's program calls it.
 */
#pragma once

#include "support/Subprocess.h"

#include <doctest/doctest.h>

#include <string>

#ifndef TESSEL_HALIDE_RUNTIME_INCLUDE
#error "TESSEL_HALIDE_RUNTIME_INCLUDE must name the directory of HalideRuntime.h"
#endif

namespace tessel::testing {

/** Compiles `main_c` with `include_dir`'s headers, links `archive`, runs the program and checks it
 * exits with 0; returns what it printed. */
inline std::string link_and_run(const std::string &main_c, const std::string &include_dir, const std::string &archive,
                                const std::string &exe) {
    const SubprocessResult linked =
        run_subprocess({"cc", "-O1", main_c, "-I" + include_dir, std::string("-I") + TESSEL_HALIDE_RUNTIME_INCLUDE, archive,
                        "-lm", "-lpthread", "-ldl", "-o", exe},
                       {300});
    INFO(linked.output);
    REQUIRE(linked.ok());
    const SubprocessResult ran = run_subprocess({exe}, {60});
    INFO(ran.output);
    CHECK(ran.ok());
    return ran.output;
}

}  // namespace tessel::testing
