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
 * linked as a shared object (-Bsymbolic: its runtime never binds to another's), plus its record
 * `<hash>.key`: the key text, then the object's size in bytes and its SHA-256. Nothing is
 * dlopen'ed (code Tessel would run) unless the record's key is the request's and the object's
 * size and content hash are the record's: a truncated, corrupted, swapped or planted object, or
 * a record written for another target, Halide or build, is compiled again and replaced, with
 * one line saying why (Result::note). A load opens it RTLD_LOCAL and installs, through the
 * entry's own runtime, the parallel loop the JIT uses (codegen/ParallelLoop.h) and an error
 * handler that records the message for last_halide_error() instead of aborting. Writes go to a
 * private temporary directory and are renamed into place (the object before its record), so
 * concurrent processes never see half an entry and a reader never trusts an object its record
 * does not describe. (The object is checked, then opened by its path: a file renamed in between
 * is another Tessel process's kernel for the same key.)
 *
 * A directory that cannot be written is used read-only: its entries are loaded, new kernels are
 * compiled in memory and not stored. Below kMinFreeBytes free (a full disk) nothing is written
 * either: LLVM aborts the process on a failed write.
 *
 * A second tier shared between hosts (SharedKernelStore; the tuning server's, when --db names one:
 * autoscheduler/PostgresKernelStore.h) holds the same entries by the same hash: a local miss
 * fetches the entry, checks it exactly as a local one (key text, size, SHA-256) and installs it
 * in the directory before loading it; a kernel compiled here is stored there too. An entry that
 * does not check out is never loaded: it is compiled again and replaced, with a note. A shared
 * tier that fails (server down, read-only role) only costs a note; the local cache carries on.
 *
 * Deferred stores (Options::defer_stores, for commands whose first result should come quickly:
 * `tessel run`, `tessel demo`): a miss compiles nothing ahead of time; get() returns no kernel
 * and queues the entry, the caller JIT-compiles the kernel to run now (Halide's JIT is several
 * times faster than compiling an object with its own runtime and linking it), and
 * store_deferred(), at the end of the command, compiles and stores the queued entries. A process
 * that ends before then stores nothing (and loses nothing but the next run's speed).
 *
 * Only CPU targets are cached (GPU kernels keep Halide's JIT). The cache is off unless a
 * command turns it on (KernelCache::activate); tests and tools that build many one-off kernels
 * do not fill a directory.
 */
#pragma once

#include <Halide.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
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

/** Entries shared between hosts, by key hash: the record text (key, object size, SHA-256) and the
 * object. Implementations check nothing; KernelCache checks what it fetches. Thread-safe. */
class SharedKernelStore {
public:
    virtual ~SharedKernelStore() = default;
    struct Entry {
        std::string record, object;
    };
    virtual std::optional<Entry> fetch(const std::string &hash) = 0;
    /** Stores or replaces the entry of `hash`. */
    virtual void store(const std::string &hash, const std::string &record, const std::string &object) = 0;
    /** Where the entries live, for notes ("postgresql://user@host:port/db"). */
    virtual std::string location() const = 0;
};

class KernelCache {
public:
    struct Options {
        bool read_only = false;  ///< load entries, never write one
        /** Free bytes below which nothing is written; kernels are a few MiB at most. */
        uint64_t min_free_bytes = uint64_t(256) << 20;
        std::shared_ptr<SharedKernelStore> shared;  ///< a second tier shared between hosts, or null
        bool defer_stores = false;                  ///< a miss is queued for store_deferred() (file comment)
    };
    explicit KernelCache(std::filesystem::path dir) : KernelCache(std::move(dir), Options()) {}
    KernelCache(std::filesystem::path dir, Options options);

    struct Result {
        std::shared_ptr<const LoadedKernel> kernel;
        bool hit = false;
        bool shared_hit = false;  ///< installed from the shared tier (then `hit` too)
        double seconds = 0;       ///< loading (hit) or compiling, linking and loading (miss)
        /** One line when an entry was found and not used ("... replaced: its object is 812 bytes,
         * its record says 20480 (truncated or replaced)"), or when the kernel is not stored. */
        std::string note;
    };
    /** The kernel `description` names, loaded from the cache or compiled into it first; no
     * kernel (null) when the disk has too little room to cache it (LLVM would abort the process
     * on a failed write), and the caller compiles it in memory. Throws CompileError when
     * compiling or linking fails. */
    Result get(const std::string &description, const Halide::Pipeline &pipeline, const std::vector<Halide::Argument> &args,
               const Halide::Target &target, const std::string &name);

    const std::filesystem::path &directory() const { return dir_; }

    struct DeferredStores {
        int stored = 0;
        double seconds = 0;
        std::string notes;  ///< one line per entry that could not be stored
    };
    /** Compiles and stores the entries queued by misses since the last call (defer_stores);
     * never throws: an entry that fails is a note. */
    DeferredStores store_deferred();

    /** Turns the process-wide cache on (at `dir`) or off (nullopt). Returns a note when it cannot
     * be on (no build ID, no directory) or is read-only (a directory that cannot be written), ""
     * otherwise. */
    static std::string activate(const std::optional<std::filesystem::path> &dir,
                                std::shared_ptr<SharedKernelStore> shared = nullptr, bool defer_stores = false);
    /** The active cache, or nullptr. */
    static KernelCache *active();

    /** The running executable's GNU build ID as hex, "" when it has none. */
    static std::string executable_build_id();

    bool read_only() const { return options_.read_only; }

private:
    std::filesystem::path dir_;
    Options options_;
    Result get(const std::string &description, const Halide::Pipeline &pipeline, const std::vector<Halide::Argument> &args,
               const Halide::Target &target, const std::string &name, bool defer);
    struct Pending {
        std::string description, name;
        Halide::Pipeline pipeline;
        std::vector<Halide::Argument> args;
        Halide::Target target;
    };
    std::mutex pending_lock_;
    std::vector<Pending> pending_;
};

/** What `--kernel-cache SETTING` of `tessel run` and `tessel demo` means: "" = on, in
 * `<tuning database path>.kernels` (next to the database; for a database on a server,
 * `$XDG_CACHE_HOME/tessel/kernels` or `~/.cache/tessel/kernels`); "off"; else a directory. Activates
 * it (with deferred stores: those commands want their first result quickly; they call
 * store_deferred() at their end) and returns KernelCache::activate's note. */
std::string use_kernel_cache(const std::string &setting, const std::string &db_path,
                             std::shared_ptr<SharedKernelStore> shared = nullptr);

/** The active cache's store_deferred() as the lines a command prints at its end: how many
 * kernels compiled this run were stored and how long that took, and any entry's note; "" when
 * no cache is active or nothing was queued. */
std::string store_deferred_kernels();

}  // namespace tessel
