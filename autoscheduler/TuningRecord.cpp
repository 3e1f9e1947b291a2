/** \file
 * TuningRecord's JSON form, the provenance order and the record checks (TuningRecord.h).
 */
#include "autoscheduler/TuningRecord.h"
#include "support/JsonField.h"

#include <chrono>
#include <cmath>

namespace tessel::autosched {

namespace {

using nlohmann::json;

}  // namespace

json TuningRecord::to_json() const {
    return json{{"key", key.to_json()},
                {"schedule", schedule},
                {"median_ms", median_ms},
                {"samples", samples},
                {"cost_model_version", cost_model_version},
                {"measured_by", measured_by},
                {"created_unix", created_unix},
                {"notes", notes}};
}

TuningRecord TuningRecord::from_json(const json &j, const std::string &path) {
    TuningRecord r;
    r.key = TuningKey::from_json(json_field<json, TuningKeyError>(j, "key", path), path + ".key");
    r.schedule = json_field<json, TuningKeyError>(j, "schedule", path);
    r.median_ms = json_field<double, TuningKeyError>(j, "median_ms", path);
    r.samples = json_field<std::vector<double>, TuningKeyError>(j, "samples", path);
    r.cost_model_version = json_field<std::string, TuningKeyError>(j, "cost_model_version", path);
    r.measured_by = json_field<std::string, TuningKeyError>(j, "measured_by", path);
    r.created_unix = json_field<int64_t, TuningKeyError>(j, "created_unix", path);
    r.notes = json_field<std::string, TuningKeyError>(j, "notes", path);
    return r;
}

int provenance_rank(const std::string &measured_by) {
    const char *order[] = {kMeasured, kVerified, kImported, kModel, kRefused};
    for (int i = 0; i < 5; i++)
        if (measured_by == order[i]) return i;
    return -1;
}

std::string provenance_names() {
    return std::string("\"") + kMeasured + "\", \"" + kVerified + "\", \"" + kImported + "\", \"" + kModel + "\", \"" + kRefused +
           "\"";
}

bool better_record(const TuningRecord &a, const TuningRecord &b) {
    const int ra = provenance_rank(a.measured_by), rb = provenance_rank(b.measured_by);
    if (ra != rb) return ra < rb;
    return a.median_ms < b.median_ms;
}

void validate_record(const TuningRecord &r, const std::string &where) {
    if (!std::isfinite(r.median_ms) || r.median_ms < 0)
        throw TuningDatabaseError(where + ": median_ms must be a finite, non-negative time, got " + std::to_string(r.median_ms));
    if (provenance_rank(r.measured_by) < 0)
        throw TuningDatabaseError(where + ": measured_by must be one of " + provenance_names() + ", got \"" + r.measured_by +
                                  "\"");
    for (double s : r.samples)
        if (!std::isfinite(s)) throw TuningDatabaseError(where + ": a sample is not a finite time");
}

int64_t now_unix() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace tessel::autosched
