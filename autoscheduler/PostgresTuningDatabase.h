/** \file
 * The tuning database on a PostgreSQL server (`--db postgresql://user@host:port/dbname`): the
 * TuningStore (TuningStore.h) many hosts share, with the SQLite file's semantics (TuningDatabase.h)
 * — every record kept, an identical one once, the best by provenance then median, refused
 * schedules never returned — and the same schema version and key. Statements are parameterized
 * (PgConnection.h); each commit and each import is one transaction, so concurrent committers
 * from many hosts lose nothing.
 *
 * Schema: tessel_schema(name, version) on the server, one row per component ('tuning' here;
 * 'queue' and 'kernels' for JobQueue.h and the kernel cache), checked on open: a newer version is
 * refused, an older one migrated (apply_migrations: under an advisory lock, in one transaction,
 * so many workers starting together migrate once). The records table carries a record_sha256
 * column (the SHA-256 of TuningRecord::to_json().dump()) that is UNIQUE: the server's form of the
 * SQLite file's UNIQUE over every field.
 *
 * A role that may only read (SELECT) opens fine and is not writable(): lookups work, commits and
 * check_writable() throw naming the role. Connection faults (bad URL, refused authentication, a
 * server down) throw at open, naming the server.
 *
 * Legal from one thread per object (one connection per object).
 */
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "autoscheduler/PgConnection.h"
#include "autoscheduler/TuningStore.h"

namespace tessel::autosched {

/** One component's migrations: steps[i] takes the component from version i to i + 1 (steps[0]
 * creates it). Checks the server's version of `component` inside one transaction under an
 * advisory lock: newer than steps.size() throws; older is migrated when `may_write`, else
 * throws saying so. Creates tessel_schema when missing and `may_write`. */
void apply_migrations(PgConnection &c, const std::string &component, const std::vector<std::string> &steps, bool may_write);

/** SHA-256 of `bytes` as 64 hex digits. */
std::string sha256_hex(const std::string &bytes);

class PostgresTuningDatabase : public TuningStore {
public:
    /** Connects to `url`; ReadWrite creates or migrates the schema. Throws TuningDatabaseError
     * (PgError) naming the server: a bad URL, refused authentication, a server down, a newer
     * schema, a role that may not create the schema of an empty database. */
    explicit PostgresTuningDatabase(const std::string &url, Access access = Access::ReadWrite);

    std::string location() const override { return conn_.server(); }
    bool writable() const override { return writable_; }
    void check_writable() override;

    std::optional<TuningRecord> lookup(const TuningKey &key) override { return best(key); }
    void commit(const TuningRecord &record) override;
    std::vector<TuningRecord> top_k(const TuningKey &key, int k) override;
    std::optional<TuningRecord> best(const TuningKey &key) override;
    std::vector<TuningRecord> all() override;
    int64_t size() override;

    std::optional<MachineNumbers> machine_numbers(const std::string &machine, const std::string &isa) override;
    void store_machine_numbers(const MachineNumbers &m) override;
    std::optional<dsl::LayoutRates> layout_rates(const std::string &machine, const std::string &isa) override;
    void store_layout_rates(const std::string &machine, const std::string &isa, const dsl::LayoutRates &rates,
                            int64_t measured_unix) override;

    nlohmann::json export_json() override;
    int64_t import_json(const nlohmann::json &doc) override;

    /** Inserts `r` unless an identical record is stored; true when a row was added. Call inside a
     * transaction of connection() (JobQueue commits a result and its job's end together). */
    bool insert(const TuningRecord &r);
    PgConnection &connection() { return conn_; }

private:
    std::vector<TuningRecord> query(const TuningKey *key, int limit);
    void require_writable(const char *what) const;

    PgConnection conn_;
    bool writable_ = false;
};

}  // namespace tessel::autosched
