// No shell between Tessel and its tools (support/Subprocess.h): `tessel compile` (its library
// archive and Graphviz), `tessel lib` (the C compiles and the archive), `tessel run`'s kernel
// cache (the linker) and `tessel compile --compile-budget`, each with every path under a
// directory whose name holds spaces, quotes, `$(...)`, backticks, `;`, `|`, `&` and non-ASCII.
// The files must land where asked and nothing the names spell may run.
#include "support/Subprocess.h"
#include "tests/TempDir.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

using namespace tessel;
namespace fs = std::filesystem;

namespace {

/** Every way a name breaks out of shell quoting; each would create `pwned*` in the working directory. */
const char *kHostile = "out dir 'q' \"dq\" $(touch pwned1) `touch pwned2` ; touch pwned3 | & \xc3\xbc\xe2\x82\xac";

SubprocessResult run_tessel(const std::vector<std::string> &args, const fs::path &cwd) {
    // The child runs in `cwd` so that a broken-out `touch` would leave its file there.
    std::vector<std::string> argv = {"env", "-C", cwd.string(), TESSEL_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_subprocess(argv, {600});
}

void no_command_ran(const fs::path &root) {
    for (const auto &e : fs::recursive_directory_iterator(root))
        CHECK_MESSAGE(e.path().filename().string().rfind("pwned", 0) != 0, "a shell ran: " << e.path());
}

}  // namespace

TEST_CASE("hostile paths: compile, lib, the kernel cache and Graphviz write where asked and run nothing else") {
    const tessel::testing::TempDir tmp;
    const fs::path cwd = tmp.file("cwd"), dir = fs::path(tmp.file("cwd")) / kHostile;
    fs::create_directories(dir);
    const fs::path graph = dir / "g 'x'.tsl";
    std::ofstream(graph) << "graph g {\n  %x = input : f32[M, 16]\n  %w = input : f32[16, 8]\n"
                            "  %y = relu(matmul(%x, %w)) * 2.0\n  output %y\n}\n";
    const std::string db = (dir / "t 'db'.db").string();

    SUBCASE("tessel compile --emit lib,dot,memplan") {
        const SubprocessResult r = run_tessel(
            {"compile", graph.string(), "--emit", "lib,dot,memplan", "-o", (dir / "c o").string(), "--db", db, "--dim", "M=4"},
            cwd);
        INFO(r.output);
        REQUIRE(r.ok());
        for (const char *f : {"g.a", "g.dot", "g.memplan.json"}) CHECK(fs::exists(dir / "c o" / f));
        if (r.output.find("Graphviz 'dot' not found") == std::string::npos) CHECK(fs::exists(dir / "c o" / "g.svg"));
    }
    SUBCASE("tessel lib") {
        const SubprocessResult r = run_tessel({"lib", graph.string(), "-o", (dir / "l o").string(), "--db", db}, cwd);
        INFO(r.output);
        REQUIRE(r.ok());
        CHECK(fs::exists(dir / "l o" / "libg.a"));
        CHECK(fs::exists(dir / "l o" / "g.h"));
    }
    SUBCASE("tessel run with the kernel cache") {
        const fs::path cache = dir / "k $(touch pwned4) c";
        const std::vector<std::string> args = {"run", graph.string(),   "--dim",       "M=3", "--db",
                                               db,    "--kernel-cache", cache.string()};
        const SubprocessResult first = run_tessel(args, cwd), second = run_tessel(args, cwd);
        INFO(first.output << "\n---\n" << second.output);
        REQUIRE(first.ok());
        REQUIRE(second.ok());
        bool any = false;
        for (const auto &e : fs::directory_iterator(cache)) any |= e.path().extension() == ".so";
        CHECK(any);
        CHECK(second.output.find(" 0 compiled;") != std::string::npos);
    }
    no_command_ran(tmp.dir);
}

TEST_CASE("--compile-budget: stops cleanly with what was written, names what was not, exits 3") {
    const tessel::testing::TempDir tmp;
    // 400 independent element-wise chains: 400 groups (one code with their constants as an
    // argument, compiled once), every function left out by a budget spent before the first.
    std::string text = "graph fan {\n  %x = input : f32[M, 64]\n";
    std::string outputs;
    for (int c = 0; c < 400; c++) {
        const std::string n = std::to_string(c);
        text += "  %c" + n + " = tanh(%x + " + n + ".0) * %x\n";
        outputs += (c ? ", %c" : "%c") + n;
    }
    text += "  output " + outputs + "\n}\n";
    std::ofstream(tmp.file("fan.tsl")) << text;
    const SubprocessResult r = run_tessel({"compile", tmp.file("fan.tsl"), "--emit", "lib", "-o", tmp.file("out"), "--db",
                                           tmp.file("t.db"), "--dim", "M=8", "--compile-budget", "0.001"},
                                          tmp.dir);
    INFO(r.output);
    CHECK(r.status == 3);
    CHECK(r.output.find("compile budget of 0.001 s spent after") != std::string::npos);
    CHECK(r.output.find("not compiled (400): g0_c0") != std::string::npos);
    CHECK(r.output.find("... and 380 more") != std::string::npos);
    CHECK(fs::exists(fs::path(tmp.file("out")) / "fan.a"));  // a valid, empty-of-functions library
    CHECK(!fs::exists(fs::path(tmp.file("out")) / "g0_c0.h"));

    const SubprocessResult bad = run_tessel({"compile", tmp.file("fan.tsl"), "--compile-budget", "-1"}, tmp.dir);
    CHECK(bad.status != 0);
    CHECK(bad.status != 3);
}
