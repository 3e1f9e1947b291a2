/** \file
 * TuningStore: the tuning database as every command sees it, whichever backend holds it, and
 * open_tuning_store(), which picks the backend from the --db value:
 *  - a path ("tessel-tuning.db"): a SQLite file (TuningDatabase.h), the default, one host;
 *  - postgresql://user@host:port/dbname (or postgres://): a PostgreSQL server
 *    (PostgresTuningDatabase.h), shared by many hosts and the home of the job queue (JobQueue.h).
 *
 * Both backends have the same semantics (TuningCache.h adds the tuner's lookup / commit / top_k):
 * every record kept, an identical one once, the best by better_record(), refused schedules never
 * returned; the same schema version (kTuningDatabaseSchemaVersion, checked on open: a newer
 * one is refused) and the same key (TuningKey::to_json().dump(), compared whole). Records move
 * between them as the export document (export_json / import_json; `tessel db pull`).
 *
 * Faults throw TuningDatabaseError naming the file or the server (URL without its password)
 * and what failed.
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
#include "autoscheduler/TuningRecord.h"

namespace tessel::autosched {

/** Version of the database layout (tables and columns), the same for both backends. */
constexpr int kTuningDatabaseSchemaVersion = 1;

class TuningStore : public TuningCache {
public:
    /** ReadWrite: open or create (the schema created when new). ReadOnly: write nothing. */
    enum class Access { ReadWrite, ReadOnly };

    /** The file path, or the server URL without its password: what messages name. */
    virtual std::string location() const = 0;
    /** False when opened read-only (or, on a server, when the role may not insert records). */
    virtual bool writable() const = 0;
    /** Proves a commit can be written now; throws TuningDatabaseError saying why not. */
    virtual void check_writable() = 0;

    /** The best record of `key`, or nullopt (lookup()). */
    virtual std::optional<TuningRecord> best(const TuningKey &key) = 0;
    /** Every record, in commit order. */
    virtual std::vector<TuningRecord> all() = 0;
    virtual int64_t size() = 0;

    /** MachineNumbers.h: the numbers stored for `machine` and `isa`, or nullopt. */
    virtual std::optional<MachineNumbers> machine_numbers(const std::string &machine, const std::string &isa) = 0;
    virtual void store_machine_numbers(const MachineNumbers &m) = 0;
    /** MachineNumbers.h: the layout rates stored for `machine` and `isa`, or nullopt (none stored,
     * or a store from before the table). Throws TuningDatabaseError for a stored document that
     * does not parse (never used as rates). */
    virtual std::optional<dsl::LayoutRates> layout_rates(const std::string &machine, const std::string &isa) = 0;
    /** Stores (or replaces) them, measured at `measured_unix`. */
    virtual void store_layout_rates(const std::string &machine, const std::string &isa, const dsl::LayoutRates &rates,
                                    int64_t measured_unix) = 0;

    /** {"format": "tessel-tuning-db", "schema_version": N, "records": [...]}, commit order. */
    virtual nlohmann::json export_json() = 0;
    /** Adds an export's records in one transaction (measured/verified become imported: not
     * trusted until verified here); records already present are skipped. Returns how many were
     * new. Throws (nothing imported) for a malformed document or a newer schema. */
    virtual int64_t import_json(const nlohmann::json &doc) = 0;
};

/** True when `db` names a server (postgresql:// or postgres://), not a file. */
bool is_server_database(const std::string &db);

/** Opens the store `db` names (a path or a URL). Throws TuningDatabaseError. */
std::unique_ptr<TuningStore> open_tuning_store(const std::string &db,
                                               TuningStore::Access access = TuningStore::Access::ReadWrite);

/** For commands that only look up and store model picks when they can (`run`, `compile`,
 * `demo`): read-write when possible, read-only when only that works, nullptr when a file does not
 * exist; `*note` says why it is not read-write. A server that cannot be reached is an error
 * (never silently no database). */
std::unique_ptr<TuningStore> open_tuning_store_for_reading(const std::string &db, std::string *note);

}  // namespace tessel::autosched
