// TuningDatabase (SQLite) and MemoryTuningCache: key sensitivity (each key part mutated in turn
// misses), best/top_k order, JSON export/import, concurrent writers, schema-version refusal and
// damaged files; machine numbers stored per machine and ISA and the target model they give.
#include <doctest/doctest.h>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "autoscheduler/TargetModel.h"
#include "autoscheduler/TuningDatabase.h"
#include "schedules/ScheduleJson.h"

#include "tests/TempDir.h"
#include "tests/autoscheduler/TuningSamples.h"

using namespace tessel;
using namespace tessel::autosched;
namespace fs = std::filesystem;

using tessel::testing::sample_key;
using tessel::testing::sample_record;
using tessel::testing::sample_schedule;
using tessel::testing::TempDir;

namespace {

/** Every key part, each mutated on its own. */
const std::vector<std::pair<const char *, std::function<void(TuningKey &)>>> kMutations = {
    {"group_hash", [](TuningKey &k) { k.group_hash[0] = k.group_hash[0] == '0' ? '1' : '0'; }},
    {"shape_class", [](TuningKey &k) { k.shape_class = "square"; }},
    {"shapes", [](TuningKey &k) { k.shapes = "K=4096,M=2,N=4096"; }},
    {"target", [](TuningKey &k) { k.target = "x86-64-linux-avx2-fma-sse41"; }},  // one feature fewer
    {"numeric_mode", [](TuningKey &k) { k.numeric_mode = "fast"; }},
    {"space_version", [](TuningKey &k) { k.space_version += 1; }},
    {"tessel_version", [](TuningKey &k) { k.tessel_version = "0.1.1"; }},
    {"halide_version", [](TuningKey &k) { k.halide_version = "21.0.1"; }},
    {"schema_version", [](TuningKey &k) { k.schema_version += 1; }},
};

void check_key_sensitivity(TuningCache &cache) {
    TuningKey key = sample_key();
    cache.commit(sample_record(key, 1.5));
    REQUIRE(cache.lookup(key).has_value());
    CHECK(cache.lookup(key)->median_ms == 1.5);
    std::set<std::string> covered;
    for (const auto &[part, mutate] : kMutations) {
        CAPTURE(part);
        TuningKey k = key;
        mutate(k);
        // The mutation changes exactly this part.
        nlohmann::json a = key.to_json(), b = k.to_json();
        int changed = 0;
        for (auto it = a.begin(); it != a.end(); ++it) changed += b[it.key()] != it.value();
        CHECK(changed == 1);
        CHECK(a[part] != b[part]);
        covered.insert(part);
        CHECK_FALSE(k == key);
        CHECK_FALSE(cache.lookup(k).has_value());
        CHECK(cache.top_k(k, 5).empty());
    }
    // A key part added without a mutation above fails here.
    CHECK(covered.size() == key.to_json().size());
    CHECK(cache.lookup(key).has_value());
}

/** Open a TuningDatabase and run one query; for damaged files the error may come at either step. */
void open_and_read(const std::string &path) {
    TuningDatabase db(path);
    db.all();
}

}  // namespace

TEST_CASE("tuning database: a lookup hits only when every key part matches (each part mutated)") {
    TempDir tmp;
    SUBCASE("sqlite") {
        TuningDatabase db(tmp.file("t.db"));
        check_key_sensitivity(db);
    }
    SUBCASE("memory") {
        MemoryTuningCache mem;
        check_key_sensitivity(mem);
    }
}

TEST_CASE("tuning database: keeps every record; best is the fastest measurement; top_k in order") {
    TempDir tmp;
    TuningDatabase db(tmp.file("t.db"));
    MemoryTuningCache mem;
    TuningKey key = sample_key();
    TuningKey other = key;
    other.shapes = "K=4096,M=4096,N=4096";
    for (TuningCache *c : std::initializer_list<TuningCache *>{&db, &mem}) {
        c->commit(sample_record(key, 3.0));
        c->commit(sample_record(key, 1.0));
        c->commit(sample_record(key, 0.5, "model"));  // a prediction never beats a measurement
        c->commit(sample_record(key, 2.0));
        c->commit(sample_record(key, 1.0, "measured", 16, "same time, committed later"));
        c->commit(sample_record(other, 0.1));
        c->commit(sample_record(key, 2.0));  // identical to an earlier record: stored once
    }
    CHECK(db.size() == 6);
    CHECK(mem.all().size() == 6);
    for (TuningCache *c : std::initializer_list<TuningCache *>{&db, &mem}) {
        std::optional<TuningRecord> best = c->lookup(key);
        REQUIRE(best);
        CHECK(best->median_ms == 1.0);
        CHECK(best->notes.empty());  // ties keep commit order
        std::vector<TuningRecord> top = c->top_k(key, 10);
        REQUIRE(top.size() == 5);
        std::vector<double> ms;
        for (const TuningRecord &r : top) ms.push_back(r.median_ms);
        CHECK(ms == std::vector<double>{1.0, 1.0, 2.0, 3.0, 0.5});
        CHECK(top.back().measured_by == "model");
        CHECK(c->top_k(key, 2).size() == 2);
        CHECK(c->top_k(key, 0).empty());
        CHECK(c->lookup(other)->median_ms == 0.1);
    }
    CHECK(db.best(key) == mem.lookup(key));
    CHECK(db.top_k(key, 10) == mem.top_k(key, 10));
    // The stored record reads back field for field.
    CHECK(*db.best(other) == sample_record(other, 0.1));
}

