/** \file
 * The tuning database (TVM MetaSchedule's Database role): tuned schedules stored under a
 * TuningKey, so a later compile of the same fusion group, shapes, target and versions reuses them
 * without measuring.
 *
 * TuningCache (TuningCache.h) is the narrow interface the tuner uses (lookup, commit, top_k),
 * TuningStore (TuningStore.h) the one commands use, and TuningRecord (TuningRecord.h) what it
 * stores. Implementations:
 *  - TuningDatabase (this file): a SQLite file in WAL mode, the default backend. Several processes may open the same
 *    file and commit at once; a writer that finds the file locked waits (busy timeout) instead of
 *    failing, and each commit is one transaction, so no record is lost. The file carries a schema
 *    version; a file written by a newer Tessel is refused with a message saying so.
 *  - PostgresTuningDatabase (PostgresTuningDatabase.h): the same on a PostgreSQL server.
 *  - MemoryTuningCache (TuningCache.h): the same semantics in memory, for tests and dry runs.
 *
 * Faults: a path that is a directory, a file that is not SQLite or is damaged, a SQLite file of
 * another program, a newer schema version and a malformed import each throw TuningDatabaseError
 * naming the file and the cause, and leave the file as it was (a file this object created and
 * could not finish is removed). A database may be opened read-only (Access::ReadOnly: nothing is
 * created or written, so it works on read-only files and file systems and on a full disk);
 * open_for_reading() is what commands that only need lookups use, check_writable() what a
 * command that must store results calls before it spends time measuring.
 *
 * Records are never overwritten: every commit is kept (so `tessel db ls` shows the history), and
 * lookup() returns the best record of a key. "Best" orders by provenance (measured, verified,
 * imported, model: a model's predicted time is not comparable with a measurement, and an import
 * is not trusted until verified; refused schedules are never returned), then by median_ms, then
 * by commit order. A record identical in every field to a stored one is stored once, which
 * makes import_json() idempotent.
 *
 * Example:
 *   TuningDatabase db("tuning.db");
 *   if (auto hit = db.lookup(key)) apply(sched::schedule_from_json(hit->schedule), ...);
 *   else db.commit(TuningRecord{key, sched::to_json(best), 1.84, samples, "analytic-1", "measured",
 *                               now_unix(), ""});
 */
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autoscheduler/MachineNumbers.h"
#include "autoscheduler/TuningCache.h"
#include "autoscheduler/TuningKey.h"
#include "autoscheduler/TuningRecord.h"
#include "autoscheduler/TuningStore.h"

struct sqlite3;

namespace tessel::autosched {

/** SQLite-backed TuningCache. Not copyable; one connection per object. Use one object per thread
 * (or process); separate objects on the same file are safe together. */
class TuningDatabase : public TuningStore {
public:
    /** ReadWrite: open or create, WAL mode, the schema created when new. ReadOnly: open an
     * existing file without writing anything (not even the WAL index when it cannot be made:
     * then the file is read as immutable, and changes still in its write-ahead log are not seen). */
    using Access = TuningStore::Access;

    /** Open (ReadWrite: or create) the database at `path` (":memory:" works). Throws
     * TuningDatabaseError when `path` is a directory, the file is not a SQLite database or is
     * damaged, belongs to another program, has a schema version newer than
     * kTuningDatabaseSchemaVersion, cannot be created, or (ReadWrite) cannot be written (a
     * read-only file or file system). `busy_timeout_ms`: how long a writer waits for another
     * writer's lock before failing. */
    explicit TuningDatabase(const std::string &path, int busy_timeout_ms = 60000, Access access = Access::ReadWrite);
    ~TuningDatabase() override;
    TuningDatabase(const TuningDatabase &) = delete;
    TuningDatabase &operator=(const TuningDatabase &) = delete;

    /** Same as the constructor, as a factory. */
    static std::unique_ptr<TuningDatabase> open(const std::string &path) { return std::make_unique<TuningDatabase>(path); }

