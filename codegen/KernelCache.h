/** \file
 * The compiled-kernel cache: CPU kernels compiled once, kept on disk as shared objects, and
 * loaded by later processes instead of being compiled again, so a second `tessel run` or
 * `tessel demo` with a tuning-database hit compiles nothing.
 *
 * Key: a 128-bit hash of a text that names everything deciding the code — the caller's
 * description of the kernel (CompiledKernel gives the printed graph, the group, the variant's
 * schedule and its name), the Halide target, Halide's version and the GNU build ID of the
 * running executable (which changes with every change to Tessel's code, lowering included; an
 * executable without one gets no cache, with a note). The key text is stored beside the entry
 * and compared on load, so a hash collision is a miss, not a wrong kernel.
 *
 * Entry: `<dir>/<hash>.so`, the pipeline compiled ahead of time with its own Halide runtime and
 * linked as a shared object (-Bsymbolic: its runtime never binds to another's), plus
 * `<hash>.key`. A load opens it RTLD_LOCAL and installs, through the entry's own runtime, the
 * parallel loop the JIT uses (codegen/ParallelLoop.h) and an error handler that records the
 * message for last_halide_error() instead of aborting. Writes go to a private temporary
 * directory and are renamed into place, so concurrent processes never see half an entry; an
 * entry that does not load (truncated, foreign) is compiled again and replaced.
 *
 * Only CPU targets are cached (GPU kernels keep Halide's JIT). The cache is off unless a
 * command turns it on (KernelCache::activate); tests and tools that build many one-off kernels
 * do not fill a directory.
 */
#pragma once

#include <Halide.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessel {

/** A kernel loaded from the cache: call(args) runs `<name>_argv`. */
class LoadedKernel {
public:
    LoadedKernel(void *handle, int (*argv_function)(void **)) : handle_(handle), argv_(argv_function) {}
    ~LoadedKernel();
    LoadedKernel(const LoadedKernel &) = delete;
    LoadedKernel &operator=(const LoadedKernel &) = delete;
    /** `args`: one halide_buffer_t* per pipeline argument, in order. Returns Halide's status. */
    int call(void **args) const { return argv_(args); }

private:
    void *handle_;
    int (*argv_)(void **);
};

class KernelCache {
public:
    explicit KernelCache(std::filesystem::path dir);

    struct Result {
        std::shared_ptr<const LoadedKernel> kernel;
        bool hit = false;
        double seconds = 0;  ///< loading (hit) or compiling, linking and loading (miss)
    };
    /** The kernel `description` names, loaded from the cache or compiled into it first; no
     * kernel (null) when the disk has too little room to cache it (LLVM would abort the process
     * on a failed write), and the caller compiles it in memory. Throws CompileError when
     * compiling or linking fails. */
    Result get(const std::string &description, const Halide::Pipeline &pipeline, const std::vector<Halide::Argument> &args,
               const Halide::Target &target, const std::string &name);

    const std::filesystem::path &directory() const { return dir_; }

    /** Turns the process-wide cache on (at `dir`) or off (nullopt). Returns a note when it cannot
     * be on (no build ID, directory not writable), "" otherwise. */
    static std::string activate(const std::optional<std::filesystem::path> &dir);
    /** The active cache, or nullptr. */
    static KernelCache *active();

    /** The running executable's GNU build ID as hex, "" when it has none. */
    static std::string executable_build_id();

private:
    std::filesystem::path dir_;
};

/** What `--kernel-cache SETTING` of `tessel run` and `tessel demo` means: "" = on, in
 * `<tuning database path>.kernels` (next to the database); "off"; else a directory. Activates
 * it and returns KernelCache::activate's note. */
std::string use_kernel_cache(const std::string &setting, const std::string &db_path);

}  // namespace tessel
