/** \file
 * The machines table of the tuning database file: the MachineNumbers (MachineNumbers.h) measured
 * on each machine for each vector ISA, stored beside the records. These are TuningDatabase
 * members (declared in TuningDatabase.h): create_machines_table() runs inside check_schema's
 * transaction on a writable file, machine_numbers() reads (nothing when the file predates the
 * table and is read-only), store_machine_numbers() needs a writable database.
 *
 * and the layout rates (layout_rates_to_json) likewise.
 *
 * Tables (additive to schema version 1, so version-1 files gain them on open):
 *   machines(machine, isa, fma_gflops, read_gbps, threads, measured_unix,
 *            PRIMARY KEY (machine, isa))
 *   layout_rates(machine, isa, rates_json, measured_unix, PRIMARY KEY (machine, isa))
 */
#include "autoscheduler/TuningDatabase.h"

#include "autoscheduler/SqliteStatement.h"

namespace tessel::autosched {

namespace {

using sqlite::Stmt;

/** Machine numbers (MachineNumbers.h): an additive table, so version-1 files gain it on open. */
const char *kCreateMachines = R"sql(
CREATE TABLE IF NOT EXISTS machines (
  machine TEXT NOT NULL,
  isa TEXT NOT NULL,
  fma_gflops REAL NOT NULL,
  read_gbps REAL NOT NULL,
  threads INTEGER NOT NULL,
  measured_unix INTEGER NOT NULL,
  PRIMARY KEY (machine, isa));
CREATE TABLE IF NOT EXISTS layout_rates (
  machine TEXT NOT NULL,
  isa TEXT NOT NULL,
  rates_json TEXT NOT NULL,
  measured_unix INTEGER NOT NULL,
  PRIMARY KEY (machine, isa));
)sql";

}  // namespace

void TuningDatabase::create_machines_table() { exec(kCreateMachines); }

std::optional<MachineNumbers> TuningDatabase::machine_numbers(const std::string &machine, const std::string &isa) {
    Stmt s(db_, "SELECT fma_gflops, read_gbps, threads, measured_unix FROM machines WHERE machine = ? AND isa = ?");
    if (s.prepare_rc() != SQLITE_OK) return std::nullopt;  // a read-only file from before the table
    s.bind(1, machine);
    s.bind(2, isa);
    if (s.step() != SQLITE_ROW) return std::nullopt;
    MachineNumbers m;
    m.machine = machine;
    m.isa = isa;
    m.fma_gflops = s.real(0);
    m.read_gbps = s.real(1);
    m.threads = (int)s.int64(2);
    m.measured_unix = s.int64(3);
    return m;
}

void TuningDatabase::store_machine_numbers(const MachineNumbers &m) {
    require_writable("store machine numbers");
    Stmt s(
        db_,
        "INSERT OR REPLACE INTO machines (machine, isa, fma_gflops, read_gbps, threads, measured_unix) VALUES (?, ?, ?, ?, ?, ?)");
    if (s.prepare_rc() != SQLITE_OK) fail("cannot store machine numbers", s.prepare_rc());
    s.bind(1, m.machine);
    s.bind(2, m.isa);
    s.bind(3, m.fma_gflops);
    s.bind(4, m.read_gbps);
    s.bind(5, (int64_t)m.threads);
    s.bind(6, m.measured_unix);
    if (const int rc = s.step(); rc != SQLITE_DONE) fail("cannot store machine numbers", rc);
}

std::optional<dsl::LayoutRates> TuningDatabase::layout_rates(const std::string &machine, const std::string &isa) {
    Stmt s(db_, "SELECT rates_json, measured_unix FROM layout_rates WHERE machine = ? AND isa = ?");
    if (s.prepare_rc() != SQLITE_OK) return std::nullopt;  // a read-only file from before the table
    s.bind(1, machine);
    s.bind(2, isa);
    if (s.step() != SQLITE_ROW) return std::nullopt;
    try {
        return layout_rates_from_json(nlohmann::json::parse(s.text(0)), isa, s.int64(1));
    } catch (const std::exception &e) {
        throw TuningDatabaseError(path_ + ": the stored layout rates of this machine (" + isa + ") are unusable: " + e.what() +
                                  "; run `tessel db probe` again");
    }
}

void TuningDatabase::store_layout_rates(const std::string &machine, const std::string &isa, const dsl::LayoutRates &rates,
                                        int64_t measured_unix) {
    require_writable("store layout rates");
    Stmt s(db_, "INSERT OR REPLACE INTO layout_rates (machine, isa, rates_json, measured_unix) VALUES (?, ?, ?, ?)");
    if (s.prepare_rc() != SQLITE_OK) fail("cannot store layout rates", s.prepare_rc());
    s.bind(1, machine);
    s.bind(2, isa);
    s.bind(3, layout_rates_to_json(rates).dump());
    s.bind(4, measured_unix);
    if (const int rc = s.step(); rc != SQLITE_DONE) fail("cannot store layout rates", rc);
}

}  // namespace tessel::autosched
