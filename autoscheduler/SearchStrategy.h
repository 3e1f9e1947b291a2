/** \file
 * The tuner's search: rank a group's space, then choose one candidate (MetaSchedule's search
 * strategy role). Three strategies, by what the target and the call allow:
 *
 *   search_by_ptxas        CUDA without a GPU: the model's best candidates in order, each
 *                          assembled with ptxas -v for the target's architecture; the first
 *                          without spills and within limits wins.
 *   search_by_measurement  CPU with a measurer: the model's top `budget` plus the library's own
 *                          point screened in isolated children, the near-tie rule, then a
 *                          final round timing the front-runners together (Tuner.h).
 *   model_pick             anything else: the cost model's top pick.
 *
 * Each fills TuneResult's ranked, source, decision, time_ms (and measured_count) and returns
 * the winner's index into result.ranked. Legal for any request rank_candidates accepted.
 */
#pragma once

#include "autoscheduler/Tuner.h"

namespace tessel::autosched {

/** Enumerate the space, prune it (counts per rule into result.prune) and rank the survivors by
 * the cost model into result.ranked. A space pruned empty keeps the always-correct nest. */
void rank_candidates(const TuneContext &ctx, TuneResult &result);

size_t search_by_ptxas(const TuneContext &ctx, TuneResult &result);
size_t search_by_measurement(const TuneContext &ctx, TuneResult &result);
size_t model_pick(TuneResult &result, std::string decision);

}  // namespace tessel::autosched
