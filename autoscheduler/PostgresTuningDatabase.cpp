/** \file
 * PostgresTuningDatabase (PostgresTuningDatabase.h): the 'tuning' component's tables on the
 * server, their migrations, and the records' queries (the SQLite backend's, in PostgreSQL).
 *
 * Server layout (schema version 1, component 'tuning'):
 *   tessel_schema(name TEXT PRIMARY KEY, version INTEGER)
 *   records(id BIGSERIAL, record_sha256 UNIQUE, key_json, <one column per key part>,
 *           schedule_json, median_ms, samples_json, cost_model_version, measured_by,
 *           created_unix, notes)
 *   machines(machine, isa, fma_gflops, read_gbps, threads, measured_unix, PRIMARY KEY (machine, isa))
 * Component 'machine_rates' (version 1), created by the first role that may write:
 *   layout_rates(machine, isa, rates_json, measured_unix, PRIMARY KEY (machine, isa))
 */
#include "autoscheduler/PostgresTuningDatabase.h"

#include <openssl/evp.h>

#include "autoscheduler/TuningDatabase.h"

namespace tessel::autosched {

namespace {

using nlohmann::json;

/** steps[i]: version i -> i + 1 of component 'tuning'. Version 1 is the SQLite file's version 1. */
const std::vector<std::string> kTuningMigrations = {
    R"sql(
CREATE TABLE records (
  id BIGSERIAL PRIMARY KEY,
  record_sha256 TEXT NOT NULL UNIQUE,
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
  median_ms DOUBLE PRECISION NOT NULL,
  samples_json TEXT NOT NULL,
  cost_model_version TEXT NOT NULL,
  measured_by TEXT NOT NULL,
  created_unix BIGINT NOT NULL,
  notes TEXT NOT NULL);
CREATE INDEX records_by_key ON records (key_json, median_ms);
CREATE TABLE machines (
  machine TEXT NOT NULL,
  isa TEXT NOT NULL,
  fma_gflops DOUBLE PRECISION NOT NULL,
  read_gbps DOUBLE PRECISION NOT NULL,
  threads INTEGER NOT NULL,
  measured_unix BIGINT NOT NULL,
  PRIMARY KEY (machine, isa));
)sql",
};
/** Component 'machine_rates': the layout rates per machine (MachineNumbers.h). A component of
 * its own, so a server from before it gains it without a new 'tuning' version. */
const std::vector<std::string> kMachineRatesMigrations = {
    R"sql(
CREATE TABLE layout_rates (
  machine TEXT NOT NULL,
  isa TEXT NOT NULL,
  rates_json TEXT NOT NULL,
  measured_unix BIGINT NOT NULL,
  PRIMARY KEY (machine, isa));
)sql",
};
static_assert(kTuningDatabaseSchemaVersion == 1, "add the server's migration step for the new schema version");

/** Same order and filter as the SQLite backend (TuningDatabase.cpp's kBestOrder and kUsable). */
const char *kBestOrder =
    " ORDER BY CASE measured_by WHEN 'measured' THEN 0 WHEN 'verified' THEN 1 WHEN 'imported' THEN 2 ELSE 3 END,"
    " median_ms ASC, id ASC";
const char *kUsable =
    " AND measured_by <> 'refused' AND NOT EXISTS (SELECT 1 FROM records AS r WHERE r.key_json = records.key_json"
    " AND r.schedule_json = records.schedule_json AND r.measured_by = 'refused')";
const char *kRecordColumns =
    "key_json, schedule_json, median_ms, samples_json, cost_model_version, measured_by, created_unix, notes";

/** Fixed advisory lock id for schema changes ("tessel" in ASCII). */
constexpr const char *kSchemaLock = "127978349622646";  // 0x746573736576

std::string num(double v) {
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

}  // namespace

std::string sha256_hex(const std::string &bytes) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr) != 1)
        throw TuningDatabaseError("cannot compute SHA-256 (OpenSSL)");
    static const char *hex = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < n; i++) out += {hex[md[i] >> 4], hex[md[i] & 15]};
    return out;
}

