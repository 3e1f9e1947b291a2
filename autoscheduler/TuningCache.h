/** \file
 * TuningCache: the narrow interface the tuner uses to reuse and store tuned schedules (lookup,
 * commit, top_k), and MemoryTuningCache, its in-memory implementation for tests and dry runs.
 * The SQLite file (TuningDatabase.h) is the other implementation; both keep every committed
 * record (an identical one once), never return a refused schedule, and rank records with
 * better_record() (TuningRecord.h).
 */
#pragma once

#include <optional>
#include <vector>

#include "autoscheduler/TuningRecord.h"

namespace tessel::autosched {

/** The tuner's view of a database. */
class TuningCache {
public:
    virtual ~TuningCache() = default;
    /** The best record whose key equals `key` in every part, or nullopt. */
    virtual std::optional<TuningRecord> lookup(const TuningKey &key) = 0;
    /** Store a record (kept alongside earlier ones; an identical record is stored once). */
    virtual void commit(const TuningRecord &record) = 0;
    /** Up to k records of `key`, best first. */
    virtual std::vector<TuningRecord> top_k(const TuningKey &key, int k) = 0;
};

/** In-memory TuningCache with TuningDatabase's semantics (best order, identical records once).
 * Not thread-safe. */
class MemoryTuningCache : public TuningCache {
public:
    std::optional<TuningRecord> lookup(const TuningKey &key) override;
    void commit(const TuningRecord &record) override;
    std::vector<TuningRecord> top_k(const TuningKey &key, int k) override;
    const std::vector<TuningRecord> &all() const { return records_; }

private:
    std::vector<TuningRecord> records_;
};

}  // namespace tessel::autosched
