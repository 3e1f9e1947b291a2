// `tessel db ls|export|import` (driver/DatabaseCommands.h) on a small database.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "autoscheduler/TuningDatabase.h"
#include "driver/DatabaseCommands.h"
#include "schedules/ScheduleJson.h"

#include "tests/TempDir.h"

using namespace tessel;
using namespace tessel::autosched;
namespace fs = std::filesystem;

using tessel::testing::TempDir;

namespace {

TuningRecord record(const std::string &shapes, double ms, const std::string &by) {
    TuningKey k = TuningKey::current();
    k.group_hash = "3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c";
    k.shape_class = "decode";
    k.shapes = shapes;
    k.target = "x86-64-linux-avx2-f16c-fma-sse41";
    k.numeric_mode = "strict";
    k.space_version = 1;
    sched::ScheduleSpec s("tuned");
    s.vectorize({"y"}, "n");
    return TuningRecord{k, sched::to_json(s), ms, {ms}, "analytic-1", by, 1735732800, ""};
}

}  // namespace

TEST_CASE("short_target: arch-bits-os, the widest vector feature or CUDA, and a count of the rest") {
    CHECK(short_target("x86-64-linux-avx2-f16c-fma-sse41") == "x86-64-linux avx2+3");
    CHECK(short_target("x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41") == "x86-64-linux avx512_skylake+6");
    CHECK(short_target("host-cuda-cuda_capability_90") == "host-cuda-cuda_capability_90");  // not arch-bits-os
    CHECK(short_target("x86-64-linux-cuda-cuda_capability_90") == "x86-64-linux cuda sm_90");
    CHECK(short_target("x86-64-linux") == "x86-64-linux");
    CHECK(short_target("arm-64-linux-arm_fp16") == "arm-64-linux +1");
}

TEST_CASE("tessel db ls / export / import") {
    TempDir tmp;
    const std::string db_path = tmp.file("t.db");
    std::ostringstream out, err;
    CHECK(db_list(db_path, out, err) == 1);
    CHECK(err.str().find("no tuning database") != std::string::npos);
    CHECK_FALSE(fs::exists(db_path));  // ls does not create

    {
        TuningDatabase db(db_path);
        db.commit(record("K=4096,M=1,N=4096", 2.5, "measured"));
        db.commit(record("K=4096,M=1,N=4096", 1.842, "measured"));
        db.commit(record("K=4096,M=1,N=4096", 0.9, "model"));
    }
    out.str("");
    REQUIRE(db_list(db_path, out, err) == 0);
    std::string text = out.str();
    CAPTURE(text);
    CHECK(text.find("3f2a1b0c9d8e") != std::string::npos);
    CHECK(text.find("decode") != std::string::npos);
    CHECK(text.find("K=4096,M=1,N=4096") != std::string::npos);
    CHECK(text.find("x86-64-linux avx2+3") != std::string::npos);
    CHECK(text.find("2025-01-01 12:00") != std::string::npos);
    CHECK(text.find("3 records, 1 key") != std::string::npos);
    // One line per record; the best (1.842, measured) is starred.
    std::istringstream lines(text);
    std::string line;
    int starred = 0, rows = 0;
    while (std::getline(lines, line)) {
        if (line.find("measured") == std::string::npos && line.find("model") == std::string::npos) continue;
        ++rows;
        if (line[0] == '*') {
            ++starred;
            CHECK(line.find("1.842") != std::string::npos);
        }
    }
    CHECK(rows == 3);
    CHECK(starred == 1);

    const std::string json_path = tmp.file("t.json");
    CHECK(db_export(db_path, json_path, out, err) == 0);
    std::ostringstream stdout_json;
    CHECK(db_export(db_path, "-", stdout_json, err) == 0);
    CHECK(nlohmann::json::parse(stdout_json.str())["records"].size() == 3);

    const std::string copy_path = tmp.file("copy.db");
    out.str("");
    CHECK(db_import(copy_path, json_path, out, err) == 0);
    CHECK(out.str().find("imported 3 new records") != std::string::npos);
    out.str("");
    CHECK(db_import(copy_path, json_path, out, err) == 0);
    CHECK(out.str().find("imported 0 new records") != std::string::npos);
    CHECK(out.str().find("3 already present") != std::string::npos);
    // The same records, measured ones arriving as "imported" (verified on first use).
    std::vector<TuningRecord> expected = TuningDatabase(db_path).all();
    for (auto &r : expected)
        if (r.measured_by == kMeasured) r.measured_by = kImported;
    CHECK(TuningDatabase(copy_path).all() == expected);

    err.str("");
    CHECK(db_import(copy_path, tmp.file("missing.json"), out, err) == 1);
    CHECK(err.str().find("cannot read") != std::string::npos);
}
