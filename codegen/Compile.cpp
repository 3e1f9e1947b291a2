#include "codegen/Compile.h"

#include "support/Clock.h"
#include "support/Subprocess.h"

#include "codegen/KernelAliases.h"
#include "codegen/KernelCache.h"
#include "codegen/ParallelRuntime.h"
#include "codegen/ProgramFunctions.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace tessel {

namespace fs = std::filesystem;

namespace {

template <typename Fn>
auto with_halide_errors(const std::string &what, Fn fn) -> decltype(fn()) {
    try {
        return fn();
    } catch (const Halide::Error &e) {
        throw CompileError(what + " failed in Halide: " + std::string(e.what()));
    }
}

thread_local std::string t_last_error;

void capture_halide_error(Halide::JITUserContext *, const char *msg) { record_halide_error(msg); }

}  // namespace

void record_halide_error(const char *msg) {
    t_last_error = msg ? msg : "";
    while (!t_last_error.empty() && t_last_error.back() == '\n') t_last_error.pop_back();
}

std::string last_halide_error() { return t_last_error.empty() ? "unknown Halide runtime error" : t_last_error; }

Halide::Target parse_target(const std::string &text) {
    return with_halide_errors("parsing target '" + text + "'", [&] {
        if (text == "host") return Halide::get_host_target();
        if (text == "host-cuda")
            return Halide::get_host_target().with_feature(Halide::Target::CUDA).with_feature(Halide::Target::CUDACapability86);
        std::string spec = text;
        if (spec.rfind("host-", 0) == 0) {
            // Halide accepts "host-<features>"; keep it, but validate explicitly for a clear error.
        }
        if (!Halide::Target::validate_target_string(spec))
            throw CompileError("unknown target '" + text +
                               "': expected 'host', 'host-cuda' or a Halide target string such as "
                               "'x86-64-linux-avx2-fma' or 'host-cuda-cuda_capability_86'");
        return Halide::Target(spec);
    });
}

namespace {

/** Halide builds its JIT runtime from bitcode on a process's first JIT compile (about 0.4 s of
 * LLVM): started on another thread, once per process, it is built while this thread lowers the
 * first pipeline, which then waits only for what is left. The trivial pipeline compiled there
 * shares nothing with the caller's (Halide's compiler is thread-safe for distinct pipelines).
 * Every compile_jit waits for the warm-up before it returns (or throws): a process may exit right
 * after its first kernel, and LLVM still compiling on another thread while the exit destroys
 * LLVM's statics aborts inside LLVM. */
std::shared_future<void> start_jit_runtime(const Halide::Target &target) {
    static std::once_flag once;
    static std::shared_future<void> building;
    std::call_once(once, [&] {
        building = std::async(std::launch::async, [target] {
                       try {
                           Halide::Func f("tessel_jit_runtime_warmup");
                           Halide::Var x("x");
                           f(x) = x;
                           f.compile_jit(target);
                       } catch (...) {
                           // The caller's own compile reports whatever is wrong with the target.
                       }
                   }).share();
    });
    return building;
}

/** Waits for the JIT runtime warm-up when the scope ends, however it ends. */
class JitRuntimeWait {
public:
    explicit JitRuntimeWait(std::shared_future<void> building) : building_(std::move(building)) {}
    JitRuntimeWait(const JitRuntimeWait &) = delete;
    JitRuntimeWait &operator=(const JitRuntimeWait &) = delete;
    ~JitRuntimeWait() {
        if (building_.valid()) building_.wait();
    }

private:
    std::shared_future<void> building_;
};

}  // namespace

