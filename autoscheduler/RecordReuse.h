/** \file
 * The tuner's database side: reusing a stored record before any search, and committing the
 * search's winner after it (MetaSchedule's database role).
 *
 * Reuse: a measured or verified record is a hit. An imported record (another machine's, from
 * `tessel db import`) is used only once its schedule has been run here on this group and shape
 * and checked against the reference; the verdict (verified or refused) is committed beside it,
 * so the check runs once per record, not once per lookup. A model-only record is a hit only for
 * a run that does not measure: a measuring run measures over it and outranks it.
 *
 * Legal for any TuningCache; a read-only database that cannot store a verdict still refuses
 * the record for this call.
 */
#pragma once

#include "autoscheduler/Tuner.h"

#include <optional>
#include <ostream>

namespace tessel::autosched {

/** Whether `cache` holds a record for result.key that this call may take (imported ones are
 * verified first); a run with `measuring` takes only measured or verified ones. On a hit it
 * fills result.schedule, .source, .time_ms and .decision. */
bool reuse_record(const TuneContext &ctx, TuningCache &cache, bool measuring, TuneResult &result);

/** Stores `result` (its winner `ranked[winner]`) as the record for result.key. */
void commit_result(TuningCache &cache, const TuneResult &result, size_t winner, const CostModel &model);

}  // namespace tessel::autosched
