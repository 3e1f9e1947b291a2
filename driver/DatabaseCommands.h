/** \file
 * `tessel db ls|export|import|pull|probe`: inspecting and moving tuning databases, and measuring
 * the machine numbers the cost model reads from them. Each takes a SQLite path or a PostgreSQL
 * URL (autoscheduler/TuningStore.h). Each function returns a process exit status (0 on success,
 * 1 on an error, whose message goes to `err`) and never throws.
 *
 * Example:
 *   tessel::db_list("tuning.db", std::cout);
 *   //   group         class   shapes             target            median_ms  by        date (UTC)
 *   // * 3f2a1b0c9d8e  decode  K=4096,M=1,N=4096  x86-64-linux avx2     1.842  measured  2025-01-02 13:04
 *   tessel::db_export("tuning.db", "-");          // JSON on stdout
 *   tessel::db_import("other.db", "tuning.json"); // idempotent
 */
#pragma once

#include <iostream>
#include <ostream>
#include <string>

namespace tessel {

/** One line per record in commit order: key summary (group hash prefix, shape class), shapes,
 * short target, median ms, measured_by, date. A '*' marks the record each key's lookup returns.
 * Fails (without creating anything) when `path` does not exist. Opens the database read-only,
 * so it works on read-only files and on a full disk. */
int db_list(const std::string &path, std::ostream &out, std::ostream &err = std::cerr);

/** Write the database as JSON (TuningDatabase::export_json) to `json_out`, or to `out` when
 * `json_out` is "-". Fails when `path` does not exist. A summary line goes to `err` unless the
 * JSON itself went to `out`. */
int db_export(const std::string &path, const std::string &json_out, std::ostream &out = std::cout, std::ostream &err = std::cerr);

/** Add the records of a JSON export (`json_in`; "-" reads stdin) to the database at `path`,
 * creating it if needed. A malformed export is refused, naming the record, before the database
 * is opened: nothing is created or imported. Importing the same file twice adds nothing the second time. Prints how
 * many records were new to `out`. */
int db_import(const std::string &path, const std::string &json_in, std::ostream &out = std::cout, std::ostream &err = std::cerr);

/** Copies every record of the database `from` into `to` (either a path or a URL; `to` created if
 * needed), as an export and import would: idempotent, and measured records arrive as imported
 * (verified here before use). Prints how many records were new. */
int db_pull(const std::string &from, const std::string &to, std::ostream &out = std::cout, std::ostream &err = std::cerr);

/** Measures this machine's FMA peak and cold read bandwidth at `target`'s vector width
 * (autoscheduler/MachineNumbers.h) and, unless `layouts` is false, the layout pass's rates
 * (driver/LayoutRatesProbe.h), holding the host's measuring lock; stores them in the database at
 * `path` (created if needed), replacing earlier ones; prints them and the model they give. */
int db_probe(const std::string &path, const std::string &target, bool layouts = true, std::ostream &out = std::cout,
             std::ostream &err = std::cerr);

/** "x86-64-linux avx2+3" from "x86-64-linux-avx2-fma-f16c-sse41": arch-bits-os, the widest
 * vector feature (or "cuda sm_90"), and how many other features there are. */
std::string short_target(const std::string &target);

}  // namespace tessel