void apply_migrations(PgConnection &c, const std::string &component, const std::vector<std::string> &steps, bool may_write) {
    const int supported = (int)steps.size();
    c.transaction([&] {
        if (may_write) c.exec(std::string("SELECT pg_advisory_xact_lock(") + kSchemaLock + ")", {}, "cannot lock the schema");
        const bool exists =
            c.exec("SELECT to_regclass('tessel_schema') IS NOT NULL", {}, "cannot read the schema").text(0, 0) == "t";
        int version = 0;
        if (exists) {
            PgResult v =
                c.exec("SELECT version FROM tessel_schema WHERE name = $1", {component}, "cannot read the schema version");
            if (v.rows() == 1) version = std::stoi(v.text(0, 0));
        }
        if (version > supported)
            throw TuningDatabaseError("tuning server " + c.server() + ": component '" + component + "' has schema version " +
                                      std::to_string(version) + ", newer than this Tessel supports (" +
                                      std::to_string(supported) + "); use a newer Tessel or another database");
        if (version == supported) return;
        if (!may_write)
            throw TuningDatabaseError("tuning server " + c.server() + ": component '" + component + "' is at schema version " +
                                      std::to_string(version) + " and this Tessel needs " + std::to_string(supported) +
                                      "; open it once with a role that may write, to migrate it");
        if (!exists)
            c.exec("CREATE TABLE tessel_schema (name TEXT PRIMARY KEY, version INTEGER NOT NULL)", {},
                   "cannot create the schema");
        for (int v = version; v < supported; v++)
            c.exec_script(steps[v], "cannot migrate '" + component + "' from schema version " + std::to_string(v));
        c.exec("INSERT INTO tessel_schema (name, version) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET version = $2",
               {component, std::to_string(supported)}, "cannot write the schema version");
    });
}

PostgresTuningDatabase::PostgresTuningDatabase(const std::string &url, Access access) : conn_(url) {
    apply_migrations(conn_, "tuning", kTuningMigrations, access == Access::ReadWrite);
    // Writable only when asked and the role may insert on a writable server: a read-only role
    // still looks up, and says so before anyone measures.
    writable_ = access == Access::ReadWrite &&
                conn_.exec("SELECT has_table_privilege('records', 'INSERT') AND current_setting('transaction_read_only') = 'off'",
                           {}, "cannot read the role's privileges")
                        .text(0, 0) == "t";
    if (!writable_) return;
    try {
        apply_migrations(conn_, "machine_rates", kMachineRatesMigrations, true);
    } catch (const TuningDatabaseError &) {
        // A role that may insert records but not create tables still tunes: its lookups find no
        // layout rates, and storing them says what the server refused.
    }
}

void PostgresTuningDatabase::require_writable(const char *what) const {
    if (!writable_)
        throw TuningDatabaseError("tuning server " + conn_.server() + ": cannot " + what + ": role '" + conn_.user() +
                                  "' may not write here (opened read-only, a read-only role or a read-only server)");
}

void PostgresTuningDatabase::check_writable() {
    require_writable("write");
    // A row written and removed, committed: proves the role, the server and its disk take a write.
    conn_.transaction([&] {
        conn_.exec("INSERT INTO tessel_schema (name, version) VALUES ('write-check', 0) ON CONFLICT (name) DO NOTHING", {},
                   "cannot write (check before measuring)");
        conn_.exec("DELETE FROM tessel_schema WHERE name = 'write-check'", {}, "cannot write (check before measuring)");
    });
}

bool PostgresTuningDatabase::insert(const TuningRecord &r) {
    PgResult res = conn_.exec(
        std::string("INSERT INTO records (record_sha256, ") + kRecordColumns +
            ", group_hash, shape_class, shapes, target, numeric_mode, space_version, tessel_version, halide_version, "
            "key_schema_version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) "
            "ON CONFLICT (record_sha256) DO NOTHING",
        {sha256_hex(r.to_json().dump()), r.key.to_json().dump(), r.schedule.dump(), num(r.median_ms), json(r.samples).dump(),
         r.cost_model_version, r.measured_by, std::to_string(r.created_unix), r.notes, r.key.group_hash, r.key.shape_class,
         r.key.shapes, r.key.target, r.key.numeric_mode, std::to_string(r.key.space_version), r.key.tessel_version,
         r.key.halide_version, std::to_string(r.key.schema_version)},
        "cannot insert a record");
    return res.affected() > 0;
}

void PostgresTuningDatabase::commit(const TuningRecord &record) {
    require_writable("commit a record");
    validate_record(record, "tuning server " + conn_.server() + ": commit");
    insert(record);  // one statement: its own transaction
}

std::vector<TuningRecord> PostgresTuningDatabase::query(const TuningKey *key, int limit) {
    std::string sql = std::string("SELECT ") + kRecordColumns + " FROM records";
    sql += key ? std::string(" WHERE key_json = $1") + kUsable + kBestOrder : std::string(" ORDER BY id ASC");
    if (limit >= 0) sql += " LIMIT " + std::to_string(limit);
    std::vector<PgParam> params;
    if (key) params.push_back(key->to_json().dump());
    PgResult res = conn_.exec(sql, params, "cannot read records");
    std::vector<TuningRecord> out;
    for (int i = 0; i < res.rows(); i++) {
        try {
            TuningRecord r;
            r.key = TuningKey::from_json(json::parse(res.text(i, 0)));
            r.schedule = json::parse(res.text(i, 1));
            r.median_ms = std::stod(res.text(i, 2));
            r.samples = json::parse(res.text(i, 3)).get<std::vector<double>>();
            r.cost_model_version = res.text(i, 4);
            r.measured_by = res.text(i, 5);
            r.created_unix = std::stoll(res.text(i, 6));
            r.notes = res.text(i, 7);
            out.push_back(std::move(r));
        } catch (const std::exception &e) {
            throw TuningDatabaseError("tuning server " + conn_.server() + ": a stored record is damaged: " + e.what());
        }
    }
    return out;
}