TEST_CASE("tuning database: commit refuses malformed records") {
    TempDir tmp;
    TuningDatabase db(tmp.file("t.db"));
    CHECK_THROWS_WITH_AS(db.commit(sample_record(sample_key(), 1.0, "guessed")), doctest::Contains("measured_by"),
                         TuningDatabaseError);
    CHECK_THROWS_WITH_AS(db.commit(sample_record(sample_key(), std::nan(""))), doctest::Contains("median_ms"),
                         TuningDatabaseError);
    CHECK(db.size() == 0);
}

TEST_CASE("tuning database: JSON export/import round trip; import is idempotent and atomic") {
    TempDir tmp;
    TuningDatabase a(tmp.file("a.db"));
    TuningKey k1 = sample_key(), k2 = sample_key();
    k2.target = "host-cuda-cuda_capability_90";
    a.commit(sample_record(k1, 1.25));
    a.commit(sample_record(k1, 0.75, "measured", 16, "note with \"quotes\" and | bars"));
    a.commit(sample_record(k2, 0.05, "model"));
    nlohmann::json doc = a.export_json();
    CHECK(doc["format"] == "tessel-tuning-db");
    CHECK(doc["schema_version"] == kTuningDatabaseSchemaVersion);
    CHECK(doc["records"].size() == 3);

    // Through text, as `tessel db export` writes it.
    nlohmann::json reread = nlohmann::json::parse(doc.dump(2));
    TuningDatabase b(tmp.file("b.db"));
    CHECK(b.import_json(reread) == 3);
    // Everything arrives, measured records as "imported" (measured elsewhere: verified on use).
    std::vector<TuningRecord> expected = a.all();
    for (auto &r : expected)
        if (r.measured_by == kMeasured) r.measured_by = kImported;
    CHECK(b.all() == expected);
    CHECK(b.import_json(reread) == 0);  // same records again: stored once
    CHECK(b.import_json(b.export_json()) == 0);
    CHECK(b.size() == 3);
    CHECK(b.lookup(k1)->median_ms == 0.75);
    CHECK(b.lookup(k1)->measured_by == kImported);

    SUBCASE("a malformed record imports nothing and names the record") {
        nlohmann::json bad = doc;
        bad["records"].push_back(sample_record(k1, 9.0).to_json());
        bad["records"][3].erase("median_ms");
        TuningDatabase c(tmp.file("c.db"));
        CHECK_THROWS_WITH_AS(c.import_json(bad), doctest::Contains("records[3].median_ms: missing"), TuningDatabaseError);
        CHECK(c.size() == 0);
    }
    SUBCASE("a schedule that is not a schedule is refused") {
        nlohmann::json bad = doc;
        bad["records"][1]["schedule"] = nlohmann::json{{"steps", 3}};
        CHECK_THROWS_WITH_AS(b.import_json(bad), doctest::Contains("records[1].schedule: schedule.name: missing"),
                             TuningDatabaseError);
    }
    SUBCASE("an export from a newer schema is refused") {
        nlohmann::json bad = doc;
        bad["schema_version"] = kTuningDatabaseSchemaVersion + 1;
        CHECK_THROWS_WITH_AS(b.import_json(bad), doctest::Contains("newer"), TuningDatabaseError);
    }
    SUBCASE("not an export") {
        CHECK_THROWS_WITH_AS(b.import_json(nlohmann::json::array()), doctest::Contains("not a Tessel tuning"),
                             TuningDatabaseError);
    }
}

