// Map: key (hash of the description + target + versions + build ID) -> load (dlopen, the key
// text compared, runtime hooks installed) -> miss: compile_to_object, link -shared, rename into
// place -> the process-wide cache.
#include "codegen/KernelCache.h"

#include "codegen/Compile.h"
#include "codegen/ParallelRuntime.h"
#include "support/Clock.h"
#include "support/Subprocess.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <openssl/evp.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <cstdlib>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <sstream>

namespace tessel {

namespace fs = std::filesystem;

namespace {

uint64_t fnv1a(const std::string &s, uint64_t h) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

std::string hex(uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
    return buf;
}

std::string read_file(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string sha256_hex(const std::string &bytes) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr) != 1)
        throw CompileError("kernel cache: SHA-256 failed (OpenSSL)");
    std::string h;
    for (unsigned i = 0; i < n; i++) {
        char b[3];
        std::snprintf(b, sizeof b, "%02x", md[i]);
        h += b;
    }
    return h;
}

/** The record written beside an object: the key, the object's size and content hash. */
std::string record_text(const std::string &key, const std::string &object) {
    return key + "object-bytes " + std::to_string(object.size()) + "\nobject-sha256 " + sha256_hex(object) + "\n";
}

/** Why `record` does not describe `object` as the entry of `key`; "" when it does. */
std::string record_mismatch(const std::string &record, const std::string &key, const std::string &object) {
    const size_t at = record.rfind("object-bytes ");
    if (record.empty() || at == std::string::npos) return "it has no complete record";
    if (record.compare(0, at, key) != 0) {
        // Name the first line that differs: a target, a Halide version, a build.
        std::istringstream want(key), got(record.substr(0, at));
        std::string w, g;
        while (true) {
            const bool more_w = bool(std::getline(want, w)), more_g = bool(std::getline(got, g));
            if (!more_w && !more_g) break;
            if (w != g || more_w != more_g)
                return "its record is for '" + (more_g ? g.substr(0, 120) : "") + "' where this kernel needs '" +
                       (more_w ? w.substr(0, 120) : "") + "'";
        }
        return "its record is for another kernel";
    }
    if (record.compare(at, std::string::npos, record_text("", object)) == 0) return "";
    const std::string size = "object-bytes " + std::to_string(object.size()) + "\n";
    if (record.compare(at, size.size(), size) != 0)
        return "its object is " + std::to_string(object.size()) + " bytes, not the size its record gives (truncated or replaced)";
    return "its object's SHA-256 is not its record's (corrupted or replaced)";
}

void record_error(void *, const char *msg) { record_halide_error(msg); }

/** Opens entry `so` (already checked against its record) and checks it is the kernel `name`;
 * nullptr (with `why`) when it is not usable. */
std::shared_ptr<const LoadedKernel> load(const fs::path &so, const std::string &name, std::string *why) {
    void *h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        *why = std::string("it does not load: ") + dlerror();
        return nullptr;
    }
    using SetParFor = halide_do_par_for_t (*)(halide_do_par_for_t);
    using SetError = halide_error_handler_t (*)(halide_error_handler_t);
    auto argv = reinterpret_cast<int (*)(void **)>(dlsym(h, (name + "_argv").c_str()));
    auto set_par_for = reinterpret_cast<SetParFor>(dlsym(h, "halide_set_custom_do_par_for"));
    auto set_error = reinterpret_cast<SetError>(dlsym(h, "halide_set_error_handler"));
    if (!argv || !set_par_for || !set_error) {
        *why = "it lacks " + name + "_argv or the Halide runtime";
        dlclose(h);
        return nullptr;
    }
    set_par_for(openmp_do_par_for);
    set_error(record_error);
    return std::make_shared<LoadedKernel>(h, argv);
}

/** The entry `so` with record `key_file` loaded if the record is `key`'s and describes the
 * object; else nullptr with `why`. */
std::shared_ptr<const LoadedKernel> load_checked(const fs::path &so, const fs::path &key_file, const std::string &key,
                                                 const std::string &name, std::string *why) {
    if (!fs::exists(so)) {
        *why = "its object is missing";
        return nullptr;
    }
    if (!(*why = record_mismatch(read_file(key_file), key, read_file(so))).empty()) return nullptr;
    return load(so, name, why);
}

bool has_room(const fs::path &dir, uint64_t min_free_bytes) {
    struct statvfs v {};
    return statvfs(dir.c_str(), &v) == 0 && (uint64_t)v.f_bavail * v.f_frsize >= min_free_bytes;
}

std::mutex g_active_lock;
std::unique_ptr<KernelCache> g_active;

}  // namespace

LoadedKernel::~LoadedKernel() { dlclose(handle_); }

KernelCache::KernelCache(fs::path dir, Options options) : dir_(std::move(dir)), options_(options) {}

