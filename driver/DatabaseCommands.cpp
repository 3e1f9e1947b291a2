/** \file
 * `tessel db` commands over a TuningStore (a SQLite file or a PostgreSQL server): ls (a table),
 * export (JSON out), import (JSON in), pull (one database's records into another), probe.
 */
#include "driver/DatabaseCommands.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <vector>

#include "autoscheduler/TargetModel.h"
#include "autoscheduler/TuningDatabase.h"
#include "autoscheduler/TuningStore.h"
#include "codegen/Compile.h"
#include "driver/LayoutRatesProbe.h"
#include "support/HostLock.h"

namespace tessel {

namespace {

using autosched::MachineNumbers;
using autosched::measure_machine;
using autosched::TargetModel;
using autosched::TuningDatabase;
using autosched::TuningRecord;
using autosched::TuningStore;

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    out.push_back(cur);
    return out;
}

std::string utc_date(int64_t unix_s) {
    std::time_t t = (std::time_t)unix_s;
    std::tm tm{};
    if (!gmtime_r(&t, &tm)) return "?";
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
    return buf;
}

bool require_existing(const std::string &path, std::ostream &err) {
    if (path != ":memory:" && !autosched::is_server_database(path) && !std::filesystem::exists(path)) {
        err << "tessel db: no tuning database at '" << path << "'\n";
        return false;
    }
    return true;
}

}  // namespace

std::string short_target(const std::string &target) {
    std::vector<std::string> parts = split(target, '-');
    if (parts.size() < 3) return target;
    std::string base = parts[0] + "-" + parts[1] + "-" + parts[2];
    std::vector<std::string> features(parts.begin() + 3, parts.end());
    if (features.empty()) return base;
    // Widest first: the one feature that says most about the generated code.
    static const char *kVector[] = {"avx10_1",
                                    "avx512_sapphirerapids",
                                    "avx512_zen5",
                                    "avx512_zen4",
                                    "avx512_cannonlake",
                                    "avx512_skylake",
                                    "avx512_knl",
                                    "avx512",
                                    "avx2",
                                    "avx",
                                    "sse41",
                                    "sve2",
                                    "sve",
                                    "arm_dot_prod"};
    std::string shown;
    for (const std::string &f : features)
        if (f.rfind("cuda_capability_", 0) == 0) shown = "cuda sm_" + f.substr(16);
    if (shown.empty())
        for (const std::string &f : features)
            if (f == "cuda") shown = "cuda";
    if (shown.empty())
        for (const char *v : kVector) {
            for (const std::string &f : features)
                if (f == v) shown = f;
            if (!shown.empty()) break;
        }
    if (shown.empty()) return base + " +" + std::to_string(features.size());
    int others = (int)features.size() - 1 -
                 (shown.rfind("cuda sm_", 0) == 0 && std::find(features.begin(), features.end(), "cuda") != features.end());
    return base + " " + shown + (others > 0 ? "+" + std::to_string(others) : "");
}

int db_list(const std::string &path, std::ostream &out, std::ostream &err) {
    if (!require_existing(path, err)) return 1;
    try {
        const auto db = autosched::open_tuning_store(path, TuningStore::Access::ReadOnly);  // ls never writes
        std::vector<TuningRecord> records = db->all();
        if (records.empty()) {
            out << "(no records in " << db->location() << ")\n";
            return 0;
        }
        // The record each key's lookup returns, by index in commit order.
        std::map<std::string, size_t> best;
        for (size_t i = 0; i < records.size(); ++i) {
            std::string k = records[i].key.to_json().dump();
            auto it = best.find(k);
            if (it == best.end() || autosched::better_record(records[i], records[it->second])) best[k] = i;
        }
        std::vector<bool> is_best(records.size(), false);
        for (const auto &[k, i] : best) is_best[i] = true;

        std::vector<std::vector<std::string>> rows;
        rows.push_back({"", "group", "class", "shapes", "target", "median_ms", "by", "date (UTC)"});
        for (size_t i = 0; i < records.size(); ++i) {
            const TuningRecord &r = records[i];
            std::ostringstream ms;
            ms << std::fixed << std::setprecision(3) << r.median_ms;
            rows.push_back({is_best[i] ? "*" : " ", r.key.group_hash.substr(0, 12),
                            r.key.shape_class.empty() ? "-" : r.key.shape_class, r.key.shapes.empty() ? "-" : r.key.shapes,
                            short_target(r.key.target), ms.str(), r.measured_by, utc_date(r.created_unix)});
        }
        std::vector<size_t> width(rows[0].size(), 0);
        for (const auto &row : rows)
            for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
        for (const auto &row : rows) {
            std::string line;
            for (size_t c = 0; c < row.size(); ++c) {
                bool right = c == 5;  // numbers align right
                std::string cell = row[c];
                std::string pad(width[c] - cell.size(), ' ');
                line += (c ? "  " : "") + (right ? pad + cell : cell + (c + 1 < row.size() ? pad : ""));
            }
            out << line << "\n";
        }
        out << records.size() << " record" << (records.size() == 1 ? "" : "s") << ", " << best.size() << " key"
            << (best.size() == 1 ? "" : "s") << " (* = the record a lookup returns)\n";
        return 0;
    } catch (const std::exception &e) {
        err << "tessel db ls: " << e.what() << "\n";
        return 1;
    }
}

