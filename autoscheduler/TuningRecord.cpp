/** \file
 * TuningRecord's JSON form, the provenance order and the record checks (TuningRecord.h).
 */
#include "autoscheduler/TuningRecord.h"

#include <chrono>
#include <cmath>

namespace tessel::autosched {

namespace {

using nlohmann::json;

template <typename T>
T record_field(const json &j, const char *name) {
    auto it = j.find(name);
    if (it == j.end()) throw TuningKeyError(std::string("record: missing field '") + name + "'");
    try {
        return it->get<T>();
    } catch (const json::exception &) {
        throw TuningKeyError(std::string("record: field '") + name + "' has the wrong type");
    }
}

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

TuningRecord TuningRecord::from_json(const json &j) {
    if (!j.is_object()) throw TuningKeyError("record: expected a JSON object");
    TuningRecord r;
    r.key = TuningKey::from_json(record_field<json>(j, "key"));
    r.schedule = record_field<json>(j, "schedule");
    r.median_ms = record_field<double>(j, "median_ms");
    r.samples = record_field<std::vector<double>>(j, "samples");
    r.cost_model_version = record_field<std::string>(j, "cost_model_version");
    r.measured_by = record_field<std::string>(j, "measured_by");
    r.created_unix = record_field<int64_t>(j, "created_unix");
    r.notes = record_field<std::string>(j, "notes");
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