JitKernel compile_jit(const Halide::Pipeline &pipeline, const std::vector<Halide::Argument> &args, const Halide::Target &target,
                      const std::string &name, const std::string &description) {
    if (KernelCache *cache = KernelCache::active(); cache && !description.empty() && !target.has_gpu_feature()) {
        KernelCache::Result r = cache->get(description, pipeline, args, target, name);
        if (r.kernel) {
            JitKernel k;
            k.loaded = std::move(r.kernel);
            k.from_cache = r.hit;
            k.compile_seconds = r.seconds;
            k.cache_note = r.note;
            return k;
        }
        JitKernel k = compile_jit(pipeline, args, target, name, "");
        k.cache_note = r.note;
        return k;
    }
    JitRuntimeWait runtime_ready(target.has_gpu_feature() ? std::shared_future<void>() : start_jit_runtime(target));
    return with_halide_errors("JIT compiling '" + name + "' for " + target.to_string(), [&] {
        tessel::SteadyClock::time_point t0 = tessel::SteadyClock::now();
        Halide::Pipeline p = pipeline;
        p.jit_handlers().custom_error = capture_halide_error;
        use_openmp_parallel_runtime(p.jit_handlers());
        JitKernel k{p.compile_to_callable(args, target), 0};
        k.compile_seconds = tessel::seconds_since(t0);
        return k;
    });
}

namespace {
const std::pair<AotOutput, const char *> kOutputs[] = {
    {AotOutput::StaticLibrary, "lib"}, {AotOutput::Header, "h"},      {AotOutput::Object, "o"}, {AotOutput::Assembly, "asm"},
    {AotOutput::Stmt, "stmt"},         {AotOutput::StmtHtml, "html"}, {AotOutput::Ptx, "ptx"}};
}

std::string to_string(AotOutput o) {
    for (const auto &[v, n] : kOutputs)
        if (v == o) return n;
    return "?";
}

AotOutput parse_aot_output(const std::string &s) {
    std::string known;
    for (const auto &[v, n] : kOutputs) {
        if (s == n) return v;
        known += (known.empty() ? "" : ", ") + std::string(n);
    }
    throw CompileError("unknown output '" + s + "' (expected one of: " + known + ")");
}

std::string generate_ptx(const Halide::Pipeline &pipeline, const std::vector<Halide::Argument> &args,
                         const Halide::Target &target, const std::string &name) {
    if (!target.has_feature(Halide::Target::CUDA))
        throw CompileError("PTX needs a CUDA target; '" + target.to_string() + "' has no 'cuda' feature");
    return with_halide_errors("generating PTX for '" + name + "'", [&] {
        Halide::Module m = Halide::Pipeline(pipeline).compile_to_module(args, name, target);
        for (const auto &b : m.buffers()) {
            if (b.name().find("gpu_source_kernels") != std::string::npos) {
                const char *data = reinterpret_cast<const char *>(b.data());
                std::string ptx(data, b.size_in_bytes());
                while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
                return ptx;
            }
        }
        throw CompileError("Halide produced no GPU kernels for '" + name +
                           "': is any loop scheduled with gpu_blocks/gpu_threads?");
    });
}

