#include "schedules/ScheduleProvenance.h"

#include "support/Vocabulary.h"

namespace tessel {

namespace {

constexpr VocabularyEntry<ScheduleProvenance> kProvenances[] = {
#define SCHEDULE_PROVENANCE(E, text, meaning) {ScheduleProvenance::E, text},
#include "schedules/ScheduleProvenances.def"
#undef SCHEDULE_PROVENANCE
};

}  // namespace

const char *to_string(ScheduleProvenance p) { return vocabulary_text(kProvenances, p); }

ScheduleProvenance parse_schedule_provenance(const std::string &text) {
    return vocabulary_parse(kProvenances, text, "schedule provenance");
}

}  // namespace tessel
