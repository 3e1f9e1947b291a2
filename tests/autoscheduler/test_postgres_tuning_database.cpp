// The tuning database on a real PostgreSQL server (tests/PostgresServer.h) against the SQLite
// file: each behaviour runs on both backends through TuningStore and must agree (lookup on every
// key part, best/top_k order, refused schedules, identical records once, export/import, machine
// numbers, layout rates); `tessel db pull` both ways; the server's schema-version check; and the
// faults a user meets: a bad URL, a server that is down, refused authentication, a read-only
// role, a full disk on the server (as root: a tablespace on a small tmpfs).
#include <doctest/doctest.h>

#include <functional>
#include <sstream>

#include "autoscheduler/PostgresTuningDatabase.h"
#include "autoscheduler/TuningDatabase.h"
#include "driver/DatabaseCommands.h"
#include "schedules/ScheduleJson.h"

#include "tests/PostgresServer.h"
#include "tests/TempDir.h"
#include "tests/autoscheduler/TuningSamples.h"

using namespace tessel;
using namespace tessel::autosched;
using tessel::testing::PostgresServer;
using tessel::testing::sample_key;
using tessel::testing::sample_record;
using tessel::testing::sample_schedule;
using tessel::testing::TempDir;

namespace {

const std::vector<std::pair<const char *, std::function<void(TuningKey &)>>> kMutations = {
    {"group_hash", [](TuningKey &k) { k.group_hash[0] = '9'; }},
    {"shape_class", [](TuningKey &k) { k.shape_class = "square"; }},
    {"shapes", [](TuningKey &k) { k.shapes = "K=4096,M=2,N=4096"; }},
    {"target", [](TuningKey &k) { k.target = "x86-64-linux-avx2-fma-sse41"; }},
    {"numeric_mode", [](TuningKey &k) { k.numeric_mode = "fast"; }},
    {"space_version", [](TuningKey &k) { k.space_version += 1; }},
    {"tessel_version", [](TuningKey &k) { k.tessel_version += ".1"; }},
    {"halide_version", [](TuningKey &k) { k.halide_version = "0.0.0"; }},
    {"schema_version", [](TuningKey &k) { k.schema_version += 1; }},
};

/** Runs `check` on a fresh SQLite file and a fresh server database (named `db`). */
void on_both_backends(PostgresServer &server, const std::string &db, const std::function<void(TuningStore &)> &check) {
    TempDir tmp;
    {
        INFO("backend: SQLite");
        TuningDatabase sqlite(tmp.file("t.db"));
        check(sqlite);
    }
    {
        INFO("backend: PostgreSQL");
        PostgresTuningDatabase pg(server.fresh_database(db));
        check(pg);
    }
}

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

std::string error_of(const std::function<void()> &f) {
    try {
        f();
    } catch (const std::exception &e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("tuning server: a lookup hits only when every key part matches, on both backends") {
    TESSEL_REQUIRE_POSTGRES(server);
    on_both_backends(server, "keys", [](TuningStore &db) {
        const TuningKey k = sample_key();
        db.commit(sample_record(k, 1.5));
        REQUIRE(db.lookup(k));
        CHECK(db.lookup(k)->median_ms == 1.5);
        for (const auto &[part, mutate] : kMutations) {
            TuningKey other = k;
            mutate(other);
            INFO("mutated part: " << part);
            CHECK_FALSE(db.lookup(other));
        }
    });
}

TEST_CASE("tuning server: every record kept, an identical one once; best and top_k in the same order as SQLite") {
    TESSEL_REQUIRE_POSTGRES(server);
    on_both_backends(server, "records_order", [](TuningStore &db) {
        const TuningKey k = sample_key();
        db.commit(sample_record(k, 2.0, "measured", 8));
        db.commit(sample_record(k, 1.25, "measured", 16));
        db.commit(sample_record(k, 1.25, "measured", 16));  // identical: stored once
        db.commit(sample_record(k, 0.5, "model", 32));      // faster but only a model estimate
        db.commit(sample_record(k, 0.9, "imported", 64));
        CHECK(db.size() == 4);
        CHECK(db.all().size() == 4);
        CHECK(db.all()[0].median_ms == 2.0);  // commit order
        REQUIRE(db.best(k));
        CHECK(db.best(k)->median_ms == 1.25);
        const auto top = db.top_k(k, 10);
        REQUIRE(top.size() == 4);
        CHECK(top[0].median_ms == 1.25);
        CHECK(top[1].median_ms == 2.0);
        CHECK(top[2].measured_by == "imported");
        CHECK(top[3].measured_by == "model");
        CHECK(db.top_k(k, 2).size() == 2);
        CHECK(db.top_k(k, 0).empty());
        // A refused schedule hides every record of that key and schedule.
        db.commit(sample_record(k, 9.0, "refused", 16));
        CHECK(db.best(k)->median_ms == 2.0);
        // Records come back field for field.
        CHECK(db.all()[0] == sample_record(k, 2.0, "measured", 8));
        // Malformed records are refused before anything is stored.
        TuningRecord bad = sample_record(k, -1.0);
        CHECK_THROWS_AS(db.commit(bad), TuningDatabaseError);
    });
}

TEST_CASE("tuning server: export/import round trip, idempotent; machine numbers stored and replaced") {
    TESSEL_REQUIRE_POSTGRES(server);
    TempDir tmp;
    TuningDatabase source(tmp.file("source.db"));
    const TuningKey k = sample_key();
    source.commit(sample_record(k, 1.0));
    source.commit(sample_record(k, 3.0, "model", 8));
    const nlohmann::json doc = source.export_json();
    on_both_backends(server, "export", [&](TuningStore &db) {
        CHECK(db.import_json(doc) == 2);
        CHECK(db.import_json(doc) == 0);
        CHECK(db.best(k)->measured_by == "imported");  // measured elsewhere: verified before use
        CHECK(db.export_json()["records"].size() == 2);
        CHECK(db.export_json()["schema_version"] == kTuningDatabaseSchemaVersion);
        nlohmann::json bad = doc;
        bad["records"][1]["median_ms"] = "fast";
        CHECK_THROWS_AS(db.import_json(bad), TuningDatabaseError);
        CHECK(db.size() == 2);  // nothing of the bad document
        nlohmann::json newer = doc;
        newer["schema_version"] = kTuningDatabaseSchemaVersion + 1;
        CHECK(contains(error_of([&] { db.import_json(newer); }), "newer than this Tessel supports"));

        CHECK_FALSE(db.machine_numbers("box", "avx2"));
        MachineNumbers m{"box", "avx2", 100.5, 20.25, 2, 1735689600};
        db.store_machine_numbers(m);
        m.fma_gflops = 120.0;
        db.store_machine_numbers(m);
        REQUIRE(db.machine_numbers("box", "avx2"));
        CHECK(db.machine_numbers("box", "avx2")->fma_gflops == 120.0);
        CHECK(db.machine_numbers("box", "avx2")->read_gbps == 20.25);
        CHECK_FALSE(db.machine_numbers("box", "avx512"));

        CHECK_FALSE(db.layout_rates("box", "avx2"));
        dsl::LayoutRates rates = dsl::LayoutRates::defaults();
        rates.panel_rate[dsl::LayoutRates::Narrow][1] = 0.85;
        db.store_layout_rates("box", "avx2", rates, 1735689600);
        rates.conversion_cost = 3.5;
        db.store_layout_rates("box", "avx2", rates, 1735689600);
        REQUIRE(db.layout_rates("box", "avx2"));
        CHECK(db.layout_rates("box", "avx2")->panel_rate[dsl::LayoutRates::Narrow][1] == 0.85);
        CHECK(db.layout_rates("box", "avx2")->conversion_cost == 3.5);
        CHECK(contains(db.layout_rates("box", "avx2")->source, "measured on this machine"));
        CHECK_FALSE(db.layout_rates("box", "avx512"));
        db.check_writable();
    });
}

TEST_CASE("tessel db pull / ls / export: between a SQLite file and a server, both ways, idempotent") {
    TESSEL_REQUIRE_POSTGRES(server);
    TempDir tmp;
    const std::string url = server.fresh_database("pull");
    const std::string local = tmp.file("local.db"), back = tmp.file("back.db");
    {
        TuningDatabase db(local);
        db.commit(sample_record(sample_key(), 1.0));
        TuningKey other = sample_key();
        other.shapes = "K=4096,M=8,N=4096";
        db.commit(sample_record(other, 2.0));
    }
    std::ostringstream out, err;
    REQUIRE(db_pull(local, url, out, err) == 0);
    CHECK(contains(out.str(), "pulled 2 new records from " + local + " into " + url));
    CHECK(db_pull(local, url, out, err) == 0);
    CHECK(contains(out.str(), "pulled 0 new records"));
    REQUIRE(db_pull(url, back, out, err) == 0);
    CHECK(TuningDatabase(back).size() == 2);
    std::ostringstream listing;
    CHECK(db_list(url, listing, err) == 0);
    CHECK(contains(listing.str(), "2 records, 2 keys"));
    std::ostringstream json;
    CHECK(db_export(url, "-", json, err) == 0);
    CHECK(nlohmann::json::parse(json.str())["records"].size() == 2);
    CHECK(db_pull(url, url, out, err) == 1);
}

TEST_CASE("tuning server: a schema version newer than this Tessel's is refused, naming the server") {
    TESSEL_REQUIRE_POSTGRES(server);
    const std::string url = server.fresh_database("schema");
    { PostgresTuningDatabase created(url); }
    CHECK(server.query_one("SELECT version FROM tessel_schema WHERE name = 'tuning'", "schema") ==
          std::to_string(kTuningDatabaseSchemaVersion));
    server.admin("UPDATE tessel_schema SET version = version + 1 WHERE name = 'tuning'", "schema");
    const std::string e = error_of([&] { PostgresTuningDatabase db(url); });
    CHECK(contains(e, "tuning server " + url));
    CHECK(contains(e, "newer than this Tessel supports"));
}

TEST_CASE("tuning server faults: bad URL, server down, refused authentication, read-only role") {
    TESSEL_REQUIRE_POSTGRES(server);
    const std::string url = server.fresh_database("faults");
    {
        PostgresTuningDatabase db(url);
        db.commit(sample_record(sample_key(), 1.0));
        db.store_layout_rates("box", "avx2", dsl::LayoutRates::defaults(), 1735689600);
    }

    // Malformed URL: said before any connection.
    std::string e = error_of([] { open_tuning_store("postgresql://tessel@127.0.0.1:notaport/x"); });
    CHECK(contains(e, "tuning server"));
    CHECK(contains(e, "127.0.0.1"));
    // Nothing listening.
    e = error_of([] { open_tuning_store("postgresql://tessel@127.0.0.1:1/tuning"); });
    CHECK(contains(e, "tuning server postgresql://tessel@127.0.0.1:1/tuning: cannot connect"));
    CHECK(contains(e, "is the server running"));
    // A database that does not exist.
    e = error_of([&] { open_tuning_store(server.url("no_such_db")); });
    CHECK(contains(e, "no_such_db"));
    CHECK(contains(e, "does not exist"));
    // Refused authentication: the message names the role, never the password.
    const std::string secured = "postgresql://secured:wrong-password@127.0.0.1:" + std::to_string(server.port()) + "/faults";
    e = error_of([&] { open_tuning_store(secured); });
    CHECK(contains(e, "authentication refused for role 'secured'"));
    CHECK(contains(e, "postgresql://secured@127.0.0.1:" + std::to_string(server.port()) + "/faults"));
    CHECK_FALSE(contains(e, "wrong-password"));
    CHECK(redact_postgres_url(secured).find("wrong-password") == std::string::npos);

    // A read-only role: lookups work, a commit or a write check says the role may not write.
    server.add_reader("faults");
    const auto reader = open_tuning_store(server.url("faults", "reader"));
    CHECK_FALSE(reader->writable());
    CHECK(reader->lookup(sample_key()));
    e = error_of([&] { reader->check_writable(); });
    CHECK(contains(e, "role 'reader' may not write"));
    CHECK(contains(e, server.url("faults", "reader")));
    CHECK_THROWS_AS(reader->commit(sample_record(sample_key(), 2.0)), TuningDatabaseError);
    CHECK(reader->layout_rates("box", "avx2"));
    CHECK(contains(error_of([&] { reader->store_layout_rates("box", "avx2", dsl::LayoutRates::defaults(), 0); }),
                   "may not write"));
    std::string note;
    CHECK(open_tuning_store_for_reading(server.url("faults", "reader"), &note));
    CHECK(contains(note, "may not write"));
    // On an empty database the read-only role cannot create the schema: said, with the server's reason.
    server.fresh_database("empty_for_reader");
    server.add_reader("empty_for_reader");
    e = error_of([&] { open_tuning_store(server.url("empty_for_reader", "reader")); });
    CHECK(contains(e, "cannot create the schema"));
    CHECK(contains(e, "permission denied"));
}

TEST_CASE("tuning server faults: a full disk on the server is an error naming the server and the full disk") {
    TESSEL_REQUIRE_POSTGRES(server);
    if (const std::string no_disk = server.add_small_tablespace("small_disk", 24); !no_disk.empty()) {
        MESSAGE(no_disk << ": skipped");
        return;
    }
    server.admin("CREATE DATABASE full_disk TABLESPACE small_disk");
    const std::string url = server.url("full_disk");
    PostgresTuningDatabase db(url);
    db.commit(sample_record(sample_key(), 1.0));
    server.admin("ALTER TABLE records SET (autovacuum_enabled = false)", "full_disk");
    // Fill the disk with records until the server cannot extend the table.
    std::string filled;
    for (int batch = 0; batch < 400 && filled.empty(); batch++) {
        try {
            server.admin(
                "INSERT INTO records (record_sha256, key_json, group_hash, shape_class, shapes, target, numeric_mode, "
                "space_version, tessel_version, halide_version, key_schema_version, schedule_json, median_ms, samples_json, "
                "cost_model_version, measured_by, created_unix, notes) SELECT md5(random()::text) || g, 'fill' || g, '', '', '', "
                "'', '', 0, '', '', 1, '{}', 1, '[]', '', 'model', 0, (SELECT string_agg(md5(random()::text || g || s), '') FROM "
                "generate_series(1, 30) s) FROM generate_series(1, 200) g",
                "full_disk");
        } catch (const std::exception &e) {
            filled = e.what();
        }
    }
    REQUIRE_MESSAGE(filled.find("No space left on device") != std::string::npos, filled);
    TuningRecord r = sample_record(sample_key(), 2.0);
    r.notes = std::string(4000, 'n');
    const std::string e = error_of([&] { db.commit(r); });
    MESSAGE("full disk: " << e);
    CHECK(contains(e, "tuning server " + url + ": cannot insert a record"));
    CHECK(contains(e, "No space left on device"));
    CHECK(contains(e, "the server's disk is full"));
    CHECK(db.lookup(sample_key())->median_ms == 1.0);  // lookups still work
    server.admin("DROP DATABASE full_disk WITH (FORCE)");
    server.admin("DROP TABLESPACE small_disk");
}
