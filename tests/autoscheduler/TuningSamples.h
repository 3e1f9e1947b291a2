// Sample tuning keys, schedules and records for the tuning-database tests (both backends).
#pragma once

#include "autoscheduler/TuningKey.h"
#include "autoscheduler/TuningRecord.h"
#include "schedules/ScheduleJson.h"

#include <string>

namespace tessel::testing {

inline autosched::TuningKey sample_key() {
    autosched::TuningKey k = autosched::TuningKey::current();
    k.group_hash = "0123456789abcdef0123456789abcdef";
    k.shape_class = "decode";
    k.shapes = "K=4096,M=1,N=4096";
    k.target = "x86-64-linux-avx2-avx512-fma-sse41";
    k.numeric_mode = "strict";
    k.space_version = 1;
    return k;
}

/** A schedule told apart by its tile (so records with different tiles are different records). */
inline nlohmann::json sample_schedule(int tile) {
    sched::ScheduleSpec s("tuned_" + std::to_string(tile));
    s.split({"y"}, "n", "no", "ni", tile).vectorize({"y"}, "ni").parallel({"y"}, "no");
    return sched::to_json(s);
}

inline autosched::TuningRecord sample_record(const autosched::TuningKey &k, double ms, std::string by = "measured", int tile = 16,
                                             std::string notes = "") {
    return autosched::TuningRecord{k,          sample_schedule(tile), ms, {ms, ms * 1.01, ms * 0.99}, "analytic-1", std::move(by),
                                   1735689600, std::move(notes)};
}

}  // namespace tessel::testing
