/** \file
 * TuningDatabase: the tuning records in a SQLite file (TuningDatabase.h). The machines table is
 * in TuningDatabaseMachines.cpp, the records' JSON form and order in TuningRecord.cpp.
 *
 * Map: TuningDatabase::TuningDatabase (a directory refused; open_read_write: WAL, busy timeout,
 * schema creation and version check in one IMMEDIATE transaction, a file it created removed on
 * failure; open_read_only: mode=ro, else immutable) -> open_for_reading / check_writable /
 * integrity_check -> commit / query / insert -> export_json / parse_export / import_json.
 *
 * File layout (schema version 1):
 *   tessel_schema(name TEXT PRIMARY KEY, version INTEGER)   -- one row: ('tuning', 1)
 *   records(id, key_json, <one column per key part>, schedule_json, median_ms, samples_json,
 *           cost_model_version, measured_by, created_unix, notes,
 *           UNIQUE over every field but id)
 *   machines(...)   -- TuningDatabaseMachines.cpp; added to version-1 files on open
 * key_json is TuningKey::to_json().dump() (sorted fields), so lookups compare one canonical
 * text; the per-part columns are for humans and for `sqlite3` queries.
 */
#include "autoscheduler/TuningDatabase.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "autoscheduler/SqliteStatement.h"
#include "schedules/ScheduleJson.h"

namespace tessel::autosched {

namespace {

using nlohmann::json;
using sqlite::is_busy;
using sqlite::Stmt;
namespace fs = std::filesystem;

constexpr const char *kExportFormat = "tessel-tuning-db";

const char *kCreateSchema = R"sql(
CREATE TABLE tessel_schema (name TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE records (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  key_json TEXT NOT NULL,
  group_hash TEXT NOT NULL,
  shape_class TEXT NOT NULL,
  shapes TEXT NOT NULL,
  target TEXT NOT NULL,
  numeric_mode TEXT NOT NULL,
  space_version INTEGER NOT NULL,
  tessel_version TEXT NOT NULL,
  halide_version TEXT NOT NULL,
  key_schema_version INTEGER NOT NULL,
  schedule_json TEXT NOT NULL,
  median_ms REAL NOT NULL,
  samples_json TEXT NOT NULL,
  cost_model_version TEXT NOT NULL,
  measured_by TEXT NOT NULL,
  created_unix INTEGER NOT NULL,
  notes TEXT NOT NULL,
  UNIQUE (key_json, schedule_json, median_ms, samples_json, cost_model_version, measured_by,
          created_unix, notes));
CREATE INDEX records_by_key ON records (key_json, median_ms);
)sql";

/** The best-first order of better_record(), in SQL (provenance_rank's order). */
const char *kBestOrder =
    " ORDER BY CASE measured_by WHEN 'measured' THEN 0 WHEN 'verified' THEN 1 WHEN 'imported' THEN 2 ELSE 3 END,"
    " median_ms ASC, id ASC";
/** Records a lookup may return: not refused, and no refused record of the same key and schedule. */
const char *kUsable =
    " AND measured_by != 'refused' AND NOT EXISTS (SELECT 1 FROM records AS r WHERE r.key_json = records.key_json"
    " AND r.schedule_json = records.schedule_json AND r.measured_by = 'refused')";

const char *kRecordColumns =
    "key_json, schedule_json, median_ms, samples_json, cost_model_version, measured_by, created_unix, notes";

TuningRecord row_to_record(const Stmt &s) {
    TuningRecord r;
    r.key = TuningKey::from_json(json::parse(s.text(0)));
    r.schedule = json::parse(s.text(1));
    r.median_ms = s.real(2);
    r.samples = json::parse(s.text(3)).get<std::vector<double>>();
    r.cost_model_version = s.text(4);
    r.measured_by = s.text(5);
    r.created_unix = s.int64(6);
    r.notes = s.text(7);
    return r;
}

}  // namespace

void TuningDatabase::fail(const std::string &what, int rc) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    int primary = rc & 0xff;
    std::string hint;
    if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
        hint = " (the file is not a valid tuning database; move it aside or pass another --db path)";
    else if (is_busy(rc))
        hint = " (another process held the database lock past the busy timeout)";
    else if (primary == SQLITE_FULL || primary == SQLITE_IOERR)
        hint = " (is the disk full? commands that only read open the database read-only and still work)";
    else if (primary == SQLITE_READONLY)
        hint = " (the file or its directory cannot be written)";
    else if (primary == SQLITE_CANTOPEN)
        hint = " (does the directory exist, and may this user write there?)";
    throw TuningDatabaseError("tuning database '" + path_ + "': " + what + ": " + msg + hint);
}

