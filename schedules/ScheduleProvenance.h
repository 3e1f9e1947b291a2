/** \file
 * ScheduleProvenance: where a group's schedule came from, as a type. The tuner's result
 * (autosched::TuneResult::source) and schedule selection (compiler/ScheduleSelection.h) both
 * carry it; it lives here, below both, so they share one vocabulary. The text forms are what
 * `tessel compile`, `tessel run --explain` and `tessel tune` print.
 *
 *   parse_schedule_provenance("database") == ScheduleProvenance::Database
 *   to_string(ScheduleProvenance::LibraryDefault) == "library"
 */
#pragma once

#include <string>

namespace tessel {

enum class ScheduleProvenance {
#define SCHEDULE_PROVENANCE(E, text, meaning) E,
#include "schedules/ScheduleProvenances.def"
#undef SCHEDULE_PROVENANCE
};

/** "user", "database", "measured", "model", "library". */
const char *to_string(ScheduleProvenance p);
/** The provenance named `text`; throws std::invalid_argument naming the word and the valid ones. */
ScheduleProvenance parse_schedule_provenance(const std::string &text);

}  // namespace tessel
