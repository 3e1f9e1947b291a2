/** \file
 * MemoryTuningCache (TuningCache.h): records in commit order, ranked on lookup.
 */
#include "autoscheduler/TuningCache.h"

#include <algorithm>

namespace tessel::autosched {

void MemoryTuningCache::commit(const TuningRecord &record) {
    validate_record(record, "memory tuning cache: commit");
    if (std::find(records_.begin(), records_.end(), record) == records_.end()) records_.push_back(record);
}

std::vector<TuningRecord> MemoryTuningCache::top_k(const TuningKey &key, int k) {
    std::vector<TuningRecord> out;
    auto refused = [&](const TuningRecord &r) {
        return std::any_of(records_.begin(), records_.end(), [&](const TuningRecord &x) {
            return x.key == r.key && x.schedule == r.schedule && x.measured_by == kRefused;
        });
    };
    for (const TuningRecord &r : records_)
        if (r.key == key && !refused(r)) out.push_back(r);
    std::stable_sort(out.begin(), out.end(), better_record);
    if (k < 0) k = 0;
    if (out.size() > (size_t)k) out.resize(k);
    return out;
}

std::optional<TuningRecord> MemoryTuningCache::lookup(const TuningKey &key) {
    std::vector<TuningRecord> r = top_k(key, 1);
    if (r.empty()) return std::nullopt;
    return r.front();
}

}  // namespace tessel::autosched