std::optional<TuningRecord> PostgresTuningDatabase::best(const TuningKey &key) {
    std::vector<TuningRecord> r = query(&key, 1);
    if (r.empty()) return std::nullopt;
    return r.front();
}

std::vector<TuningRecord> PostgresTuningDatabase::top_k(const TuningKey &key, int k) {
    if (k <= 0) return {};
    return query(&key, k);
}

std::vector<TuningRecord> PostgresTuningDatabase::all() { return query(nullptr, -1); }

int64_t PostgresTuningDatabase::size() { return std::stoll(conn_.exec("SELECT COUNT(*) FROM records").text(0, 0)); }

std::optional<MachineNumbers> PostgresTuningDatabase::machine_numbers(const std::string &machine, const std::string &isa) {
    PgResult r = conn_.exec("SELECT fma_gflops, read_gbps, threads, measured_unix FROM machines WHERE machine = $1 AND isa = $2",
                            {machine, isa}, "cannot read machine numbers");
    if (r.rows() != 1) return std::nullopt;
    MachineNumbers m;
    m.machine = machine;
    m.isa = isa;
    m.fma_gflops = std::stod(r.text(0, 0));
    m.read_gbps = std::stod(r.text(0, 1));
    m.threads = std::stoi(r.text(0, 2));
    m.measured_unix = std::stoll(r.text(0, 3));
    return m;
}

void PostgresTuningDatabase::store_machine_numbers(const MachineNumbers &m) {
    require_writable("store machine numbers");
    conn_.exec(
        "INSERT INTO machines (machine, isa, fma_gflops, read_gbps, threads, measured_unix) VALUES ($1, $2, $3, $4, $5, $6) "
        "ON CONFLICT (machine, isa) DO UPDATE SET fma_gflops = $3, read_gbps = $4, threads = $5, measured_unix = $6",
        {m.machine, m.isa, num(m.fma_gflops), num(m.read_gbps), std::to_string(m.threads), std::to_string(m.measured_unix)},
        "cannot store machine numbers");
}

std::optional<dsl::LayoutRates> PostgresTuningDatabase::layout_rates(const std::string &machine, const std::string &isa) {
    // A read-only role on a server no writer has opened since the table came: no rates stored.
    if (conn_.exec("SELECT to_regclass('layout_rates') IS NOT NULL", {}, "cannot read layout rates").text(0, 0) != "t")
        return std::nullopt;
    PgResult r = conn_.exec("SELECT rates_json, measured_unix FROM layout_rates WHERE machine = $1 AND isa = $2", {machine, isa},
                            "cannot read layout rates");
    if (r.rows() != 1) return std::nullopt;
    try {
        return layout_rates_from_json(json::parse(r.text(0, 0)), isa, std::stoll(r.text(0, 1)));
    } catch (const std::exception &e) {
        throw TuningDatabaseError("tuning server " + conn_.server() + ": the stored layout rates of this machine (" + isa +
                                  ") are unusable: " + e.what() + "; run `tessel db probe` again");
    }
}

void PostgresTuningDatabase::store_layout_rates(const std::string &machine, const std::string &isa, const dsl::LayoutRates &rates,
                                                int64_t measured_unix) {
    require_writable("store layout rates");
    conn_.exec(
        "INSERT INTO layout_rates (machine, isa, rates_json, measured_unix) VALUES ($1, $2, $3, $4) "
        "ON CONFLICT (machine, isa) DO UPDATE SET rates_json = $3, measured_unix = $4",
        {machine, isa, layout_rates_to_json(rates).dump(), std::to_string(measured_unix)}, "cannot store layout rates");
}

json PostgresTuningDatabase::export_json() {
    json records = json::array();
    for (const TuningRecord &r : all()) records.push_back(r.to_json());
    return json{{"format", "tessel-tuning-db"}, {"schema_version", kTuningDatabaseSchemaVersion}, {"records", records}};
}

int64_t PostgresTuningDatabase::import_json(const json &doc) {
    const std::vector<TuningRecord> records = TuningDatabase::parse_export(doc, "import into " + conn_.server());
    require_writable("import records");
    int64_t added = 0;
    conn_.transaction([&] {
        for (TuningRecord r : records) {
            // Measured elsewhere: not trusted here until a lookup has verified it (Tuner).
            if (r.measured_by == kMeasured || r.measured_by == kVerified) r.measured_by = kImported;
            added += insert(r) ? 1 : 0;
        }
    });
    return added;
}

}  // namespace tessel::autosched