std::string aot_error_recorder_section(const std::string &name) {
    return R"(
/* ---- Added by Tessel: errors without abort() -------------------------------------------------
 * Halide's default runtime error handler prints the message and calls abort(), which ends the
 * caller's process when, for example, a buffer is too small for the call. To get an error code
 * back instead -- the function then returns non-zero before it reads or writes anything out of
 * bounds -- call tessel_install_error_recorder() once, before the first call; afterwards
 * tessel_last_error() holds the message of this thread's last error:
 *
 *   tessel_install_error_recorder();
 *   if ()" +
           name + R"((...buffers...) != 0) fprintf(stderr, "%s\n", tessel_last_error());
 *
 * The recorder replaces the process-wide handler of the Halide runtime (halide_set_error_handler);
 * a program may install its own handler the same way instead, or define halide_error() itself
 * (the runtime's definition is weak). Messages are cut at 4095 bytes.
 */
#ifndef TESSEL_ERROR_RECORDER_DEFINED
#define TESSEL_ERROR_RECORDER_DEFINED
#ifdef __cplusplus
#define TESSEL_ERROR_INLINE inline
#define TESSEL_ERROR_THREAD_LOCAL thread_local
#else
#define TESSEL_ERROR_INLINE static inline
#define TESSEL_ERROR_THREAD_LOCAL _Thread_local
#endif
TESSEL_ERROR_INLINE char *tessel_error_buffer(void) {
    static TESSEL_ERROR_THREAD_LOCAL char buffer[4096];
    return buffer;
}
TESSEL_ERROR_INLINE void tessel_record_error(void *user_context, const char *msg) {
    char *b = tessel_error_buffer();
    int i = 0;
    (void)user_context;
    for (; msg && msg[i] && i < 4095; i++) b[i] = msg[i];
    while (i > 0 && b[i - 1] == '\n') i--;
    b[i] = 0;
}
TESSEL_ERROR_INLINE const char *tessel_last_error(void) { return tessel_error_buffer(); }
TESSEL_ERROR_INLINE void tessel_install_error_recorder(void) { halide_set_error_handler(tessel_record_error); }
#endif /* TESSEL_ERROR_RECORDER_DEFINED */
)";
}

namespace {

/** The code functions' arguments in call order, as compiled (outputs included), by function index. */
using CodeArguments = std::vector<std::vector<Halide::Argument>>;

/** The aliases among `functions` whose code was compiled, each with its header written into
 * `dir` (recorded in `lib`); an alias of code the deadline left out is left out too. Internal
 * code's headers are removed. */
std::vector<KernelAlias> write_alias_headers(const std::vector<AotFunction> &functions, const CodeArguments &arguments,
                                             const std::string &target, AotLibrary &lib, const fs::path &dir) {
    std::set<size_t> skipped(lib.not_compiled.begin(), lib.not_compiled.end());
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < functions.size(); i++) index.emplace(functions[i].name, i);
    std::vector<KernelAlias> aliases;
    for (size_t i = 0; i < functions.size(); i++) {
        const AotFunction &f = functions[i];
        if (f.same_code_as.empty()) continue;
        const auto code = index.find(f.same_code_as);
        if (code == index.end() || code->second >= i || !functions[code->second].same_code_as.empty())
            throw CompileError("function '" + f.name + "' is an alias of '" + f.same_code_as +
                               "', which is not a compiled function before it in the library");
        if (skipped.count(code->second)) {
            lib.not_compiled.push_back(i);
            continue;
        }
        KernelAlias alias{f.name, f.same_code_as, arguments[code->second], f.constants, 0, target};
        if (!f.constants.empty()) {
            const auto &args = alias.code_arguments;
            const std::string &name = functions[code->second].constants_argument;
            const auto c = std::find_if(args.begin(), args.end(), [&](const Halide::Argument &a) { return a.name == name; });
            if (name.empty() || c == args.end())
                throw CompileError("function '" + f.name + "' passes constants to '" + f.same_code_as + "', which takes none");
            alias.constants_argument = (size_t)(c - args.begin());
        }
        std::ifstream in(dir / (f.same_code_as + ".h"));
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const fs::path h = dir / (f.name + ".h");
        std::ofstream out(h);
        out << alias_header(text, alias);
        if (!in || !out) throw CompileError("cannot write the header of alias " + f.name + " to " + h.string());
        lib.written.push_back(h);
        aliases.push_back(std::move(alias));
    }
    std::sort(lib.not_compiled.begin(), lib.not_compiled.end());
    for (const AotFunction &f : functions) {
        std::error_code ignored;
        if (f.internal) fs::remove(dir / (f.name + ".h"), ignored);
    }
    return aliases;
}

}  // namespace

