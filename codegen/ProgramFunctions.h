/** \file
 * Program functions: the library functions given as C (AotFunction::c_source), which run an
 * elementwise program on the runtime's interpreter (runtime/tessel_program.c) instead of code
 * Halide generated. compile_aot_objects hands them here: they are written into C files with the
 * runtime's header, compiled by the C compiler that built Tessel (a few files, in parallel, each
 * far cheaper than one Halide kernel), and each gets a header declaring `name` and `name_argv`
 * as Halide's would, with the program's text as a comment and the error recorder
 * (aot_error_recorder_section), so a caller cannot tell the two apart but by that comment.
 */
#pragma once

#include "codegen/Compile.h"

#include <filesystem>
#include <string>
#include <vector>

namespace tessel {

struct ProgramObjects {
    std::vector<std::filesystem::path> headers;  ///< one per function, in `dir`
    std::vector<std::filesystem::path> objects;  ///< in `work`: the functions', then the interpreter's
};

/** Compiles every function of `functions` that has c_source (the others are skipped): objects in
 * `work` named `<prefix>programs<k>.o` and `<prefix>tessel_program.o`, headers in `dir`. No
 * objects when there are none. Throws CompileError with the compiler's output when it fails. */
ProgramObjects compile_program_functions(const std::vector<AotFunction> &functions, const std::filesystem::path &dir,
                                         const std::filesystem::path &work, const std::string &prefix, int threads = 0);

}  // namespace tessel