int db_export(const std::string &path, const std::string &json_out, std::ostream &out, std::ostream &err) {
    if (!require_existing(path, err)) return 1;
    try {
        const auto db = autosched::open_tuning_store(path, TuningStore::Access::ReadOnly);  // export never writes
        nlohmann::json doc = db->export_json();
        if (json_out == "-") {
            out << doc.dump(2) << "\n";
            return 0;
        }
        std::ofstream f(json_out);
        if (!f) {
            err << "tessel db export: cannot write '" << json_out << "'\n";
            return 1;
        }
        f << doc.dump(2) << "\n";
        if (!f) {
            err << "tessel db export: error writing '" << json_out << "'\n";
            return 1;
        }
        err << "exported " << doc["records"].size() << " records from " << db->location() << " to " << json_out << "\n";
        return 0;
    } catch (const std::exception &e) {
        err << "tessel db export: " << e.what() << "\n";
        return 1;
    }
}

int db_probe(const std::string &path, const std::string &target, bool layouts, std::ostream &out, std::ostream &err) {
    try {
        const Halide::Target t = parse_target(target);
        if (t.has_gpu_feature()) throw std::invalid_argument("--target " + target + ": the probes measure a CPU target");
        const auto db = autosched::open_tuning_store(path);
        db->check_writable();
        const HostLock lock(measuring_lock_path());  // no other tuner's measurement on these cores meanwhile
        const MachineNumbers m = measure_machine(t);
        db->store_machine_numbers(m);
        out << "machine: " << m.machine << "\n"
            << m.to_string() << "\nstored in " << db->location() << "\n"
            << TargetModel::for_target(t).with_numbers(m).to_string() << "\n";
        if (layouts) {
            const LayoutRatesMeasurement rates = measure_layout_rates(t);
            db->store_layout_rates(m.machine, m.isa, rates.rates, m.measured_unix);
            out << rates.to_string() << "stored in " << db->location() << " for " << m.isa
                << "; plans for this machine use them (`tessel compile FILE --dim ...` prints each layout choice and the rates it used)\n";
        }
        return 0;
    } catch (const std::exception &e) {
        err << "tessel db probe: " << e.what() << "\n";
        return 1;
    }
}

int db_import(const std::string &path, const std::string &json_in, std::ostream &out, std::ostream &err) {
    try {
        nlohmann::json doc;
        try {
            if (json_in == "-") {
                doc = nlohmann::json::parse(std::cin);
            } else {
                std::ifstream f(json_in);
                if (!f) {
                    err << "tessel db import: cannot read '" << json_in << "'\n";
                    return 1;
                }
                doc = nlohmann::json::parse(f);
            }
        } catch (const nlohmann::json::parse_error &e) {
            err << "tessel db import: '" << json_in << "' is not valid JSON: " << e.what() << "\n";
            return 1;
        }
        // A malformed file is refused before the database is opened (or created).
        const size_t total = TuningDatabase::parse_export(doc, "import of '" + json_in + "'").size();
        const auto db = autosched::open_tuning_store(path);
        int64_t added = db->import_json(doc);
        out << "imported " << added << " new record" << (added == 1 ? "" : "s") << " from " << json_in << " into "
            << db->location() << " (" << (int64_t)total - added << " already present)\n";
        return 0;
    } catch (const std::exception &e) {
        err << "tessel db import: " << e.what() << "\n";
        return 1;
    }
}

int db_pull(const std::string &from, const std::string &to, std::ostream &out, std::ostream &err) {
    if (!require_existing(from, err)) return 1;
    try {
        if (from == to) throw std::invalid_argument("--from and --db name the same database");
        const auto source = autosched::open_tuning_store(from, TuningStore::Access::ReadOnly);
        const nlohmann::json doc = source->export_json();
        const auto dest = autosched::open_tuning_store(to);
        const int64_t added = dest->import_json(doc);
        out << "pulled " << added << " new record" << (added == 1 ? "" : "s") << " from " << source->location() << " into "
            << dest->location() << " (" << (int64_t)doc["records"].size() - added << " already present)\n";
        return 0;
    } catch (const std::exception &e) {
        err << "tessel db pull: " << e.what() << "\n";
        return 1;
    }
}

}  // namespace tessel