TEST_CASE("tuning database: several writer processes at once lose no record") {
    TempDir tmp;
    const std::string path = tmp.file("shared.db");  // created by whichever child gets there first
    const int kWriters = 6, kRecords = 40;
    std::fflush(nullptr);
    std::vector<pid_t> children;
    for (int w = 0; w < kWriters; ++w) {
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            int status = 0;
            try {
                TuningDatabase db(path);
                for (int i = 0; i < kRecords; ++i)
                    db.commit(sample_record(sample_key(), 1.0 + i, "measured", 16,
                                            "writer " + std::to_string(w) + " record " + std::to_string(i)));
            } catch (const std::exception &e) {
                std::fprintf(stderr, "writer %d: %s\n", w, e.what());
                status = 1;
            }
            _exit(status);
        }
        children.push_back(pid);
    }
    for (pid_t pid : children) {
        int status = 0;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    TuningDatabase db(path);
    CHECK(db.size() == kWriters * kRecords);
    std::set<std::string> notes;
    for (const TuningRecord &r : db.all()) notes.insert(r.notes);
    CHECK(notes.size() == (size_t)(kWriters * kRecords));
    CHECK(db.lookup(sample_key())->median_ms == 1.0);
}

TEST_CASE("tuning database: writer threads with their own connections lose no record") {
    TempDir tmp;
    const std::string path = tmp.file("threads.db");
    const int kWriters = 4, kRecords = 30;
    std::vector<std::thread> threads;
    std::vector<std::string> errors(kWriters);
    for (int w = 0; w < kWriters; ++w)
        threads.emplace_back([&, w] {
            try {
                TuningDatabase db(path);
                for (int i = 0; i < kRecords; ++i)
                    db.commit(sample_record(sample_key(), 2.0, "measured", 16, std::to_string(w) + "/" + std::to_string(i)));
            } catch (const std::exception &e) {
                errors[w] = e.what();
            }
        });
    for (std::thread &t : threads) t.join();
    for (const std::string &e : errors) CHECK(e == "");
    CHECK(TuningDatabase(path).size() == kWriters * kRecords);
}

TEST_CASE("tuning database: a file from a newer schema is refused with a clear message") {
    TempDir tmp;
    const std::string path = tmp.file("new.db");
    {
        TuningDatabase db(path);
        db.commit(sample_record(sample_key(), 1.0));
    }
    sqlite3 *raw = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw, "UPDATE tessel_schema SET version = 99", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(raw);
    CHECK_THROWS_WITH_AS(TuningDatabase{path}, doctest::Contains("schema version 99, newer than this Tessel supports"),
                         TuningDatabaseError);
}

TEST_CASE("tuning database: damaged or foreign files give a clear error, not a crash") {
    TempDir tmp;
    SUBCASE("text file") {
        const std::string path = tmp.file("text.db");
        std::ofstream(path) << "this is not a database, just some text that is long enough to have a header\n";
        CHECK_THROWS_WITH_AS(open_and_read(path), doctest::Contains("not a valid tuning database"), TuningDatabaseError);
    }
    SUBCASE("pages overwritten") {
        const std::string path = tmp.file("damaged.db");
        {
            TuningDatabase db(path);
            for (int i = 0; i < 50; ++i) db.commit(sample_record(sample_key(), 1.0 + i));
        }
        REQUIRE(fs::file_size(path) > 8192);
        {
            std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(4096);
            std::string junk(fs::file_size(path) - 4096, '\xA5');
            f.write(junk.data(), (std::streamsize)junk.size());
        }
        CHECK_THROWS_AS(open_and_read(path), TuningDatabaseError);
    }
    SUBCASE("another program's SQLite database") {
        const std::string path = tmp.file("foreign.db");
        sqlite3 *raw = nullptr;
        REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
        REQUIRE(sqlite3_exec(raw, "CREATE TABLE photos (id INTEGER)", nullptr, nullptr, nullptr) == SQLITE_OK);
        sqlite3_close(raw);
        CHECK_THROWS_WITH_AS(open_and_read(path), doctest::Contains("not a Tessel tuning database"), TuningDatabaseError);
    }
    SUBCASE("an empty file is a new database") {
        const std::string path = tmp.file("empty.db");
        std::ofstream{path};
        TuningDatabase db(path);
        CHECK(db.size() == 0);
    }
}

