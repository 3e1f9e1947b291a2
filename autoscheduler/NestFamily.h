/** \file
 * NestFamily: which loop nest a search-space point (CandidateParams) is, as a type. The list
 * and the text forms are in NestFamilies.def; the text is what tuning-database descriptions,
 * the points' JSON and `tessel tune` print, so it is stable.
 *
 *   NestFamily f = parse_nest_family("splitk");   // throws std::invalid_argument on "gem"
 *   to_string(f) == "splitk";  nest_device(f) == sched::Device::Cpu
 */
#pragma once

#include "schedules/Schedule.h"

#include <string>

namespace tessel::autosched {

enum class NestFamily {
    None,  ///< no point: a result served from the database carries a schedule, not a point
#define NEST_FAMILY(E, text, device) E,
#include "autoscheduler/NestFamilies.def"
#undef NEST_FAMILY
};

/** "gemm", "cuda_tiled", ...; "none" for NestFamily::None. */
const char *to_string(NestFamily f);
/** The family named `text` (to_string's words, "none" included); throws std::invalid_argument
 * naming the word and the valid ones. */
NestFamily parse_nest_family(const std::string &text);
/** The device the family's nests run on (NestFamily::None: Cpu). */
sched::Device nest_device(NestFamily f);

}  // namespace tessel::autosched
