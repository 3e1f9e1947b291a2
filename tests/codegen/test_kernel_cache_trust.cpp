// The kernel cache loads only what its record vouches for (codegen/KernelCache.h): a truncated,
// corrupted, swapped or foreign object, or a record of another target or Halide version, is
// compiled again and replaced with one line saying why; a read-only directory is read, never
// written; a full disk stores nothing; two processes fill one cache at once.
#include "codegen/Compile.h"
#include "codegen/KernelCache.h"
#include "support/Subprocess.h"
#include "tests/Shell.h"
#include "tests/TempDir.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

using namespace tessel;
namespace fs = std::filesystem;

namespace {

/** A small kernel, y(x) = in(x) * factor + 1, through `cache`. */
KernelCache::Result get(KernelCache &cache, float factor) {
    Halide::ImageParam in(Halide::Float(32), 1, "in");
    Halide::Func y("y");
    Halide::Var x("x");
    y(x) = in(x)*factor + 1.0f;
    y.vectorize(x, 8, Halide::TailStrategy::GuardWithIf);
    return cache.get("y = in * " + std::to_string(factor) + " + 1", Halide::Pipeline(y), {in}, parse_target("host"), "scale");
}

/** Runs a loaded kernel on [0, 1, ..., 9] and returns y[3]. */
float y3(const KernelCache::Result &r) {
    REQUIRE(r.kernel);
    Halide::Runtime::Buffer<float> in(10), out(10);
    for (int i = 0; i < 10; i++) in(i) = float(i);
    void *args[] = {in.raw_buffer(), out.raw_buffer()};
    REQUIRE(r.kernel->call(args) == 0);
    return out(3);
}

std::string read(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

/** Replaces `p` as a foreign writer would: a new file renamed into its place. */
void replace(const fs::path &p, const std::string &bytes) {
    std::ofstream(p.string() + ".new", std::ios::binary) << bytes;
    fs::rename(p.string() + ".new", p);
}

std::vector<fs::path> entries(const fs::path &dir, const std::string &ext) {
    std::vector<fs::path> out;
    for (const auto &e : fs::directory_iterator(dir))
        if (e.path().extension() == ext) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("kernel cache: an object is loaded only when its record's key, size and SHA-256 match") {
    const tessel::testing::TempDir tmp;
    const fs::path dir = tmp.file("kernels");
    fs::create_directories(dir);
    KernelCache cache(dir);
    {
        const KernelCache::Result first = get(cache, 2), second = get(cache, 3);
        CHECK((!first.hit && !second.hit && first.note.empty()));
        CHECK(y3(first) == 7.0f);
        CHECK(y3(second) == 10.0f);
    }
    REQUIRE(entries(dir, ".so").size() == 2);
    REQUIRE(get(cache, 2).hit);

    // Which entry is factor 2's: the one whose record names it.
    fs::path so2, so3;
    for (const fs::path &e : entries(dir, ".so"))
        (read(fs::path(e).replace_extension(".key")).find("in * 2.0") != std::string::npos ? so2 : so3) = e;
    REQUIRE((!so2.empty() && !so3.empty()));
    const fs::path key2 = fs::path(so2).replace_extension(".key");
    const std::string object2 = read(so2), record2 = read(key2);

    struct Damage {
        const char *what;
        std::function<void()> apply;
        const char *why;
    };
    const std::string target_line = "target " + parse_target("host").to_string();
    const Damage damages[] = {
        {"truncated", [&] { replace(so2, object2.substr(0, object2.size() / 2)); }, "bytes, not the size its record gives"},
        {"corrupted (one byte, same size)",
         [&] {
             std::string b = object2;
             b[b.size() / 2] ^= 0x40;
             replace(so2, b);
         },
         "SHA-256 is not its record's"},
        {"swapped with another entry's object", [&] { replace(so2, read(so3)); }, "or replaced)"},
        {"planted from another target",
         [&] {
             std::string r = record2;
             r.replace(r.find(target_line), target_line.size(), "target x86-64-linux-avx-avx2-fma");
             replace(key2, r);
         },
         "its record is for 'target x86-64-linux-avx-avx2-fma' where this kernel needs 'target "},
        {"planted from another Halide version",
         [&] {
             std::string r = record2;
             const size_t at = r.find("\nhalide ");
             r.replace(at + 8, r.find('\n', at + 1) - at - 8, "20.0.1");
             replace(key2, r);
         },
         "its record is for 'halide 20.0.1' where this kernel needs 'halide 21."},
        {"without its record", [&] { fs::remove(key2); }, "it has no complete record"},
    };
    for (const Damage &d : damages) {
        CAPTURE(std::string(d.what));
        d.apply();
        const KernelCache::Result r = get(cache, 2);
        CHECK(!r.hit);
        CHECK(r.note.find("not used: ") != std::string::npos);
        CHECK(r.note.find(d.why) != std::string::npos);
        CHECK(r.note.find("compiled again and replaced") != std::string::npos);
        CHECK(y3(r) == 7.0f);
        const KernelCache::Result again = get(cache, 2);  // the replaced entry is trusted again
        CHECK(again.hit);
        CHECK(again.note.empty());
        CHECK(y3(again) == 7.0f);
    }
}

TEST_CASE("kernel cache: a read-only directory is read and never written; a full disk stores nothing") {
    const tessel::testing::TempDir tmp;
    const fs::path dir = tmp.file("kernels");
    fs::create_directories(dir);
    {
        KernelCache writer(dir);
        REQUIRE(!get(writer, 2).hit);
    }
    KernelCache::Options ro;
    ro.read_only = true;
    KernelCache reader(dir, ro);
    CHECK(get(reader, 2).hit);
    const KernelCache::Result miss = get(reader, 5);
    CHECK(!miss.kernel);  // the caller compiles it in memory
    CHECK(entries(dir, ".so").size() == 1);
    replace(entries(dir, ".so")[0], "damaged");
    const KernelCache::Result damaged = get(reader, 2);
    CHECK(!damaged.kernel);
    CHECK(damaged.note.find("compiled in memory (read-only cache)") != std::string::npos);
    CHECK(read(entries(dir, ".so")[0]) == "damaged");  // left as found

    KernelCache::Options full;
    full.min_free_bytes = UINT64_MAX / 2;
    KernelCache no_room(tmp.file("full"), full);
    fs::create_directories(tmp.file("full"));
    const KernelCache::Result r = get(no_room, 2);
    CHECK(!r.kernel);
    CHECK(r.note.find("not stored: less than") != std::string::npos);
    CHECK(fs::is_empty(tmp.file("full")));

    if (::geteuid() == 0) {
        MESSAGE("skipped: the read-only directory check (root writes anywhere)");
        return;
    }
    fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
    CHECK(KernelCache::activate(dir).find("kernel cache read-only") != std::string::npos);
    REQUIRE(KernelCache::active());
    CHECK(KernelCache::active()->read_only());
    KernelCache::activate(std::nullopt);
    fs::permissions(dir, fs::perms::owner_all);
}

TEST_CASE("kernel cache: two processes filling one cache at once both run, and a third compiles nothing") {
    const tessel::testing::TempDir tmp;
    const std::vector<std::string> argv = {TESSEL_BINARY,
                                           "run",
                                           std::string(TESSEL_SOURCE_DIR) + "/algorithms/mlp_residual.tsl",
                                           "--dim",
                                           "M=5,K=33,H=19",
                                           "--db",
                                           tmp.file("tuning.db")};
    SubprocessResult a, b;
    std::thread ta([&] { a = run_subprocess(argv, {300}); });
    std::thread tb([&] { b = run_subprocess(argv, {300}); });
    ta.join();
    tb.join();
    INFO(a.output << "\n---\n" << b.output);
    CHECK(a.ok());
    CHECK(b.ok());
    const SubprocessResult c = run_subprocess(argv, {300});
    INFO(c.output);
    CHECK(c.ok());
    CHECK(c.output.find(" 0 compiled;") != std::string::npos);
    CHECK(c.output.find("not used") == std::string::npos);
    for (const fs::path &e : entries(tmp.file("tuning.db.kernels"), ".so"))
        CHECK(fs::exists(fs::path(e).replace_extension(".key")));
}

TEST_CASE("kernel cache: `tessel run` on a read-only file system loads its entries; on a full one it stores nothing") {
    if (::geteuid() != 0 || testing::shell("unshare -m true").rc != 0) {
        MESSAGE("skipped: needs root and mount namespaces (unshare -m) for private read-only and small file systems");
        return;
    }
    const tessel::testing::TempDir tmp;
    const std::string graph = std::string(TESSEL_SOURCE_DIR) + "/algorithms/mlp_residual.tsl", db = tmp.file("tuning.db");
    const SubprocessResult fill = run_subprocess(
        {TESSEL_BINARY, "run", graph, "--dim", "M=5,K=33,H=19", "--db", db, "--kernel-cache", tmp.file("k")}, {300});
    REQUIRE(fill.ok());
    // $1 tessel, $2 graph, $3 database, $4 the filled cache: copied onto a private tmpfs made
    // read-only; then an empty cache on a 64 MiB tmpfs, under the 256 MiB kept free.
    const std::string script = R"sh(set -e
d=$(mktemp -d)
mount -t tmpfs -o size=64m tmpfs "$d"
cp -r "$4" "$d/k"
mount -o remount,ro "$d"
"$1" run "$2" --dim M=5,K=33,H=19 --db "$3" --kernel-cache "$d/k"
echo "--- full"
mount -o remount,rw "$d"
rm -rf "$d/k"
mkdir "$d/k"
"$1" run "$2" --dim M=5,K=33,H=19 --db "$3" --kernel-cache "$d/k"
echo "stored $(ls -A "$d/k" | wc -l)"
)sh";
    const SubprocessResult r =
        run_subprocess({"unshare", "-m", "sh", "-c", script, "sh", TESSEL_BINARY, graph, db, tmp.file("k")}, {600});
    INFO(r.output);
    REQUIRE(r.ok());
    const size_t full = r.output.find("--- full");
    REQUIRE(full != std::string::npos);
    const std::string read_only = r.output.substr(0, full), small = r.output.substr(full);
    CHECK(read_only.find("kernel cache read-only") != std::string::npos);
    CHECK(read_only.find(" 0 compiled;") != std::string::npos);  // every kernel loaded
    CHECK(small.find("MiB free") != std::string::npos);
    CHECK(small.find("stored 0") != std::string::npos);
}