    /** For commands that only need lookups and store model picks when they can (`run`,
     * `compile`, `demo`): read-write when possible, else read-only when the file exists, else
     * nullptr (no database: nothing to read, nowhere to write). `*note` gets one line saying why
     * it is not read-write ("" when it is). Still throws for a file that is not a valid tuning
     * database (corrupt, another program's, newer schema). */
    static std::unique_ptr<TuningDatabase> open_for_reading(const std::string &path, std::string *note);

    /** False when opened read-only; commit() and import_json() then throw. */
    bool writable() const override { return access_ == Access::ReadWrite; }
    /** Proves a commit can be written now: a write transaction that adds and removes a row,
     * committed to disk. Throws TuningDatabaseError saying why not (read-only, disk full, ...). */
    void check_writable() override;
    /** SQLite's PRAGMA integrity_check: "ok", or the problems it found, one per line. */
    std::string integrity_check();

    std::optional<TuningRecord> lookup(const TuningKey &key) override { return best(key); }
    /** One transaction (BEGIN IMMEDIATE ... COMMIT). */
    void commit(const TuningRecord &record) override;
    std::vector<TuningRecord> top_k(const TuningKey &key, int k) override;

    /** The best record of `key` (see the file comment for the order), or nullopt. */
    std::optional<TuningRecord> best(const TuningKey &key) override;
    /** Every record, in commit order. */
    std::vector<TuningRecord> all() override;
    /** Number of records stored. */
    int64_t size() override;

    /** The numbers measured on `machine` for vector ISA `isa` (MachineNumbers.h), if stored.
     * This and store_machine_numbers() are in TuningDatabaseMachines.cpp. */
    std::optional<MachineNumbers> machine_numbers(const std::string &machine, const std::string &isa) override;
    /** Stores (or replaces) the numbers of m.machine and m.isa. */
    void store_machine_numbers(const MachineNumbers &m) override;
    /** TuningStore::layout_rates (TuningDatabaseMachines.cpp). */
    std::optional<dsl::LayoutRates> layout_rates(const std::string &machine, const std::string &isa) override;
    void store_layout_rates(const std::string &machine, const std::string &isa, const dsl::LayoutRates &rates,
                            int64_t measured_unix) override;

    /** {"format": "tessel-tuning-db", "schema_version": N, "records": [...]}, commit order. */
    nlohmann::json export_json() override;
    /** Add the records of an export_json() document, in one transaction. Records already present
     * are skipped, so importing the same file twice changes nothing. Returns the number of new
     * records. Throws TuningDatabaseError (nothing is imported) when the document is malformed
     * or comes from a newer schema; the message names the record. */
    int64_t import_json(const nlohmann::json &doc) override;
    /** The records of an export_json() document, checked as import_json() checks them, without
     * any database: so a malformed file is refused before a database is opened or created.
     * `where` prefixes the messages. */
    static std::vector<TuningRecord> parse_export(const nlohmann::json &doc, const std::string &where);

    const std::string &path() const { return path_; }
    std::string location() const override { return path_; }

private:
    std::vector<TuningRecord> query(const TuningKey *key, int limit, bool usable_only);  ///< usable_only: no refused schedules
    /** Insert unless identical; returns true when a row was added. Call inside a transaction. */
    bool insert(const TuningRecord &r);
    void exec(const char *sql);
    /** BEGIN IMMEDIATE, waiting up to the busy timeout for other writers. */
    void begin_immediate(const char *why);
    [[noreturn]] void fail(const std::string &what, int rc);

    void open_read_write();
    void open_read_only();
    /** The tessel_schema check (and, writable and new, the schema's creation). */
    void check_schema(bool writable);
    /** The machines and layout_rates tables, when missing (TuningDatabaseMachines.cpp). Call
     * inside a transaction. */
    void create_machines_table();
    void require_writable(const char *what) const;

    std::string path_;
    sqlite3 *db_ = nullptr;
    int busy_timeout_ms_ = 0;
    Access access_ = Access::ReadWrite;
};

}  // namespace tessel::autosched
