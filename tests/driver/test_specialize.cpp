// `tessel specialize` (driver/Specialize.h): measured variant costs on a profile, the planner's
// choice, its check by measurement, and a budget that even the fallback cannot meet.
#include "codegen/ObjectCodeSize.h"
#include "driver/Specialize.h"
#include "support/Subprocess.h"
#include "tests/TempDir.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace tessel;

TEST_CASE("tessel specialize: every variant measured, a plan chosen and checked against the alternatives") {
    const tessel::testing::TempDir tmp;
    const std::string profile = tmp.file("decode.profile");
    std::ofstream(profile) << "# decode-heavy\nM=1 K=64 N=48 calls=5000\nM=3 K=64 N=48 calls=100\nM=37 K=64 N=48 calls=10\n";
    SpecializeOptions o;
    o.profile_file = profile;
    o.repeats = 2;
    std::ostringstream out;
    REQUIRE(specialize(o, out) == 0);
    const std::string s = out.str();
    INFO(s);
    CHECK(s.find("cpu_blocked_v1") != std::string::npos);
    CHECK(s.find("code ") != std::string::npos);
    CHECK(s.find("K=64 M=1 N=48 -> ") != std::string::npos);
    CHECK(s.find("fallback only: expected") != std::string::npos);
    CHECK(s.find("regret of the plan") != std::string::npos);
}

TEST_CASE("code size is read from the object's executable sections") {
    const tessel::testing::TempDir tmp;
    const std::string src = tmp.file("f.c"), obj = tmp.file("f.o");
    std::ofstream(src) << "int f(int x) { return x * 3 + 1; }\nint g(int x) { return f(x) - 2; }\n";
    REQUIRE(run_subprocess({"cc", "-O1", "-c", src, "-o", obj}).ok());
    const int64_t bytes = executable_bytes(obj);
    CHECK(bytes > 4);
    CHECK(bytes < 256);
    CHECK_THROWS_WITH(executable_bytes(src), doctest::Contains("not an ELF64 object"));
    CHECK_THROWS_WITH(executable_bytes(tmp.file("missing.o")), doctest::Contains("cannot be opened"));
}