AotLibrary compile_aot_objects(const std::vector<AotFunction> &functions, const Halide::Target &target, const fs::path &dir,
                               const fs::path &work, const std::string &prefix,
                               std::optional<std::chrono::steady_clock::time_point> deadline, int threads) {
    for (const AotFunction &f : functions)
        if (!f.same_code_as.empty() && !aliases_supported(target))
            throw CompileError("function '" + f.name + "' is an alias, and " + target.to_string() +
                               " code cannot take aliases (x86-64 only)");
    fs::create_directories(dir);
    fs::create_directories(work);
    const Halide::Target without_runtime = target.with_feature(Halide::Target::NoRuntime);
    const size_t chunks = (functions.size() + kAotChunkFunctions - 1) / kAotChunkFunctions;
    struct Chunk {
        std::vector<fs::path> headers;
        std::vector<size_t> skipped;  // past the deadline
        fs::path object;              // empty: nothing compiled
        std::exception_ptr error;
    };
    std::vector<Chunk> done(chunks);
    CodeArguments arguments(functions.size());  // each worker fills its own functions' entries
    // Each chunk is lowered and compiled by one worker (Halide compiles independent pipelines
    // on several threads; each worker owns its modules); results are merged in chunk order.
    std::atomic<size_t> next{0};
    auto worker = [&] {
        for (size_t c; (c = next++) < chunks;) {
            Chunk &chunk = done[c];
            try {
                std::vector<Halide::Module> modules;
                for (size_t i = c * kAotChunkFunctions; i < std::min(functions.size(), (c + 1) * kAotChunkFunctions); i++) {
                    const AotFunction &f = functions[i];
                    if (!f.same_code_as.empty()) continue;  // an alias: written below, with its code
                    if (f.program) continue;                // a program: written below, as data
                    if (deadline && std::chrono::steady_clock::now() > *deadline) {
                        chunk.skipped.push_back(i);
                        continue;
                    }
                    modules.push_back(with_halide_errors(
                        "compiling '" + f.name + "' ahead of time for " + target.to_string(),
                        [&] { return Halide::Pipeline(f.pipeline).compile_to_module(f.arguments, f.name, without_runtime); }));
                    for (const auto &lowered : modules.back().functions())
                        if (lowered.name == f.name) arguments[i].assign(lowered.args.begin(), lowered.args.end());
                    const fs::path h = dir / (f.name + ".h");  // an internal one is removed once its aliases' are written
                    modules.back().compile({{Halide::OutputFileType::c_header, h.string()}});
                    std::ofstream out(h, std::ios::app);
                    out << aot_error_recorder_section(f.name);
                    if (!out) throw CompileError("cannot append the error recorder to " + h.string());
                    if (!f.internal) chunk.headers.push_back(h);
                }
                if (modules.empty()) continue;
                chunk.object = work / (prefix + "functions" + std::to_string(c) + ".o");
                with_halide_errors("compiling the functions for " + target.to_string(), [&] {
                    Halide::Module linked = Halide::link_modules(prefix + "functions" + std::to_string(c), modules);
                    // link_modules drops the flag: without it LLVM compiles strict_float code (IEEE
                    // special values, the causal mask's -inf) under fast-math flags.
                    linked.set_any_strict_float(std::any_of(modules.begin(), modules.end(),
                                                            [](const Halide::Module &m) { return m.any_strict_float(); }));
                    linked.compile({{Halide::OutputFileType::object, chunk.object.string()}});
                    return 0;
                });
            } catch (...) {
                chunk.error = std::current_exception();
            }
        }
    };
    const int n = std::max(1, std::min<int>(threads > 0 ? threads : (int)std::thread::hardware_concurrency(), (int)chunks));
    std::vector<std::thread> pool;
    for (int t = 1; t < n; t++) pool.emplace_back(worker);
    worker();
    for (std::thread &t : pool) t.join();

    AotLibrary result;
    for (const Chunk &chunk : done) {
        if (chunk.error) std::rethrow_exception(chunk.error);
        result.written.insert(result.written.end(), chunk.headers.begin(), chunk.headers.end());
        result.not_compiled.insert(result.not_compiled.end(), chunk.skipped.begin(), chunk.skipped.end());
        if (!chunk.object.empty()) result.objects.push_back(chunk.object);
    }
    const ProgramObjects programs = compile_program_functions(functions, without_runtime, dir, work, prefix);
    result.written.insert(result.written.end(), programs.headers.begin(), programs.headers.end());
    result.objects.insert(result.objects.end(), programs.objects.begin(), programs.objects.end());
    if (const std::vector<KernelAlias> aliases =
            write_alias_headers(functions, arguments, without_runtime.to_string(), result, dir);
        !aliases.empty())
        result.objects.push_back(assemble_alias_thunks(aliases, work, prefix + "aliases"));
    return result;
}

