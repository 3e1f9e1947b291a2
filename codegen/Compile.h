/** \file
 * Turning scheduled Halide pipelines into code: JIT callables for the CPU, ahead-of-time
 * files (static library + header, object, assembly, lowered statement), and the PTX of a
 * CUDA pipeline. Halide errors are caught here and rethrown as CompileError in Tessel's
 * words, with Halide's message attached.
 */
#pragma once

#include <Halide.h>
#include <tessel_runtime.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessel {

/** Halide failed to compile or run a pipeline; what() carries Halide's own message. */
class CompileError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/** Parses a target string. "host" is this machine; "host-cuda" adds CUDA (compute capability
 * 8.6, the newest Halide 21 knows; its PTX also assembles for sm_90). Anything else is a
 * Halide target string such as "x86-64-linux-avx2-fma". Throws CompileError naming it. */
Halide::Target parse_target(const std::string &text);

class LoadedKernel;

/** Compiles `output` for `target` to a Callable (JIT), timing the compilation. Its parallel
 * loops run on OpenMP (codegen/ParallelRuntime.h). With a `description` of everything that
 * decides the code and the process-wide kernel cache on (codegen/KernelCache.h), a CPU kernel
 * comes from the cache instead: `loaded` is set and `callable` is not. */
struct JitKernel {
    Halide::Callable callable;
    std::shared_ptr<const LoadedKernel> loaded;
    bool from_cache = false;  ///< loaded without compiling
    double compile_seconds = 0;
    std::string cache_note;  ///< KernelCache::Result::note: an entry not used, or a kernel not stored
};
JitKernel compile_jit(const Halide::Pipeline &pipeline, const std::vector<Halide::Argument> &args, const Halide::Target &target,
                      const std::string &name, const std::string &description = "");

/** Records a Halide runtime error message for last_halide_error() (the handler JIT and cached
 * kernels report through). */
void record_halide_error(const char *msg);

/** The message of the last Halide runtime error raised by a JIT kernel on this thread
 * (kernels compiled by compile_jit report errors here instead of printing them). */
std::string last_halide_error();

/** The text appended to every generated header: tessel_install_error_recorder() (installs a
 * runtime error handler that records the message instead of aborting, so the function returns
 * its error code) and tessel_last_error() (this thread's last message), with a comment saying
 * how to use them; C and C++. */
std::string aot_error_recorder_section(const std::string &name);

/** What `compile_aot` writes. */
enum class AotOutput { StaticLibrary, Header, Object, Assembly, Stmt, StmtHtml, Ptx };
std::string to_string(AotOutput o);
AotOutput parse_aot_output(const std::string &s);

/** Writes the requested outputs for `pipeline` (a Func converts) into `dir` as `<name>.<ext>`; returns the paths.
 * Ptx writes the device code of a CUDA target (CompileError if the target has no CUDA). The
 * header ends with aot_error_recorder_section(name): without it, Halide's runtime aborts the
 * caller's process on an error such as a too-small buffer. */
std::vector<std::filesystem::path> compile_aot(const Halide::Pipeline &pipeline, const std::vector<Halide::Argument> &args,
                                               const Halide::Target &target, const std::string &name,
                                               const std::filesystem::path &dir, const std::set<AotOutput> &outputs);

/** An elementwise program as a library function: its steps (runtime/tessel_runtime.h), its
 * arguments' parameter names (inputs, then outputs) and a comment for its header (the text form). */
struct ProgramFunction {
    int32_t input_count = 0, output_count = 0, register_count = 0;
    std::vector<tessel_program_step> steps;
    std::vector<int32_t> output_registers;
    std::vector<std::string> parameters;
    std::string comment;
};

/** One function of a library written by compile_aot_library. */
struct AotFunction {
    Halide::Pipeline pipeline;
    std::vector<Halide::Argument> arguments;
    std::string name;
    /** Another function of the library (earlier in the list) whose code this one is: nothing is
     * compiled for it, and `name` becomes an alias of that code (codegen/KernelAliases.h). */
    std::string same_code_as;
    /** An alias of code that reads constants from an argument (lower::LowerOptions): the values
     * this function passes there. Empty: it passes its caller's arguments unchanged. */
    std::vector<float> constants;
    /** Code only aliases call (their constants are theirs): compiled, with no header among the
     * library's files. */
    bool internal = false;
    /** Code that reads constants from an argument: that argument's name (lower::LoweredGroup::constants). */
    std::string constants_argument;
    /** A function that runs an elementwise program (lowering/ElementwiseProgram.h) instead of
     * code from a pipeline: the program as data, written as assembly with the function's two
     * entries (codegen/ProgramFunctions.h). */
    std::optional<ProgramFunction> program;
};

struct AotLibrary {
    std::vector<std::filesystem::path> written;  ///< headers, then the library (compile_aot_objects: headers only)
    std::vector<size_t> not_compiled;            ///< indices of the functions the deadline left out
    std::vector<std::filesystem::path> objects;  ///< compile_aot_objects: the objects to archive
};

/** Functions lowered and linked into one LLVM module per this many: a module's fixed cost in
 * LLVM is paid per chunk, and a deadline is overshot by one chunk per worker at most. */
constexpr size_t kAotChunkFunctions = 32;

/** Writes `<library>.a` holding the functions and one Halide runtime, and a header `<name>.h` per
 * function that is not internal (with aot_error_recorder_section). A function with same_code_as
 * is an alias of that function's code: thunks and a renamed header, written when its code is
 * (the target must satisfy aliases_supported(); the code's constants_argument receives an
 * alias's constants). The functions are lowered one by one and linked
 * kAotChunkFunctions at a time into one module, compiled by LLVM once per chunk; chunks are
 * compiled by `threads` workers (0: one per hardware thread). With a deadline, a function whose
 * lowering would start after it is left out (AotLibrary::not_compiled); the rest is a valid
 * library. */
AotLibrary compile_aot_library(const std::vector<AotFunction> &functions, const Halide::Target &target,
                               const std::string &library, const std::filesystem::path &dir,
                               std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt, int threads = 0);

/** compile_aot_library's functions without a runtime or an archive: objects (the chunks', the
 * aliases') in `work`, named `<prefix>...`, so that objects for several targets can share one
 * archive; headers in `dir`. */
AotLibrary compile_aot_objects(const std::vector<AotFunction> &functions, const Halide::Target &target,
                               const std::filesystem::path &dir, const std::filesystem::path &work, const std::string &prefix,
                               std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt, int threads = 0);

/** The PTX Halide generates for the GPU kernels of a CUDA pipeline. */
std::string generate_ptx(const Halide::Pipeline &pipeline, const std::vector<Halide::Argument> &args,
                         const Halide::Target &target, const std::string &name);

}  // namespace tessel
