// The compiled-kernel cache (codegen/KernelCache.h): a second CompiledKernel of the same group,
// schedule and target loads instead of compiling and computes the same result; anything that
// decides the code changes the key; a damaged entry is compiled again; errors still reach the
// caller in Tessel's words.
#include "codegen/KernelCache.h"
#include "driver/GeluLayer.h"
#include "driver/GraphCompiler.h"
#include "schedules/Library.h"
#include "support/Random.h"
#include "tests/TempDir.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tessel;
using Halide::Runtime::Buffer;

namespace {

/** The cache on at `dir` for one scope, off after it. */
struct ActiveCache {
    explicit ActiveCache(const std::filesystem::path &dir) { REQUIRE(KernelCache::activate(dir) == ""); }
    ~ActiveCache() { KernelCache::activate(std::nullopt); }
};

bool all_from_cache(const CompiledKernel &k) {
    for (const auto &v : k.variants())
        if (!v.from_cache) return false;
    return true;
}

bool none_from_cache(const CompiledKernel &k) {
    for (const auto &v : k.variants())
        if (v.from_cache || !v.loaded) return false;
    return true;
}

/** y of the layer at M x K (N = 4096) on fixed random inputs. */
Buffer<float> run_layer(const GeluLayer &layer, int M, int K) {
    Buffer<float> x(K, M), w(4096, K), b(4096), y(4096, M);
    fill_uniform(x, 1);
    fill_uniform(w, 2);
    fill_uniform(b, 3);
    layer.run(x, w, b, y);
    return y;
}

}  // namespace

TEST_CASE("kernel cache: the second compile of a kernel loads it, and it computes what the JIT does") {
    REQUIRE(!KernelCache::executable_build_id().empty());
    const tessel::testing::TempDir tmp;
    const Halide::Target t = parse_target("host");
    const sched::ScheduleSpec s = sched::library_schedule("cpu_blocked", t);
    const GeluLayer jit(GeluForm::Tanh, dsl::NumericMode::Fast, s, t);
    const Buffer<float> want = run_layer(jit, 3, 17);

    const ActiveCache cache(tmp.file("kernels"));
    const GeluLayer first(GeluForm::Tanh, dsl::NumericMode::Fast, s, t);
    CHECK(none_from_cache(first.kernel()));
    const GeluLayer second(GeluForm::Tanh, dsl::NumericMode::Fast, s, t);
    CHECK(all_from_cache(second.kernel()));
    CHECK(second.kernel().compile_seconds() < first.kernel().compile_seconds());
    for (const GeluLayer *layer : {&first, &second}) {
        for (int M : {1, 3, 16, 37}) {  // each guarded variant and the fallback
            const Buffer<float> got = run_layer(*layer, M, 17), ref = run_layer(jit, M, 17);
            int differ = 0;
            for (int m = 0; m < M; m++)
                for (int n = 0; n < 4096; n++) differ += got(n, m) != ref(n, m);
            CHECK_MESSAGE(differ == 0, "M = ", M);
        }
    }
    CHECK(want(5, 2) == run_layer(second, 3, 17)(5, 2));

    SUBCASE("another numeric mode, schedule or target is another entry") {
        const GeluLayer strict(GeluForm::Tanh, dsl::NumericMode::Strict, s, t);
        CHECK(none_from_cache(strict.kernel()));
        const GeluLayer other(GeluForm::Tanh, dsl::NumericMode::Fast, sched::library_schedule("cpu_tiled", t), t);
        CHECK(none_from_cache(other.kernel()));
        const Halide::Target avx2 = parse_target("x86-64-linux-avx-avx2-f16c-fma-sse41");
        const GeluLayer narrow(GeluForm::Tanh, dsl::NumericMode::Fast, s, avx2);
        CHECK(none_from_cache(narrow.kernel()));
    }
    SUBCASE("bad buffers are refused with Tessel's message; Halide's errors come back, not an abort") {
        Buffer<float> x(17, 3), w(4096, 16), b(4096), y(4096, 3);
        CHECK_THROWS_WITH(second.run(x, w, b, y), doctest::Contains("argument 'w' (input) has shape [16,4096]"));
    }
}