AotLibrary compile_aot_library(const std::vector<AotFunction> &functions, const Halide::Target &target,
                               const std::string &library, const fs::path &dir,
                               std::optional<std::chrono::steady_clock::time_point> deadline, int threads) {
    const fs::path work = dir / (library + ".objects");
    AotLibrary result;
    try {
        result = compile_aot_objects(functions, target, dir, work, "", deadline, threads);
    } catch (...) {
        std::error_code ignored;
        fs::remove_all(work, ignored);
        throw;
    }
    std::vector<std::string> archive = {"ar", "rcs", (dir / (library + ".a")).string()};
    for (const fs::path &o : result.objects) archive.push_back(o.string());
    const fs::path runtime = work / "halide_runtime.o";
    with_halide_errors("compiling the Halide runtime for " + target.to_string(), [&] {
        Halide::compile_standalone_runtime(runtime.string(), target.without_feature(Halide::Target::NoRuntime));
        return 0;
    });
    archive.push_back(runtime.string());
    fs::remove(archive[2]);
    if (const SubprocessResult r = run_subprocess(archive); !r.ok())
        throw CompileError("archiving the library failed: " + format_command(archive) + "\n" + r.output);
    fs::remove_all(work);
    result.objects.clear();
    result.written.push_back(archive[2]);
    return result;
}

std::vector<fs::path> compile_aot(const Halide::Pipeline &pipeline, const std::vector<Halide::Argument> &args,
                                  const Halide::Target &target, const std::string &name, const fs::path &dir,
                                  const std::set<AotOutput> &outputs) {
    fs::create_directories(dir);
    std::map<Halide::OutputFileType, std::string> files;
    std::vector<fs::path> written;
    auto want = [&](AotOutput o, Halide::OutputFileType t, const std::string &ext) {
        if (!outputs.count(o)) return;
        files[t] = (dir / (name + ext)).string();
        written.push_back(files[t]);
    };
    want(AotOutput::StaticLibrary, Halide::OutputFileType::static_library, ".a");
    want(AotOutput::Header, Halide::OutputFileType::c_header, ".h");
    want(AotOutput::Object, Halide::OutputFileType::object, ".o");
    want(AotOutput::Assembly, Halide::OutputFileType::assembly, ".s");
    want(AotOutput::Stmt, Halide::OutputFileType::stmt, ".stmt");
    want(AotOutput::StmtHtml, Halide::OutputFileType::stmt_html, ".stmt.html");
    if (!files.empty()) {
        with_halide_errors("compiling '" + name + "' ahead of time for " + target.to_string(), [&] {
            Halide::Pipeline(pipeline).compile_to(files, args, name, target);
            return 0;
        });
        if (files.count(Halide::OutputFileType::c_header)) {
            std::ofstream h(files[Halide::OutputFileType::c_header], std::ios::app);
            h << aot_error_recorder_section(name);
            if (!h) throw CompileError("cannot append the error recorder to " + files[Halide::OutputFileType::c_header]);
        }
    }
    if (outputs.count(AotOutput::Ptx)) {
        fs::path p = dir / (name + ".ptx");
        std::ofstream(p) << generate_ptx(pipeline, args, target, name);
        written.push_back(p);
    }
    return written;
}

}  // namespace tessel
