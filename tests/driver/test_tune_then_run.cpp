// Tune then run hits: for every graph in algorithms/ (weights in panels, bf16 and prepared
// weights included), `tessel tune` at some sizes and then `tessel run` and `tessel lib` at the
// same sizes serve every group from the tuning database — none from the model or the library
// default — because all three plan through the one front door (compiler/Plan.h).
#include <doctest/doctest.h>

#include "compiler/Plan.h"
#include "driver/GraphCompiler.h"
#include "driver/KernelLibrary.h"
#include "driver/Tune.h"
#include "dsl/ir/Parser.h"
#include "tests/TempDir.h"

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>

using namespace tessel;
namespace fs = std::filesystem;

namespace {

/** Awkward sizes (primes, not multiples of any tile) for every symbol the examples use. */
std::map<std::string, int64_t> sizes_for(const dsl::Graph &g) {
    const std::map<std::string, int64_t> table = {{"M", 7}, {"K", 48}, {"N", 40}, {"H", 24}, {"S", 37}};
    std::map<std::string, int64_t> out;
    for (const std::string &s : graph_symbols(g)) out[s] = table.count(s) ? table.at(s) : 13;
    return out;
}

std::string dims_text(const std::map<std::string, int64_t> &dims) {
    std::string s;
    for (const auto &[k, v] : dims) s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
    return s;
}

std::vector<fs::path> example_graphs() {
    std::vector<fs::path> files;
    for (const auto &e : fs::directory_iterator(std::string(TESSEL_SOURCE_DIR) + "/algorithms"))
        if (e.path().extension() == ".tsl") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
}

/** Every "group NAME [kind]: schedule 'NAME' [provenance]" line of a run's or library's report
 * names the database. */
void check_report_provenance(const std::string &report, size_t groups, const std::string &what) {
    const std::regex line(R"(group \S+ \[[^\]]+\](?: for \S+)?: schedule '[^']*' \[([a-z]+)\])");
    size_t seen = 0;
    for (auto it = std::sregex_iterator(report.begin(), report.end(), line); it != std::sregex_iterator(); ++it, ++seen)
        CHECK_MESSAGE((*it)[1] == "database", what << ": " << (*it)[0]);
    CHECK_MESSAGE(seen >= groups, what << ": " << seen << " group lines for " << groups << " groups\n" << report);
}

TuneOptions model_only_tune(const std::string &file, const std::string &db) {
    TuneOptions t;
    t.file = file;
    t.db = db;
    t.coverage = false;
    t.params.measure = false;
    return t;
}

}  // namespace

TEST_CASE("every example graph: tune at --dim, then plan, run and lib at the same sizes hit the database") {
    testing::TempDir dir;
    const std::string db = (dir.dir / "tuning.db").string();
    const Halide::Target host = Halide::get_host_target();
    for (const fs::path &file : example_graphs()) {
        const dsl::Graph g = dsl::parse_file(file.string());
        const auto dims = sizes_for(g);
        CAPTURE(file.filename().string());
        CAPTURE(dims_text(dims));

        TuneOptions t = model_only_tune(file.string(), db);
        t.dims = dims;
        std::ostringstream tuned;
        REQUIRE_MESSAGE(run_tune(t, tuned) == 0, tuned.str());

        PlanOptions po;
        po.symbols = dims;
        po.schedules.db = db;
        const PlannedProgram p = plan_file(file.string(), host, po);
        REQUIRE(!p.fusion.groups.empty());
        for (size_t i = 0; i < p.fusion.groups.size(); i++)
            CHECK_MESSAGE(p.schedules[i].provenance == ScheduleProvenance::Database,
                          p.fusion.groups[i].name << " [" << dsl::to_string(p.fusion.groups[i].kind)
                                                  << "]: " << p.schedules[i].label() << ": " << p.schedules[i].reason);

        GraphRunOptions r;
        r.file = file.string();
        r.symbols = dims;
        r.db = db;
        r.kernel_cache = "off";
        std::ostringstream ran;
        CHECK_MESSAGE(run_graph(r, ran) == 0, ran.str());
        check_report_provenance(ran.str(), p.fusion.groups.size(), "tessel run");

        KernelLibraryOptions l;
        l.file = file.string();
        l.out_dir = (dir.dir / g.name).string();
        l.symbols = dims;
        l.db = db;
        std::ostringstream built;
        int lib_status = -1;
        try {
            lib_status = write_kernel_library(l, built);
        } catch (const std::invalid_argument &e) {
            // The graphs a library refuses (ops outside kernels, laid-out inputs): said with why.
            CHECK(std::string(e.what()).find("tessel lib") != std::string::npos);
            continue;
        }
        REQUIRE(lib_status == 0);
        check_report_provenance(built.str(), p.fusion.groups.size(), "tessel lib");
    }
}

TEST_CASE("tune --shapes MxKxN binds the matmul's symbols; run at those sizes hits both groups (prepared and per call)") {
    testing::TempDir dir;
    const std::string db = (dir.dir / "tuning.db").string();
    const std::string file = std::string(TESSEL_SOURCE_DIR) + "/algorithms/linear_nk.tsl";
    TuneOptions t = model_only_tune(file, db);
    t.shapes = {"16x256x512"};
    std::ostringstream tuned;
    REQUIRE_MESSAGE(run_tune(t, tuned) == 0, tuned.str());
    PlanOptions po;
    po.symbols = {{"M", 16}, {"K", 256}, {"N", 512}};
    po.schedules.db = db;
    const PlannedProgram p = plan_file(file, Halide::get_host_target(), po);
    REQUIRE(p.fusion.groups.size() == 2);
    for (const auto &c : p.schedules) CHECK_MESSAGE(c.provenance == ScheduleProvenance::Database, c.label());
    // Other sizes miss: the key holds the shape.
    po.symbols["M"] = 17;
    const PlannedProgram other = plan_file(file, Halide::get_host_target(), po);
    CHECK(other.schedules.back().provenance == ScheduleProvenance::Model);
}

TEST_CASE("--dim alone binds a matmul group: nothing is left to the suite") {
    testing::TempDir dir;
    TuneOptions t = model_only_tune(std::string(TESSEL_SOURCE_DIR) + "/algorithms/linear_nk.tsl", (dir.dir / "t.db").string());
    t.dims = {{"M", 4}, {"K", 256}, {"N", 512}};
    std::ostringstream out;
    REQUIRE(run_tune(t, out) == 0);
    CHECK(out.str().find("shape graph (M=4,K=256,N=512") != std::string::npos);
    CHECK(out.str().find("shape square") == std::string::npos);  // no suite shape
}

TEST_CASE("schedule provenance has a text form that round-trips") {
    for (auto p : {ScheduleProvenance::User, ScheduleProvenance::Database, ScheduleProvenance::Measured,
                   ScheduleProvenance::Model, ScheduleProvenance::LibraryDefault})
        CHECK(parse_schedule_provenance(to_string(p)) == p);
    CHECK_THROWS_WITH_AS(parse_schedule_provenance("tuned"), doctest::Contains("valid: user, database"), std::invalid_argument);
}