TEST_CASE("kernel cache: deferred stores JIT-compile a miss now and store it when asked, never before") {
    const tessel::testing::TempDir tmp;
    const Halide::Target t = parse_target("host");
    const sched::ScheduleSpec s = sched::library_schedule("cpu_blocked", t);
    const GeluLayer jit(GeluForm::Tanh, dsl::NumericMode::Fast, s, t);
    REQUIRE(KernelCache::activate(tmp.file("kernels"), nullptr, true) == "");
    const GeluLayer first(GeluForm::Tanh, dsl::NumericMode::Fast, s, t);
    for (const auto &v : first.kernel().variants()) {
        CHECK_FALSE(v.from_cache);
        CHECK_FALSE(v.loaded);  // JIT-compiled: no entry yet
    }
    CHECK(std::filesystem::is_empty(tmp.file("kernels")));
    for (int M : {1, 3, 16, 37}) {
        const Buffer<float> got = run_layer(first, M, 17), ref = run_layer(jit, M, 17);
        CHECK_MESSAGE(got(7, M - 1) == ref(7, M - 1), "M = ", M);
    }
    const size_t variants = first.kernel().variants().size();
    const std::string line = store_deferred_kernels();
    CHECK(line.find(std::to_string(variants) + " kernel(s) compiled this run stored in") != std::string::npos);
    CHECK(store_deferred_kernels() == "");  // nothing queued twice
    const GeluLayer second(GeluForm::Tanh, dsl::NumericMode::Fast, s, t);
    CHECK(all_from_cache(second.kernel()));
    for (int M : {1, 37}) CHECK(run_layer(second, M, 17)(9, 0) == run_layer(jit, M, 17)(9, 0));
    KernelCache::activate(std::nullopt);
    CHECK(store_deferred_kernels() == "");  // no cache: nothing to say
}

TEST_CASE("kernel cache: a damaged entry is compiled again and replaced") {
    const tessel::testing::TempDir tmp;
    const Halide::Target t = parse_target("host");
    const sched::ScheduleSpec s = sched::library_schedule("cpu_blocked", t);
    const ActiveCache cache(tmp.file("kernels"));
    float want = 0;
    {
        const GeluLayer first(GeluForm::Tanh, dsl::NumericMode::Fast, s, t);
        want = run_layer(first, 3, 17)(5, 2);
    }  // unloaded here: the next load reads the files again
    // Damaged as a crash or a foreign writer would leave it: new files in the entries' place
    // (written beside and renamed, as the cache itself writes, never in place under a mapping).
    int damaged = 0;
    for (const auto &e : std::filesystem::directory_iterator(tmp.file("kernels")))
        if (e.path().extension() == ".so") {
            std::ofstream(e.path().string() + ".new") << "not an ELF file";
            std::filesystem::rename(e.path().string() + ".new", e.path());
            damaged++;
        }
    CHECK(damaged > 1);
    const GeluLayer again(GeluForm::Tanh, dsl::NumericMode::Fast, s, t);
    CHECK(none_from_cache(again.kernel()));
    CHECK(run_layer(again, 3, 17)(5, 2) == want);
    const GeluLayer loaded(GeluForm::Tanh, dsl::NumericMode::Fast, s, t);
    CHECK(all_from_cache(loaded.kernel()));
}

TEST_CASE("kernel cache: off, or a directory it cannot write, leaves the JIT in charge with a note") {
    CHECK(KernelCache::activate(std::filesystem::path("/proc/tessel-cannot-write-here")).find("cannot be made") !=
          std::string::npos);
    CHECK(KernelCache::active() == nullptr);
    const Halide::Target t = parse_target("host");
    const GeluLayer layer(GeluForm::Tanh, dsl::NumericMode::Fast, sched::library_schedule("cpu_blocked", t), t);
    for (const auto &v : layer.kernel().variants()) CHECK((!v.loaded && !v.from_cache));
}

TEST_CASE("kernel cache: a second `tessel run` of a graph compiles nothing") {
    const tessel::testing::TempDir tmp;
    GraphRunOptions o;
    o.file = std::string(TESSEL_SOURCE_DIR) + "/algorithms/mlp_residual.tsl";
    o.symbols = {{"M", 5}, {"K", 33}, {"H", 19}};
    o.db = tmp.file("tuning.db");
    std::ostringstream first, second;
    REQUIRE(run_graph(o, first) == 0);
    REQUIRE(run_graph(o, second) == 0);
    KernelCache::activate(std::nullopt);
    INFO(first.str() << second.str());
    CHECK(first.str().find(" 0 loaded from the kernel cache") != std::string::npos);
    // The first run JIT-compiles for its result and stores the kernels at its end.
    CHECK(first.str().find("compiled this run stored in") != std::string::npos);
    CHECK(second.str().find("compiled this run stored") == std::string::npos);
    CHECK(second.str().find(" compiled;") != std::string::npos);
    CHECK(second.str().find(" 0 compiled;") != std::string::npos);
    CHECK(std::filesystem::exists(tmp.file("tuning.db.kernels")));
    o.kernel_cache = "off";
    std::ostringstream third;
    REQUIRE(run_graph(o, third) == 0);
    CHECK(third.str().find(" 0 loaded from the kernel cache") != std::string::npos);
}
