/** \file
 * Kernel aliases: a library function that is another function's code under its own name. When
 * two groups compile to the same code (compiler/KernelReuse.h), the library compiles the code
 * once and gives the second group's name to thunks that call the first: callers link and call
 * every group by its name, header included, and LLVM runs once per distinct kernel.
 *
 * Each Halide function `f` is three symbols: `f`, `f_argv` and `f_metadata`. An alias `a` of `f`:
 *  - `a` and `a_argv` jump to `f` and `f_argv` (`jmp f@PLT`, so the archive links into
 *    executables and shared objects alike). When `f` reads constants from an argument
 *    (lower::LowerOptions::constant_arguments), the alias's own values sit in a static, read-only
 *    halide_buffer_t: `a` moves its arguments one register up and passes that buffer in its
 *    place (every argument of `f` is a pointer in a register: at most 6, the SysV x86-64 ABI's),
 *    and `a_argv` calls `f_argv` with the argument array so extended;
 *  - `a_metadata()` returns a's own metadata: its name, its arguments (the code's, without the
 *    constants), the code's target.
 * The thunks are written as assembly and assembled by the C++ compiler that built Tessel.
 * x86-64 only: aliases_supported() says whether a target's code can take them.
 */
#pragma once

#include <Halide.h>

#include <filesystem>
#include <string>
#include <vector>

namespace tessel {

/** Arguments a thunk can pass in registers (rdi, rsi, rdx, rcx, r8, r9). */
constexpr size_t kAliasRegisterArguments = 6;

struct KernelAlias {
    std::string name;  ///< the function callers see
    std::string code;  ///< the function whose code it runs
    /** The code function's arguments in call order, as compiled (outputs included). */
    std::vector<Halide::Argument> code_arguments;
    /** The values the alias passes in the code's constants argument; empty: none, the caller's
     * arguments are passed unchanged. */
    std::vector<float> constants;
    size_t constants_argument = 0;  ///< that argument's index in code_arguments
    std::string target;             ///< the target its metadata names (the code's)
};

/** Whether the target's functions can be aliased by thunks (64-bit x86). */
bool aliases_supported(const Halide::Target &target);

/** `code`'s header text with its function names (and include guard) renamed to `alias`'s, the
 * constants argument (if any) left out of the declaration, and a first line saying whose code
 * the alias runs. Throws CompileError when the header does not declare that argument. */
std::string alias_header(const std::string &code_header, const KernelAlias &alias);

/** Writes the thunks and metadata of every alias as assembly `<name>.s` in `work` and assembles
 * them into one object `<name>.o`; returns its path. Throws CompileError when an alias's
 * arguments are not all buffers or do not fit in registers, or with the assembler's output when
 * it fails. */
std::filesystem::path assemble_alias_thunks(const std::vector<KernelAlias> &aliases, const std::filesystem::path &work,
                                            const std::string &name = "aliases");

}  // namespace tessel