void TuningDatabase::exec(const char *sql) {
    char *err = nullptr;
    int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
    sqlite3_free(err);
    if (rc != SQLITE_OK) fail(std::string("cannot run ") + std::string(sql).substr(0, 40), rc);
}

void TuningDatabase::begin_immediate(const char *why) {
    // The busy handler covers most waits; a few lock states (WAL recovery, a journal-mode switch
    // in progress) return SQLITE_BUSY at once, so retry until the deadline.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms_);
    for (;;) {
        int rc = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
        if (rc == SQLITE_OK) return;
        if (!is_busy(rc) || std::chrono::steady_clock::now() > deadline) fail(why, rc);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

TuningDatabase::TuningDatabase(const std::string &path, int busy_timeout_ms, Access access)
    : path_(path), busy_timeout_ms_(busy_timeout_ms), access_(access) {
    std::error_code ec;
    if (path != ":memory:" && fs::is_directory(path, ec))
        throw TuningDatabaseError("tuning database '" + path_ +
                                  "' is a directory, not a database file; pass a file path with --db");
    if (access == Access::ReadOnly) {
        if (path != ":memory:" && !fs::exists(path, ec))
            throw TuningDatabaseError("tuning database '" + path_ + "' does not exist");
        open_read_only();
        return;
    }
    // A file this object creates and cannot finish is removed, so a failed open leaves nothing.
    const bool created = path != ":memory:" && !fs::exists(path, ec);
    try {
        open_read_write();
    } catch (...) {
        if (db_) sqlite3_close(db_);
        db_ = nullptr;
        if (created)
            for (const char *suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix, ec);
        throw;
    }
}

void TuningDatabase::open_read_write() {
    int rc = sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    if (rc != SQLITE_OK) fail("cannot open", rc);
    sqlite3_busy_timeout(db_, busy_timeout_ms_);
    sqlite3_extended_result_codes(db_, 1);
    // SQLite opens a file it may not write read-only without saying so; say so here, before
    // anyone measures for a commit that would fail.
    if (sqlite3_db_readonly(db_, "main") == 1)
        throw TuningDatabaseError("tuning database '" + path_ +
                                  "' cannot be written (a read-only file or file system); pass another --db path");

    // Another program's file or a damaged one is refused before anything is written to it
    // (switching to WAL rewrites the header).
    // (Only a refusal here: a file another tuner is creating right now may not show its
    // schema yet; the check under the lock below decides.)
    std::error_code ec;
    if (path_ != ":memory:" && fs::file_size(path_, ec) > 0 && !ec) {
        try {
            check_schema(false);
        } catch (const TuningDatabaseError &e) {
            if (std::string(e.what()).find("is empty (no Tessel schema)") == std::string::npos) throw;
        }
    }

    // Switching to WAL needs a moment of exclusive access when the file is new; several
    // tuners starting together may see SQLITE_BUSY here despite the busy handler: retry.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms_);
    for (;;) {
        Stmt wal(db_, "PRAGMA journal_mode=WAL");
        rc = wal.prepare_rc() == SQLITE_OK ? wal.step() : wal.prepare_rc();
        if (rc == SQLITE_ROW || rc == SQLITE_DONE) break;
        if (!is_busy(rc) || std::chrono::steady_clock::now() > deadline) fail("cannot enable WAL mode", rc);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    begin_immediate("cannot lock to check the schema");
    try {
        check_schema(true);
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

void TuningDatabase::open_read_only() {
    // mode=ro first: it sees every committed transaction, but needs the WAL index (-shm), which
    // a read-only directory or a full disk may refuse; then immutable=1, which needs nothing.
    int rc = SQLITE_OK;
    std::string first_error;
    for (const char *mode : {"mode=ro", "immutable=1"}) {
        char *uri = sqlite3_mprintf("file:%s?%s", path_.c_str(), mode);
        if (path_ == ":memory:") {
            sqlite3_free(uri);
            uri = sqlite3_mprintf(":memory:");
        }
        rc = sqlite3_open_v2(uri, &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
        sqlite3_free(uri);
        if (rc == SQLITE_OK) {
            sqlite3_busy_timeout(db_, busy_timeout_ms_);
            sqlite3_extended_result_codes(db_, 1);
            try {
                check_schema(false);
                return;
            } catch (const TuningDatabaseError &e) {
                const int primary = sqlite3_errcode(db_) & 0xff;
                const bool retry =
                    primary == SQLITE_CANTOPEN || primary == SQLITE_IOERR || primary == SQLITE_READONLY || primary == SQLITE_BUSY;
                sqlite3_close(db_);
                db_ = nullptr;
                if (!retry) throw;
                if (first_error.empty()) first_error = e.what();
            }
        } else {
            sqlite3_close(db_);
            db_ = nullptr;
        }
    }
    if (!first_error.empty()) throw TuningDatabaseError(first_error);
    fail("cannot open read-only", rc);
}

void TuningDatabase::check_schema(bool writable) {
    // Names the file's problem before any other query: a file that is not SQLite or is damaged
    // fails here, with the hint fail() adds.
    Stmt tables(db_, "SELECT name FROM sqlite_master WHERE type = 'table'");
    if (tables.prepare_rc() != SQLITE_OK) fail("cannot read the schema", tables.prepare_rc());
    bool ours = false, any = false;
    int rc;
    while ((rc = tables.step()) == SQLITE_ROW) {
        any = true;
        ours |= tables.text(0) == "tessel_schema";
    }
    if (rc != SQLITE_DONE) fail("cannot read the schema", rc);
    if (ours) {
        Stmt v(db_, "SELECT version FROM tessel_schema WHERE name = 'tuning'");
        if (v.prepare_rc() != SQLITE_OK || v.step() != SQLITE_ROW)
            throw TuningDatabaseError("tuning database '" + path_ + "': the schema version is missing");
        int64_t version = v.int64(0);
        if (version > kTuningDatabaseSchemaVersion)
            throw TuningDatabaseError("tuning database '" + path_ + "' has schema version " + std::to_string(version) +
                                      ", newer than this Tessel supports (" + std::to_string(kTuningDatabaseSchemaVersion) +
                                      "); use a newer Tessel or another --db path");
        // Older versions: none exist yet. Migrations go here, inside the caller's transaction.
        if (writable) create_machines_table();
    } else if (any) {
        throw TuningDatabaseError("tuning database '" + path_ +
                                  "' is a SQLite database but not a Tessel tuning database; pass another --db path");
    } else if (!writable) {
        throw TuningDatabaseError("tuning database '" + path_ + "' is empty (no Tessel schema) and opened read-only");
    } else {
        exec(kCreateSchema);
        create_machines_table();
        Stmt ins(db_, "INSERT INTO tessel_schema (name, version) VALUES ('tuning', ?)");
        ins.bind(1, (int64_t)kTuningDatabaseSchemaVersion);
        if ((rc = ins.step()) != SQLITE_DONE) fail("cannot write the schema version", rc);
    }
}

std::unique_ptr<TuningDatabase> TuningDatabase::open_for_reading(const std::string &path, std::string *note) {
    if (note) note->clear();
    std::string why;
    try {
        return std::make_unique<TuningDatabase>(path);
    } catch (const TuningDatabaseError &e) {
        why = e.what();
    }
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw TuningDatabaseError(why);
    if (!fs::exists(path, ec)) {
        if (note) *note = why + "; continuing without a tuning database (nothing is stored)";
        return nullptr;
    }
    std::unique_ptr<TuningDatabase> db;
    try {
        db = std::make_unique<TuningDatabase>(path, 60000, Access::ReadOnly);
    } catch (const TuningDatabaseError &e) {
        // Not a readable tuning database either: the read-write error says more when it names
        // the file's contents; a read-only open's when the first one was about writing.
        throw TuningDatabaseError(std::string(e.what()).find("cannot be written") == std::string::npos ? e.what() : why);
    }
    if (note) *note = "tuning database '" + path + "' opened read-only (" + why + "); lookups only, model picks are not stored";
    return db;
}

void TuningDatabase::require_writable(const char *what) const {
    if (access_ != Access::ReadWrite)
        throw TuningDatabaseError("tuning database '" + path_ + "' was opened read-only: cannot " + what);
}

void TuningDatabase::check_writable() {
    require_writable("write");
    begin_immediate("cannot lock to check that the database can be written");
    try {
        exec("INSERT OR REPLACE INTO tessel_schema (name, version) VALUES ('write-check', 0)");
        exec("DELETE FROM tessel_schema WHERE name = 'write-check'");
        exec("COMMIT");
    } catch (const TuningDatabaseError &e) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw TuningDatabaseError(std::string(e.what()) + " (the database cannot take a commit now: disk full or read-only?)");
    }
}

std::string TuningDatabase::integrity_check() {
    Stmt s(db_, "PRAGMA integrity_check");
    if (s.prepare_rc() != SQLITE_OK) fail("cannot check integrity", s.prepare_rc());
    std::string out;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) out += (out.empty() ? "" : "\n") + s.text(0);
    if (rc != SQLITE_DONE) fail("cannot check integrity", rc);
    return out;
}

TuningDatabase::~TuningDatabase() { sqlite3_close(db_); }

bool TuningDatabase::insert(const TuningRecord &r) {
    static const std::string sql =
        std::string("INSERT OR IGNORE INTO records (") + kRecordColumns +
        ", group_hash, shape_class, shapes, target, numeric_mode, space_version, tessel_version, "
        "halide_version, key_schema_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    Stmt s(db_, sql.c_str());
    if (s.prepare_rc() != SQLITE_OK) fail("cannot prepare insert", s.prepare_rc());
    s.bind(1, r.key.to_json().dump());
    s.bind(2, r.schedule.dump());
    s.bind(3, r.median_ms);
    s.bind(4, json(r.samples).dump());
    s.bind(5, r.cost_model_version);
    s.bind(6, r.measured_by);
    s.bind(7, r.created_unix);
    s.bind(8, r.notes);
    s.bind(9, r.key.group_hash);
    s.bind(10, r.key.shape_class);
    s.bind(11, r.key.shapes);
    s.bind(12, r.key.target);
    s.bind(13, r.key.numeric_mode);
    s.bind(14, (int64_t)r.key.space_version);
    s.bind(15, r.key.tessel_version);
    s.bind(16, r.key.halide_version);
    s.bind(17, (int64_t)r.key.schema_version);
    int rc = s.step();
    if (rc != SQLITE_DONE) fail("cannot insert a record", rc);
    return sqlite3_changes(db_) > 0;
}

void TuningDatabase::commit(const TuningRecord &record) {
    require_writable("commit a record");
    validate_record(record, "tuning database '" + path_ + "': commit");
    begin_immediate("cannot lock to commit");
    try {
        insert(record);
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

std::vector<TuningRecord> TuningDatabase::query(const TuningKey *key, int limit, bool usable_only) {
    std::string sql = std::string("SELECT ") + kRecordColumns + " FROM records";
    sql += key ? std::string(" WHERE key_json = ?") + (usable_only ? kUsable : "") + kBestOrder : std::string(" ORDER BY id ASC");
    if (limit >= 0) sql += " LIMIT " + std::to_string(limit);
    Stmt s(db_, sql.c_str());
    if (s.prepare_rc() != SQLITE_OK) fail("cannot read records", s.prepare_rc());
    if (key) s.bind(1, key->to_json().dump());
    std::vector<TuningRecord> out;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
        try {
            out.push_back(row_to_record(s));
        } catch (const std::exception &e) {
            throw TuningDatabaseError("tuning database '" + path_ + "': a stored record is damaged: " + e.what());
        }
    }
    if (rc != SQLITE_DONE) fail("cannot read records", rc);
    return out;
}

std::optional<TuningRecord> TuningDatabase::best(const TuningKey &key) {
    std::vector<TuningRecord> r = query(&key, 1, true);
    if (r.empty()) return std::nullopt;
    return r.front();
}

std::vector<TuningRecord> TuningDatabase::top_k(const TuningKey &key, int k) {
    if (k <= 0) return {};
    return query(&key, k, true);
}

std::vector<TuningRecord> TuningDatabase::all() { return query(nullptr, -1, false); }

int64_t TuningDatabase::size() {
    Stmt s(db_, "SELECT COUNT(*) FROM records");
    int rc = s.prepare_rc() == SQLITE_OK ? s.step() : s.prepare_rc();
    if (rc != SQLITE_ROW) fail("cannot count records", rc);
    return s.int64(0);
}

json TuningDatabase::export_json() {
    json records = json::array();
    for (const TuningRecord &r : all()) records.push_back(r.to_json());
    return json{{"format", kExportFormat}, {"schema_version", kTuningDatabaseSchemaVersion}, {"records", records}};
}

std::vector<TuningRecord> TuningDatabase::parse_export(const json &doc, const std::string &where) {
    if (!doc.is_object() || doc.value("format", "") != kExportFormat)
        throw TuningDatabaseError(where + ": not a Tessel tuning database export (expected \"format\": \"" + kExportFormat +
                                  "\")");
    if (!doc.contains("schema_version") || !doc["schema_version"].is_number_integer())
        throw TuningDatabaseError(where + ": missing integer \"schema_version\"");
    int64_t version = doc["schema_version"].get<int64_t>();
    if (version > kTuningDatabaseSchemaVersion)
        throw TuningDatabaseError(where + ": the export has schema version " + std::to_string(version) +
                                  ", newer than this Tessel supports (" + std::to_string(kTuningDatabaseSchemaVersion) + ")");
    if (!doc.contains("records") || !doc["records"].is_array()) throw TuningDatabaseError(where + ": missing \"records\" array");

    std::vector<TuningRecord> records;
    const json &rs = doc["records"];
    for (size_t i = 0; i < rs.size(); ++i) {
        const std::string path = "records[" + std::to_string(i) + "]", rw = where + ": " + path;
        try {
            records.push_back(TuningRecord::from_json(rs[i], path));
        } catch (const std::exception &e) {
            throw TuningDatabaseError(where + ": " + e.what());
        }
        try {
            sched::schedule_from_json(records.back().schedule);  // structure only
        } catch (const std::exception &e) {
            throw TuningDatabaseError(rw + ".schedule: " + e.what());
        }
        validate_record(records.back(), rw);
    }
    return records;
}

int64_t TuningDatabase::import_json(const json &doc) {
    const std::vector<TuningRecord> records = parse_export(doc, "import into '" + path_ + "'");
    require_writable("import records");
    int64_t added = 0;
    begin_immediate("cannot lock to import");
    try {
        for (TuningRecord r : records) {
            // Measured elsewhere: not trusted here until a lookup has verified it (Tuner).
            if (r.measured_by == kMeasured || r.measured_by == kVerified) r.measured_by = kImported;
            added += insert(r) ? 1 : 0;
        }
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return added;
}

}  // namespace tessel::autosched
