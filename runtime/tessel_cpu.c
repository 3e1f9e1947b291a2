/* CPU-feature dispatch: a library compiled for several targets runs the first whose features the
 * CPU reports (__builtin_cpu_supports); TESSEL_LIB_ISA=<suffix> restricts it to one target. */
#include "tessel_runtime.h"

#include <cpuid.h>
#include <string.h>

#define TESSEL_RT_API __attribute__((weak))

/* __builtin_cpu_supports takes a literal: one row per feature a target may need
 * (driver/LibraryTargets.cpp lists which Halide features need which). */
#define TESSEL_FEATURE(name) \
    if (!strcmp(feature, name)) return __builtin_cpu_supports(name) != 0;

/* F16C from CPUID leaf 1 (ECX bit 29): clang before 15 does not name it in __builtin_cpu_supports. */
static int tessel_cpu_has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}

TESSEL_RT_API int tessel_cpu_supports(const char *feature) {
    __builtin_cpu_init();
    if (!strcmp(feature, "f16c")) return tessel_cpu_has_f16c();
    TESSEL_FEATURE("sse4.1")
    TESSEL_FEATURE("avx")
    TESSEL_FEATURE("avx2")
    TESSEL_FEATURE("fma")
    TESSEL_FEATURE("avx512f")
    TESSEL_FEATURE("avx512cd")
    TESSEL_FEATURE("avx512bw")
    TESSEL_FEATURE("avx512dq")
    TESSEL_FEATURE("avx512vl")
    TESSEL_FEATURE("avx512ifma")
    TESSEL_FEATURE("avx512vbmi")
    TESSEL_FEATURE("avx512bf16")
    TESSEL_FEATURE("avx512vnni")
    return 0;
}

TESSEL_RT_API int tessel_pick_target(const tessel_target *targets, int count, const char *only,
                                     int (*supports)(const char *feature)) {
    if (only && !*only) only = NULL;
    for (int t = 0; t < count; t++) {
        int all = 1;
        for (int f = 0; f < targets[t].feature_count && all; f++) all = supports(targets[t].features[f]);
        if (all && (!only || !strcmp(only, targets[t].suffix))) return t;
    }
    return -1;
}
