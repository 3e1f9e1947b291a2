#include "autoscheduler/NestFamily.h"

#include "support/Vocabulary.h"

namespace tessel::autosched {

namespace {

constexpr VocabularyEntry<NestFamily> kNestFamilies[] = {
    {NestFamily::None, "none"},
#define NEST_FAMILY(E, text, device) {NestFamily::E, text},
#include "autoscheduler/NestFamilies.def"
#undef NEST_FAMILY
};

}  // namespace

const char *to_string(NestFamily f) { return vocabulary_text(kNestFamilies, f); }

NestFamily parse_nest_family(const std::string &text) { return vocabulary_parse(kNestFamilies, text, "nest family"); }

sched::Device nest_device(NestFamily f) {
    switch (f) {
#define NEST_FAMILY(E, text, device) \
    case NestFamily::E:              \
        return sched::Device::device;
#include "autoscheduler/NestFamilies.def"
#undef NEST_FAMILY
    case NestFamily::None: break;
    }
    return sched::Device::Cpu;
}

}  // namespace tessel::autosched