std::string KernelCache::executable_build_id() {
    std::string id;
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *out) -> int {
            // The first object is the executable itself.
            for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) &ph = info->dlpi_phdr[i];
                if (ph.p_type != PT_NOTE) continue;
                const char *p = reinterpret_cast<const char *>(info->dlpi_addr + ph.p_vaddr), *end = p + ph.p_memsz;
                while (p + sizeof(ElfW(Nhdr)) <= end) {
                    const auto *n = reinterpret_cast<const ElfW(Nhdr) *>(p);
                    const char *name = p + sizeof(ElfW(Nhdr));
                    const char *desc = name + ((n->n_namesz + 3) & ~3u);
                    if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::string(name, 3) == "GNU") {
                        std::string &s = *static_cast<std::string *>(out);
                        for (unsigned k = 0; k < n->n_descsz; k++) {
                            char b[3];
                            std::snprintf(b, sizeof b, "%02x", (unsigned char)desc[k]);
                            s += b;
                        }
                        return 1;
                    }
                    p = desc + ((n->n_descsz + 3) & ~3u);
                }
            }
            return 1;
        },
        &id);
    return id;
}

KernelCache::Result KernelCache::get(const std::string &description, const Halide::Pipeline &pipeline,
                                     const std::vector<Halide::Argument> &args, const Halide::Target &target,
                                     const std::string &name) {
    return get(description, pipeline, args, target, name, options_.defer_stores);
}

KernelCache::Result KernelCache::get(const std::string &description, const Halide::Pipeline &pipeline,
                                     const std::vector<Halide::Argument> &args, const Halide::Target &target,
                                     const std::string &name, bool defer) {
    const tessel::SteadyClock::time_point t0 = tessel::SteadyClock::now();
    static const std::string build_id = executable_build_id();
    const std::string key = description + "\nfunction " + name + "\ntarget " + target.to_string() + "\nhalide " +
                            std::to_string(HALIDE_VERSION_MAJOR) + "." + std::to_string(HALIDE_VERSION_MINOR) + "." +
                            std::to_string(HALIDE_VERSION_PATCH) + "\nexecutable " + build_id + "\n";
    const std::string hash = hex(fnv1a(key, 0xcbf29ce484222325ull)) + hex(fnv1a(key, 0x84222325cbf29ce4ull));
    const fs::path so = dir_ / (hash + ".so"), key_file = dir_ / (hash + ".key");
    Result r;
    std::string why;
    if (fs::exists(so) || fs::exists(key_file)) {
        if ((r.kernel = load_checked(so, key_file, key, name, &why))) {
            r.hit = true;
            r.seconds = seconds_since(t0);
            return r;
        }
        r.note = "kernel cache: entry " + hash + " of " + name + " not used: " + why + "; " +
                 (options_.read_only ? "compiled in memory (read-only cache)" : "compiled again and replaced");
    }
    // The shared tier: an entry another host compiled, checked like a local one, installed here.
    const auto add_note = [&r](const std::string &n) { r.note += (r.note.empty() ? "" : "\n") + n; };
    if (options_.shared && !options_.read_only && has_room(dir_, options_.min_free_bytes)) {
        try {
            if (auto e = options_.shared->fetch(hash)) {
                if (const std::string bad = record_mismatch(e->record, key, e->object); !bad.empty()) {
                    add_note("kernel cache: shared entry " + hash + " of " + name + " on " + options_.shared->location() +
                             " not used: " + bad + "; compiled again and replaced");
                } else {
                    static std::atomic<int> fetched{0};
                    const fs::path tmp = dir_ / ("fetch-" + std::to_string(::getpid()) + "-" + std::to_string(fetched++));
                    fs::create_directories(tmp);
                    std::ofstream(tmp / "so", std::ios::binary) << e->object;
                    std::ofstream(tmp / "key", std::ios::binary) << e->record;
                    fs::rename(tmp / "so", so);
                    fs::rename(tmp / "key", key_file);
                    fs::remove_all(tmp);
                    if ((r.kernel = load_checked(so, key_file, key, name, &why))) {
                        r.hit = r.shared_hit = true;
                        r.seconds = seconds_since(t0);
                        return r;
                    }
                    add_note("kernel cache: shared entry " + hash + " of " + name + " not used: " + why);
                }
            }
        } catch (const std::exception &e) {
            add_note(std::string("kernel cache: the shared tier failed (") + e.what() + "); compiled here");
        }
    }
    if (options_.read_only) return r;
    if (defer) {
        std::lock_guard<std::mutex> lock(pending_lock_);
        pending_.push_back({description, name, pipeline, args, target});
        return r;
    }
    // LLVM aborts the process when it cannot write its output (a full disk): with too little
    // room the kernel is not cached (the caller compiles it in memory instead).
    if (!has_room(dir_, options_.min_free_bytes)) {
        r.note = "kernel cache: " + name + " not stored: less than " + std::to_string(options_.min_free_bytes >> 20) +
                 " MiB free at " + dir_.string() + "; compiled in memory";
        return r;
    }
    // Compile into a private directory, then rename into place: another process may race us to
    // the same entry; both write the same kernel and either rename wins. The object goes first:
    // a reader that meets a new record with an old object (or the reverse) finds them unequal.
    static std::atomic<int> serial{0};
    const fs::path tmp = dir_ / ("tmp-" + std::to_string(::getpid()) + "-" + std::to_string(serial++));
    fs::create_directories(tmp);
    try {
        const fs::path obj = tmp / (name + ".o"), lib = tmp / (name + ".so");
        try {
            Halide::Pipeline(pipeline).compile_to_object(obj.string(), args, name, target);
        } catch (const Halide::Error &e) {
            throw CompileError("compiling '" + name + "' for the kernel cache failed in Halide: " + std::string(e.what()));
        }
        const std::vector<std::string> link = {
            TESSEL_KERNEL_CACHE_LINKER, "-shared", "-Wl,-Bsymbolic", "-o", lib.string(), obj.string()};
        if (const SubprocessResult linked = run_subprocess(link); !linked.ok())
            throw CompileError("linking '" + name + "' for the kernel cache failed: " + format_command(link) + "\n" +
                               linked.output);
        const std::string object = read_file(lib), record = record_text(key, object);
        std::ofstream(tmp / "key", std::ios::binary) << record;
        if (options_.shared) {
            try {
                options_.shared->store(hash, record, object);
            } catch (const std::exception &e) {
                add_note("kernel cache: " + name + " not stored in the shared tier (" + e.what() + ")");
            }
        }
        fs::rename(lib, so);
        fs::rename(tmp / "key", key_file);
        fs::remove_all(tmp);
    } catch (...) {
        std::error_code ignored;
        fs::remove_all(tmp, ignored);
        throw;
    }
    if (!(r.kernel = load_checked(so, key_file, key, name, &why)))
        throw CompileError("the kernel cache entry " + so.string() + " of '" + name + "' does not load: " + why);
    r.seconds = seconds_since(t0);
    return r;
}

