/** \file
 * The tuning database under faults, through the `tessel` command line: one table row per case,
 * each with the expected exit status and a substring of what the command prints. Read-only
 * commands (`db ls`, `db export`, `run`, `compile`) work on a read-only database and on a full
 * disk; `tune` refuses such a database before it measures; a directory, a corrupt file, another
 * program's SQLite file, a newer schema version and malformed `db import` files each give a
 * clear error and leave the file as it was (nothing is created for a refused import).
 *
 * Read-only files and a full disk are made for real where this process may: tests usually run
 * as root here, for whom file modes mean nothing, so such rows run the command inside a private
 * mount namespace (`unshare -m`) on a small tmpfs, remounted read-only or filled up; without
 * that (not root, no unshare) a read-only file is chmod 0444 and the full-disk rows are skipped.
 *
 * Last, `tessel tune` is killed with SIGKILL at random points; after each kill the database
 * passes PRAGMA integrity_check, and a final rerun completes with one measured record per key
 * (none lost, none duplicated).
 */
#include "autoscheduler/TuningDatabase.h"
#include "schedules/ScheduleJson.h"
#include "support/Clock.h"

#include "tests/TempDir.h"

#include "tests/Shell.h"

#include <doctest/doctest.h>

#include <sqlite3.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <thread>

using namespace tessel;
using namespace tessel::autosched;
namespace fs = std::filesystem;
using tessel::testing::TempDir;

namespace {

const char *kGraph = R"(graph small {
  %x = input : f32[M, 8]
  %w = input : f32[8, 16]
  %bias = input : f32[16]
  %y = gelu(matmul(%x, %w) + %bias)
  output %y
}
)";

using tessel::testing::shell;
using Result = tessel::testing::ShellResult;

std::string quote(const std::string &s) { return "'" + s + "'"; }

/** May this process make private read-only and full file systems (root in a mount namespace)? */
bool can_sandbox() {
    static const bool ok = geteuid() == 0 && shell(
                                                 "unshare -m sh -c 'd=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d && "
                                                 "umount $d && rmdir $d'")
                                                     .rc == 0;
    return ok;
}

