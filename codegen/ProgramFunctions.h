/** \file
 * Program functions: the library functions that run an elementwise program
 * (AotFunction::program) on the runtime's interpreter (runtime/tessel_program.c) instead of code
 * Halide generated. compile_aot_objects hands them here. Each is static data (its
 * tessel_program, laid out by the runtime header's offsets) and two entries written as x86-64
 * assembly: `name(buffers...)`, which gathers its arguments (registers, then the stack) into an
 * array, and `name_argv(void **)`; both call tessel_program_call. One assembler run for all of
 * them (a C compiler took about a millisecond a function). The interpreter is compiled by the C
 * compiler that built Tessel. Each function gets a header declaring both entries as Halide's
 * would, with the program's text as a comment and the error recorder
 * (aot_error_recorder_section), so a caller cannot tell the two apart but by that comment.
 * x86-64 only (aliases_supported).
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

/** Writes every function of `functions` that has a program (the others are skipped): objects in
 * `work` named `<prefix>programs.o` and `<prefix>tessel_program.o` (the interpreter and
 * tessel_program_call), headers in `dir`. No objects when there are none. Throws CompileError
 * with the assembler's or compiler's output when it fails, or for a target other than x86-64. */
ProgramObjects compile_program_functions(const std::vector<AotFunction> &functions, const Halide::Target &target,
                                         const std::filesystem::path &dir, const std::filesystem::path &work,
                                         const std::string &prefix);

}  // namespace tessel