TEST_CASE("tuning database: provenance orders lookups; a refused schedule is never returned") {
    TempDir tmp;
    TuningDatabase db(tmp.file("p.db"));
    MemoryTuningCache memory;
    const TuningKey k = sample_key();
    auto record = [&](double ms, const char *by, int tile) {
        TuningRecord r = sample_record(k, ms, by);
        r.schedule = sample_schedule(tile);
        return r;
    };
    for (TuningCache *c : {static_cast<TuningCache *>(&db), static_cast<TuningCache *>(&memory)}) {
        c->commit(record(0.5, kModel, 4));
        c->commit(record(0.9, kImported, 8));
        CHECK(c->lookup(k)->measured_by == kImported);  // any measurement before a prediction
        c->commit(record(1.1, kVerified, 16));
        CHECK(c->lookup(k)->measured_by == kVerified);
        c->commit(record(1.3, kMeasured, 32));
        CHECK(c->lookup(k)->measured_by == kMeasured);
        // Refusing a schedule hides every record of it under this key.
        TuningRecord refused = c->lookup(k).value();
        refused.measured_by = kRefused;
        c->commit(refused);
        const auto next = c->lookup(k);
        REQUIRE(next);
        CHECK(next->schedule == sample_schedule(16));
        CHECK(c->top_k(k, 10).size() == 3);
    }
    CHECK(db.all().size() == 5);  // history kept: the refused verdict beside what it refuses
    CHECK_THROWS_WITH(db.commit(sample_record(k, 1.0, "guessed")), doctest::Contains("measured_by must be one of"));
}

TEST_CASE("tuning database: machine numbers are stored per machine and ISA, replaced, and feed the target model") {
    TempDir tmp;
    const std::string path = tmp.file("machines.db");
    MachineNumbers m{"test machine (family 6 model 1), 2 CPUs", "avx2", 160.0, 20.0, 2, 1700000000};
    {
        TuningDatabase db(path);
        CHECK_FALSE(db.machine_numbers(m.machine, "avx2"));
        db.store_machine_numbers(m);
        m.fma_gflops = 170.0;  // measured again: replaces
        db.store_machine_numbers(m);
        MachineNumbers other = m;
        other.isa = "avx512";
        other.fma_gflops = 340.0;
        db.store_machine_numbers(other);
    }
    TuningDatabase db(path, 60000, TuningDatabase::Access::ReadOnly);
    const auto got = db.machine_numbers(m.machine, "avx2");
    REQUIRE(got);
    CHECK(got->fma_gflops == 170.0);
    CHECK(got->read_gbps == 20.0);
    CHECK(got->threads == 2);
    CHECK(db.machine_numbers(m.machine, "avx512")->fma_gflops == 340.0);
    CHECK_FALSE(db.machine_numbers("another machine", "avx2"));
    CHECK(db.size() == 0);  // numbers are not records

    // The model's peak and bandwidth become the measured ones at that vector width only.
    const TargetModel avx2 = TargetModel::for_target(Halide::Target("x86-64-linux-avx-avx2-fma-f16c-sse41"));
    const TargetModel measured = avx2.with_numbers(got);
    CHECK(measured.cpu.peak_gflops() * 2 / measured.cpu.cores == doctest::Approx(170.0));  // measured on 2 threads
    CHECK(measured.cpu.dram_gbps * 2 / measured.cpu.cores == doctest::Approx(20.0));
    CHECK(measured.to_string().find("measured: 170 GFLOP/s FMA, 20 GB/s cold read (avx2, 2 threads, measured 2023-11-14)") !=
          std::string::npos);
    CHECK(avx2.to_string().find("(nominal)") != std::string::npos);
    const TargetModel avx512 = TargetModel::for_target(Halide::Target("x86-64-linux-avx-avx2-avx512-fma-f16c-sse41"));
    CHECK(avx512.with_numbers(got).cpu.numbers == "nominal");  // avx2 numbers, avx512 target
    CHECK(TargetModel::for_target(Halide::Target("host-cuda")).with_numbers(got).cpu.numbers == "nominal");
}

TEST_CASE("machine numbers: this machine's identity and a measurement") {
    const std::string id = machine_identity();
    INFO(id);
    CHECK(id.find("CPUs, flags ") != std::string::npos);
    CHECK(id == machine_identity());
    const MachineNumbers m = measure_machine(Halide::Target("x86-64-linux-avx-avx2-fma-f16c-sse41"), 1);
    INFO(m.to_string());
    CHECK(m.isa == "avx2");
    CHECK(m.threads == 1);
    // Positive and finite; under a parallel test run the values themselves mean little.
    CHECK(m.fma_gflops > 0);
    CHECK(m.fma_gflops < 1e5);
    CHECK(m.read_gbps > 0);
    CHECK(m.read_gbps < 1e4);
}