std::string file_bytes(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

TuningRecord sample_record() {
    TuningKey k = TuningKey::current();
    k.group_hash = "0123456789abcdef0123456789abcdef";
    k.shape_class = "small";
    k.shapes = "K=8,M=4,N=16";
    k.target = "x86-64-linux-avx2-f16c-fma-sse41";
    k.numeric_mode = "strict";
    sched::ScheduleSpec s("tuned");
    s.vectorize({"y"}, "n");
    return TuningRecord{k, sched::to_json(s), 1.5, {1.5}, "analytic-1", "measured", 1735732800, ""};
}

/** A tuning database with one record at `path`, closed (no -wal left). */
void make_database(const std::string &path) {
    TuningDatabase db(path);
    db.commit(sample_record());
}

void write_file(const std::string &path, const std::string &text) { std::ofstream(path, std::ios::binary) << text; }

/** A SQLite file made by `sql`, for other programs' files and other schema versions. */
void make_sqlite(const std::string &path, const std::string &sql) {
    sqlite3 *db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
}

std::string export_with(const std::string &records_json, int schema_version = kTuningDatabaseSchemaVersion) {
    return R"({"format": "tessel-tuning-db", "schema_version": )" + std::to_string(schema_version) + R"(, "records": )" +
           records_json + "}";
}

enum class Where { Plain, ReadOnly, Full };

struct Case {
    const char *name;
    /** Prepares files in `dir`; the database path is dir/t.db. */
    std::function<void(const TempDir &)> setup;
    std::string args;  ///< after `tessel`; DB and GRAPH and DIR are replaced
    Where where;
    int rc;
    const char *message;  ///< must appear in the output
    bool db_unchanged;    ///< the database file's bytes are the same afterwards (or it still does not exist)
};

/** Runs a case's command; a ReadOnly or Full case runs inside a private tmpfs holding a copy of
 * dir (read-only, or filled), so it cannot change dir itself. */
Result run_case(const Case &c, const TempDir &tmp) {
    const std::string root = c.where == Where::Plain ? tmp.dir.string() : tmp.dir.string() + "/mnt";
    // One left-to-right pass: a replacement is never scanned again (the temporary directory's
    // random name may itself contain "DB" or "DIR").
    const std::pair<std::string, std::string> tokens[] = {{"DB", root + "/t.db"}, {"GRAPH", root + "/g.tsl"}, {"DIR", root}};
    std::string args;
    for (size_t i = 0; i < c.args.size();) {
        bool replaced = false;
        for (const auto &[from, to] : tokens)
            if (c.args.compare(i, from.size(), from) == 0) {
                args += to;
                i += from.size();
                replaced = true;
                break;
            }
        if (!replaced) args += c.args[i++];
    }
    const std::string tessel = quote(TESSEL_EXECUTABLE) + " " + args;
    if (c.where == Where::Plain) return shell(tessel);
    if (!can_sandbox()) {
        // Not root: file modes are honored, so read-only is chmod; a full disk is not made.
        fs::create_directories(root);
        for (const auto &e : fs::directory_iterator(tmp.dir))
            if (e.path().filename() != "mnt") fs::copy(e.path(), root + "/" + e.path().filename().string());
        fs::permissions(root + "/t.db", fs::perms::owner_read);
        fs::permissions(root, fs::perms::owner_read | fs::perms::owner_exec);
        Result r = shell(tessel);
        fs::permissions(root, fs::perms::owner_all);
        return r;
    }
    const std::string mnt = quote(root);
    std::string script = "mkdir -p " + mnt + " && mount -t tmpfs -o size=1m tmpfs " + mnt + " && cp " + quote(tmp.dir.string()) +
                         "/*.* " + mnt + "/ && ";
    if (c.where == Where::ReadOnly)
        script += "mount -o remount,ro " + mnt + " && ";
    else
        script += "(dd if=/dev/zero of=" + mnt + "/fill bs=4k 2>/dev/null; true) && ";
    script += tessel;
    return shell("unshare -m sh -c " + quote(script));
}

const std::string kRecord = sample_record().to_json().dump();

std::vector<Case> cases() {
    auto db = [](const TempDir &t) { make_database(t.file("t.db")); };
    auto nothing = [](const TempDir &) {};
    auto json_file = [](std::string text) { return [text](const TempDir &t) { write_file(t.file("in.json"), text); }; };
    std::string bad_median = kRecord;
    bad_median.replace(bad_median.find("\"median_ms\":1.5"), 15, "\"median_ms\":-2.0");
    std::string no_schedule = kRecord;
    no_schedule.replace(no_schedule.find("\"schedule\":"), 11, "\"schedul\":");
    const std::string tune = "tune GRAPH --db DB --shapes 4x8x16 --budget 1 --repeats 1 --no-coverage";
    return {
        // The database path is not a database.
        {"db ls: a directory", [](const TempDir &t) { fs::create_directory(t.file("t.db")); }, "db ls --db DB", Where::Plain, 1,
         "is a directory", false},
        {"tune: a directory", [](const TempDir &t) { fs::create_directory(t.file("t.db")); }, tune, Where::Plain, 1,
         "is a directory", false},
        {"db ls: a corrupt file", [](const TempDir &t) { write_file(t.file("t.db"), std::string(8192, '\x5a')); },
         "db ls --db DB", Where::Plain, 1, "not a valid tuning database", true},
        {"run: a corrupt file", [](const TempDir &t) { write_file(t.file("t.db"), std::string(8192, '\x5a')); },
         "run GRAPH --db DB --dim M=4", Where::Plain, 1, "not a valid tuning database", true},
        {"tune: a corrupt file", [](const TempDir &t) { write_file(t.file("t.db"), std::string(8192, '\x5a')); }, tune,
         Where::Plain, 1, "not a valid tuning database", true},
        {"db ls: a truncated database",
         [](const TempDir &t) {
             make_database(t.file("t.db"));
             fs::resize_file(t.file("t.db"), 1500);
         },
         "db ls --db DB", Where::Plain, 1, "tuning database", true},
        {"db ls: another program's SQLite file",
         [](const TempDir &t) { make_sqlite(t.file("t.db"), "CREATE TABLE photos (id INTEGER, path TEXT)"); }, "db ls --db DB",
         Where::Plain, 1, "not a Tessel tuning database", true},
        {"tune: another program's SQLite file",
         [](const TempDir &t) { make_sqlite(t.file("t.db"), "CREATE TABLE photos (id INTEGER, path TEXT)"); }, tune, Where::Plain,
         1, "not a Tessel tuning database", true},
        {"db ls: a newer schema version",
         [](const TempDir &t) {
             make_sqlite(t.file("t.db"),
                         "CREATE TABLE tessel_schema (name TEXT PRIMARY KEY, version INTEGER NOT NULL);"
                         "INSERT INTO tessel_schema VALUES ('tuning', 99)");
         },
         "db ls --db DB", Where::Plain, 1, "schema version 99, newer than this Tessel supports", true},
        {"db ls: no such file", nothing, "db ls --db DB", Where::Plain, 1, "no tuning database", true},
        // Malformed imports: refused before the database is created.
        {"db import: not JSON", json_file("{\"format\": "), "db import DIR/in.json --db DB", Where::Plain, 1, "is not valid JSON",
         true},
        {"db import: another format", json_file("{\"format\": \"csv\"}"), "db import DIR/in.json --db DB", Where::Plain, 1,
         "not a Tessel tuning database export", true},
        {"db import: no records", json_file(R"({"format": "tessel-tuning-db", "schema_version": 1})"),
         "db import DIR/in.json --db DB", Where::Plain, 1, "missing \"records\" array", true},
        {"db import: newer export", json_file(export_with("[]", 7)), "db import DIR/in.json --db DB", Where::Plain, 1,
         "schema version 7, newer", true},
        {"db import: a negative time", json_file(export_with("[" + bad_median + "]")), "db import DIR/in.json --db DB",
         Where::Plain, 1, "records[0]: median_ms must be a finite, non-negative time", true},
        {"db import: a record without a schedule", json_file(export_with("[" + kRecord + ", " + no_schedule + "]")),
         "db import DIR/in.json --db DB", Where::Plain, 1, "records[1].schedule: missing", true},
        {"db import: a malformed import into an existing database",
         [](const TempDir &t) {
             make_database(t.file("t.db"));
             write_file(t.file("in.json"), "[1, 2]");
         },
         "db import DIR/in.json --db DB", Where::Plain, 1, "not a Tessel tuning database export", true},
        // Options.
        {"tune: --timeout -1", nothing, "tune GRAPH --db DB --timeout -1", Where::Plain, 105, "--timeout", true},
        {"tune: --timeout 0", nothing, "tune GRAPH --db DB --timeout 0", Where::Plain, 105, "--timeout", true},
        // A read-only database: the commands that read work, tune refuses before measuring.
        {"db ls: read-only", db, "db ls --db DB", Where::ReadOnly, 0, "1 record, 1 key", true},
        {"db export: read-only", db, "db export --db DB", Where::ReadOnly, 0, "\"tessel-tuning-db\"", true},
        {"run: read-only", db, "run GRAPH --db DB --dim M=4", Where::ReadOnly, 0, "opened read-only", true},
        {"compile: read-only", db, "compile GRAPH --db DB --dim M=4 -o DIR/../out", Where::ReadOnly, 0,
         "model picks are not stored", true},
        {"tune: read-only", db, tune, Where::ReadOnly, 1, "cannot be written", true},
        {"db import: read-only",
         [](const TempDir &t) {
             make_database(t.file("t.db"));
             write_file(t.file("in.json"), export_with("[]"));
         },
         "db import DIR/in.json --db DB", Where::ReadOnly, 1, "cannot be written", true},
        // A full disk: the same.
        {"db ls: disk full", db, "db ls --db DB", Where::Full, 0, "1 record, 1 key", true},
        {"run: disk full", db, "run GRAPH --db DB --dim M=4", Where::Full, 0, "opened read-only", true},
        {"tune: disk full", db, tune, Where::Full, 1, "is the disk full?", true},
    };
}

}  // namespace

