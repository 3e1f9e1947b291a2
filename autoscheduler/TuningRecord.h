/** \file
 * TuningRecord: one tuned schedule stored under a TuningKey, with its time, its samples and its
 * provenance (where the schedule and the time come from), and the order that makes one record
 * better than another. Both tuning caches (TuningCache.h) and the SQLite file (TuningDatabase.h)
 * store these records and rank them with better_record().
 *
 * Legal for any record; validate_record() says whether one may be stored (a finite,
 * non-negative median, finite samples, a known provenance). TuningRecord::to_json() and
 * from_json() are the record's form in an export document (TuningDatabase::export_json).
 */
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autoscheduler/TuningKey.h"

namespace tessel::autosched {

/** A database that cannot be opened, read or written (corrupt file, newer schema, bad import),
 * or a record that may not be stored; what() names the file and the cause. */
class TuningDatabaseError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/** Where a record's schedule and time come from (TuningRecord::measured_by), best first:
 *  measured  timed by a tuner on this database (its results verified by the measuring child);
 *  verified  imported, then checked here against the group's reference on its shape;
 *  imported  measured elsewhere and brought in by `db import` (which turns measured and
 *            verified records into this): a lookup verifies it before use (Tuner);
 *  model     the cost model's estimate, not measured;
 *  refused   an imported schedule that failed the check here: never returned by a lookup, and
 *            neither is any record of the same key and schedule. */
constexpr const char *kMeasured = "measured", *kVerified = "verified", *kImported = "imported", *kModel = "model",
                     *kRefused = "refused";
/** Index in the order above; -1 for anything else. */
int provenance_rank(const std::string &measured_by);
std::string provenance_names();

struct TuningRecord {
    TuningKey key;
    nlohmann::json schedule;         ///< sched::to_json(ScheduleSpec)
    double median_ms = 0;            ///< measured median, or the model's estimate
    std::vector<double> samples;     ///< individual timings in ms (empty for model records)
    std::string cost_model_version;  ///< model that ranked the candidate
    std::string measured_by;         ///< a provenance above: kMeasured, kVerified, kImported, kModel, kRefused
    int64_t created_unix = 0;        ///< seconds since the epoch
    std::string notes;

    nlohmann::json to_json() const;
    /** Throws TuningKeyError naming the missing or mistyped field. */
    /** Throws TuningKeyError naming the field by its path under `path` (`records[3].key.target`)
     * and the expected and found type. */
    static TuningRecord from_json(const nlohmann::json &j, const std::string &path = "record");
    bool operator==(const TuningRecord &o) const = default;
};

/** True when a should be preferred to b: better provenance (the order above), then lower
 * median_ms. Records equal under this order keep their commit order. */
bool better_record(const TuningRecord &a, const TuningRecord &b);

/** Checks the fields a record must have before it is stored: throws TuningDatabaseError,
 * prefixed by `where`, for a median that is not a finite non-negative time, a sample that is not
 * finite, or an unknown provenance. */
void validate_record(const TuningRecord &r, const std::string &where);

/** Seconds since the epoch, for TuningRecord::created_unix. */
int64_t now_unix();

}  // namespace tessel::autosched