KernelCache::DeferredStores KernelCache::store_deferred() {
    const tessel::SteadyClock::time_point t0 = tessel::SteadyClock::now();
    std::vector<Pending> queued;
    {
        std::lock_guard<std::mutex> lock(pending_lock_);
        queued.swap(pending_);
    }
    DeferredStores out;
    for (const Pending &p : queued) {
        try {
            Result r = get(p.description, p.pipeline, p.args, p.target, p.name, false);
            out.stored += r.kernel != nullptr;
            if (!r.note.empty()) out.notes += r.note + "\n";
        } catch (const std::exception &e) {
            out.notes += "kernel cache: " + p.name + " not stored: " + e.what() + "\n";
        }
    }
    out.seconds = seconds_since(t0);
    return out;
}

std::string KernelCache::activate(const std::optional<fs::path> &dir, std::shared_ptr<SharedKernelStore> shared,
                                  bool defer_stores) {
    std::lock_guard<std::mutex> lock(g_active_lock);
    g_active.reset();
    if (!dir) return "";
    if (executable_build_id().empty()) return "kernel cache off: this executable has no GNU build ID to key it by";
    std::error_code ec;
    fs::create_directories(*dir, ec);
    if (!fs::is_directory(*dir))
        return "kernel cache off: " + dir->string() + " is not a directory and cannot be made" +
               (ec ? " (" + ec.message() + ")" : "");
    KernelCache::Options options;
    options.shared = std::move(shared);
    options.defer_stores = defer_stores;
    std::string note;
    if (::access(dir->c_str(), W_OK) != 0) {
        options.read_only = true;
        note =
            "kernel cache read-only: " + dir->string() + " cannot be written; its entries are loaded, new kernels are not stored";
    } else if (!has_room(*dir, options.min_free_bytes)) {
        note = "kernel cache: less than " + std::to_string(options.min_free_bytes >> 20) + " MiB free at " + dir->string() +
               "; new kernels are not stored";
    }
    g_active = std::make_unique<KernelCache>(*dir, options);
    return note;
}

std::string use_kernel_cache(const std::string &setting, const std::string &db_path, std::shared_ptr<SharedKernelStore> shared) {
    if (setting == "off") return KernelCache::activate(std::nullopt);
    // A database on a server has no directory to sit beside: this user's cache directory.
    const bool server = db_path.rfind("postgresql://", 0) == 0 || db_path.rfind("postgres://", 0) == 0;
    if (setting.empty() && server) {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        const fs::path base = xdg && *xdg ? fs::path(xdg) : home && *home ? fs::path(home) / ".cache" : fs::path(".");
        return KernelCache::activate(base / "tessel" / "kernels", std::move(shared), true);
    }
    return KernelCache::activate(fs::path(setting.empty() ? db_path + ".kernels" : setting), std::move(shared), true);
}

std::string store_deferred_kernels() {
    KernelCache *cache = KernelCache::active();
    if (!cache) return "";
    const KernelCache::DeferredStores d = cache->store_deferred();
    if (d.stored == 0 && d.notes.empty()) return "";
    std::ostringstream os;
    os << "kernel cache: " << d.stored << " kernel(s) compiled this run stored in " << cache->directory().string() << " ("
       << std::fixed << std::setprecision(1) << d.seconds * 1e3 << " ms, after the results)\n"
       << d.notes;
    return os.str();
}

KernelCache *KernelCache::active() {
    std::lock_guard<std::mutex> lock(g_active_lock);
    return g_active.get();
}

}  // namespace tessel
