/** \file
 * Kernel aliases: a library function that is another function's code under its own name. When
 * two groups compile to the same code (compiler/KernelReuse.h), the library compiles the code
 * once and gives the second group's name to a thunk that jumps to the first: callers link and
 * call every group by its name, header included, and LLVM runs once per distinct kernel.
 *
 * Each Halide function `f` is three symbols: `f`, `f_argv` and `f_metadata`; an alias `a` of
 * `f` is three thunks (`jmp f@PLT`, so the archive links into executables and shared objects
 * alike), assembled by the C++ compiler that built Tessel. `a_metadata()` returns f's metadata,
 * whose name field says `f`. x86-64 only: aliases_supported() says whether a target's code can
 * take them.
 */
#pragma once

#include <Halide.h>

#include <filesystem>
#include <string>
#include <vector>

namespace tessel {

struct KernelAlias {
    std::string name;  ///< the function callers see
    std::string code;  ///< the function whose code it runs
};

/** Whether the target's functions can be aliased by thunks (64-bit x86). */
bool aliases_supported(const Halide::Target &target);

/** `code`'s header text with its function names (and include guard) renamed to `alias`'s, and a
 * first line saying whose code the alias runs. */
std::string alias_header(const std::string &code_header, const KernelAlias &alias);

/** Writes the thunks of every alias as assembly in `work` and assembles them into one object;
 * returns its path. Throws CompileError with the assembler's output when it fails. */
std::filesystem::path assemble_alias_thunks(const std::vector<KernelAlias> &aliases, const std::filesystem::path &work);

}  // namespace tessel