TEST_CASE("database and command-line faults: exit status and message per case") {
    int skipped = 0;
    for (const Case &c : cases()) {
        const std::string name = c.name;
        CAPTURE(name);
        if (c.where == Where::Full && !can_sandbox()) {
            skipped++;
            continue;
        }
        TempDir tmp;
        write_file(tmp.file("g.tsl"), kGraph);
        c.setup(tmp);
        const std::string db_path = tmp.file("t.db");
        const bool existed = fs::exists(db_path);
        const std::string before = existed && fs::is_regular_file(db_path) ? file_bytes(db_path) : "";
        const tessel::SteadyClock::time_point t0 = tessel::SteadyClock::now();
        const Result r = run_case(c, tmp);
        const double s = tessel::seconds_since(t0);
        CAPTURE(r.output);
        MESSAGE(name << ": exit " << r.rc << " in " << s << " s");
        CHECK(r.rc == c.rc);
        CHECK(r.output.find(c.message) != std::string::npos);
        if (c.db_unchanged) {
            CHECK(fs::exists(db_path) == existed);
            if (existed && fs::is_regular_file(db_path)) CHECK(file_bytes(db_path) == before);
        }
        // A read-only run says so once, not once per group or lookup.
        if (std::string(c.name).rfind("run:", 0) == 0 && c.rc == 0) {
            size_t n = 0;
            for (size_t at = 0; (at = r.output.find("opened read-only", at)) != std::string::npos; at++) n++;
            CHECK(n == 1);
        }
        // Tune refuses before it measures anything.
        if (std::string(c.name).rfind("tune:", 0) == 0) CHECK(r.output.find("candidate") == std::string::npos);
    }
    if (skipped) MESSAGE(skipped << " full-disk cases skipped: no private mount namespace here (not root?)");
}

