// The kernel cache's shared tier on a real PostgreSQL server (autoscheduler/PostgresKernelStore.h):
// `tessel run` with --db on the server stores its compiled kernels there, and a run with an empty
// local cache directory (another host) loads every kernel from the server and compiles nothing.
// Each way a shared entry can be wrong — a changed byte, a truncated object, a record for another
// target, another Halide version, another Tessel build, another kernel's entry under the hash —
// is never loaded: the kernel is compiled again, the result is right, and the entry is replaced.
#include <doctest/doctest.h>

#include <sstream>

#include "autoscheduler/PostgresKernelStore.h"
#include "codegen/KernelCache.h"
#include "driver/GraphCompiler.h"

#include "tests/PostgresServer.h"
#include "tests/TempDir.h"

using namespace tessel;
using tessel::testing::PostgresServer;
using tessel::testing::TempDir;

namespace {

/** `tessel run` of mlp_residual against the server, with local cache directory `dir`. */
std::string run_with_cache(const std::string &url, const std::string &dir) {
    GraphRunOptions o;
    o.file = std::string(TESSEL_SOURCE_DIR) + "/algorithms/mlp_residual.tsl";
    o.symbols = {{"M", 5}, {"K", 33}, {"H", 19}};
    o.db = url;
    o.kernel_cache = dir;
    std::ostringstream out;
    const int rc = run_graph(o, out);
    KernelCache::activate(std::nullopt);
    INFO(out.str());
    CHECK(rc == 0);  // run_graph compares with the interpreter: a wrong kernel fails here
    return out.str();
}

bool has(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("shared kernel cache: another host loads from the server; every wrong entry is compiled again and replaced") {
    TESSEL_REQUIRE_POSTGRES(server);
    if (KernelCache::executable_build_id().empty()) {
        MESSAGE("this test executable has no GNU build ID (the kernel cache is off): skipped");
        return;
    }
    TempDir tmp;
    const std::string url = server.fresh_database("kernels");
    int host = 0;
    auto fresh_host = [&] { return tmp.file("host" + std::to_string(host++)); };

    const std::string first = run_with_cache(url, fresh_host());
    CHECK(has(first, " 0 loaded from the kernel cache"));
    const int64_t entries = std::stoll(server.query_one("SELECT COUNT(*) FROM kernels", "kernels"));
    CHECK(entries >= 2);                                           // the swap below needs another kernel's entry
    const std::string second = run_with_cache(url, fresh_host());  // another host: nothing local
    CHECK_MESSAGE(has(second, " 0 compiled;"), second);

    const std::vector<std::pair<const char *, std::string>> wrong = {
        {"a changed byte", "UPDATE kernels SET object = set_byte(object, 200, (get_byte(object, 200) + 1) % 256)"},
        {"a truncated object", "UPDATE kernels SET object = substring(object from 1 for 1000)"},
        {"another target", "UPDATE kernels SET record = regexp_replace(record, E'\\ntarget [^\\n]*', E'\\ntarget arm-64-linux')"},
        {"another Halide", "UPDATE kernels SET record = regexp_replace(record, E'\\nhalide [^\\n]*', E'\\nhalide 19.0.0')"},
        {"another Tessel build",
         "UPDATE kernels SET record = regexp_replace(record, E'\\nexecutable [^\\n]*', E'\\nexecutable 0123abcd')"},
        // Every entry holds the next one's record and object: a consistent entry of another kernel.
        {"another kernel's entry",
         "WITH r AS (SELECT hash, record, object, row_number() OVER (ORDER BY hash) AS i, COUNT(*) OVER () AS n FROM kernels) "
         "UPDATE kernels k SET record = nxt.record, object = nxt.object FROM r cur JOIN r nxt ON nxt.i = cur.i % cur.n + 1 "
         "WHERE k.hash = cur.hash"},
    };
    for (const auto &[what, sql] : wrong) {
        INFO("shared entries with " << std::string(what));
        server.admin(sql, "kernels");
        const std::string bad = run_with_cache(url, fresh_host());
        CHECK_MESSAGE(has(bad, " 0 loaded from the kernel cache"), bad);
        CHECK_MESSAGE(has(bad, "shared entry"), bad);
        CHECK(has(bad, "not used"));
        // Replaced: the next host loads every kernel again.
        const std::string healed = run_with_cache(url, fresh_host());
        CHECK_MESSAGE(has(healed, " 0 compiled;"), healed);
    }
    CHECK(std::stoll(server.query_one("SELECT COUNT(*) FROM kernels", "kernels")) == entries);
}
