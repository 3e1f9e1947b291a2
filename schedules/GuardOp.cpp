#include "schedules/GuardOp.h"

#include "support/Vocabulary.h"

namespace tessel::sched {

namespace {

constexpr VocabularyEntry<GuardOp> kGuardOps[] = {
#define GUARD_OP(E, text, runtime) {GuardOp::E, text},
#include "schedules/GuardOps.def"
#undef GUARD_OP
};

constexpr VocabularyEntry<GuardOp> kRuntimeNames[] = {
#define GUARD_OP(E, text, runtime) {GuardOp::E, #runtime},
#include "schedules/GuardOps.def"
#undef GUARD_OP
};

}  // namespace

const char *to_string(GuardOp op) { return vocabulary_text(kGuardOps, op); }

GuardOp parse_guard_op(const std::string &text) { return vocabulary_parse(kGuardOps, text, "guard operator"); }

const char *runtime_name(GuardOp op) { return vocabulary_text(kRuntimeNames, op); }

}  // namespace tessel::sched
