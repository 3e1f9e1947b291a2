/* Guard evaluation: the one definition of when a guarded variant's guard holds (Guard::holds in
 * schedules/Schedule.cpp calls it; generated libraries dispatch with tessel_pick_variant). */
#include "tessel_runtime.h"

#include <string.h>

#define TESSEL_RT_API __attribute__((weak))

TESSEL_RT_API int tessel_guard_op_from_text(const char *text) {
    if (!text) return TESSEL_GUARD_UNKNOWN;
    if (!strcmp(text, "==")) return TESSEL_GUARD_EQ;
    if (!strcmp(text, "<=")) return TESSEL_GUARD_LE;
    if (!strcmp(text, ">=")) return TESSEL_GUARD_GE;
    if (!strcmp(text, "%")) return TESSEL_GUARD_DIVISIBLE;
    return TESSEL_GUARD_UNKNOWN;
}

TESSEL_RT_API int tessel_guard_holds(int op, int64_t value, int64_t extent) {
    switch (op) {
    case TESSEL_GUARD_EQ: return extent == value;
    case TESSEL_GUARD_LE: return extent <= value;
    case TESSEL_GUARD_GE: return extent >= value;
    /* Divisible by 0: never. By -1: always (and INT64_MIN % -1 is not evaluated). */
    case TESSEL_GUARD_DIVISIBLE: return value != 0 && (value == -1 || extent % value == 0);
    default: return -1;
    }
}

TESSEL_RT_API int tessel_pick_variant(const tessel_guard *guards, const int *guard_counts, int count, const int64_t *extents) {
    int first = 0;
    for (int v = 0; v < count; v++) {
        int all = 1;
        for (int k = first; k < first + guard_counts[v]; k++) {
            const int holds =
                guards[k].extent < 0 ? 0 : tessel_guard_holds(guards[k].op, guards[k].value, extents[guards[k].extent]);
            if (holds < 0) return -1;
            all = all && holds;
        }
        if (all) return v;
        first += guard_counts[v];
    }
    return count;
}
