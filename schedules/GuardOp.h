/** \file
 * GuardOp: the operator of a specialization guard (sched::Guard), as a type. The list is
 * GuardOps.def; each value is the C runtime's TESSEL_GUARD_* constant of the same meaning, so
 * the generated library's tables and Guard::holds pass it to tessel_guard_holds unchanged.
 *
 *   parse_guard_op("<=") == GuardOp::Le;  to_string(GuardOp::Divisible) == "%"
 *   parse_guard_op("<") throws std::invalid_argument naming the valid operators
 */
#pragma once

#include "tessel_runtime.h"

#include <string>

namespace tessel::sched {

enum class GuardOp {
#define GUARD_OP(E, text, runtime) E = runtime,
#include "schedules/GuardOps.def"
#undef GUARD_OP
};

/** "==", "<=", ">=", "%". */
const char *to_string(GuardOp op);
/** The operator written `text`; throws std::invalid_argument naming the word and the valid ones. */
GuardOp parse_guard_op(const std::string &text);
/** The runtime constant's name, for generated C: "TESSEL_GUARD_LE". */
const char *runtime_name(GuardOp op);

}  // namespace tessel::sched