TEST_CASE("kill -9 during tessel tune never corrupts the database; a rerun loses and duplicates nothing") {
    TempDir tmp;
    write_file(tmp.file("g.tsl"), kGraph);
    const std::string db_path = tmp.file("t.db");
    const std::vector<std::string> argv_s = {
        TESSEL_EXECUTABLE, "tune", tmp.file("g.tsl"), "--db", db_path,        "--shapes", "3x8x16,5x8x16,7x8x16,9x8x16",
        "--budget",        "2",    "--repeats",       "1",    "--no-coverage"};
    auto start_tune = [&] {
        const pid_t pid = fork();
        if (pid == 0) {
            const int null = open("/dev/null", O_WRONLY);
            dup2(null, 1);
            dup2(null, 2);
            std::vector<char *> argv;
            for (const auto &a : argv_s) argv.push_back(const_cast<char *>(a.c_str()));
            argv.push_back(nullptr);
            execv(argv[0], argv.data());
            _exit(127);
        }
        return pid;
    };
    std::mt19937 rng(16);
    std::uniform_int_distribution<int> delay_ms(500, 9000);
    int killed = 0;
    for (int round = 0; round < 4; round++) {
        const pid_t pid = start_tune();
        REQUIRE(pid > 0);
        const int d = delay_ms(rng);
        std::this_thread::sleep_for(std::chrono::milliseconds(d));
        int st = 0;
        if (waitpid(pid, &st, WNOHANG) == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            killed++;
        }
        if (fs::exists(db_path)) {
            TuningDatabase db(db_path, 60000, TuningDatabase::Access::ReadOnly);
            CHECK(db.integrity_check() == "ok");
            MESSAGE("round " << round << ": killed after " << d << " ms; " << db.size() << " records");
        }
    }
    // The rerun completes: every shape a database hit or measured now.
    const pid_t pid = start_tune();
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
    TuningDatabase db(db_path);
    CHECK(db.integrity_check() == "ok");
    std::map<std::string, int> measured_per_key;
    for (const TuningRecord &r : db.all())
        if (r.measured_by == "measured") measured_per_key[r.key.to_json().dump()]++;
    CHECK(measured_per_key.size() == 4);
    for (const auto &[key, n] : measured_per_key) CHECK(n == 1);
    MESSAGE(killed << " of 4 runs killed mid-tune; " << db.size() << " records after the rerun");
}
