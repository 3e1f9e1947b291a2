/* Profile recording: with TESSEL_LIB_PROFILE=FILE a library counts its calls per binding of the
 * graph's symbols and writes the histogram at exit in the shape-profile text form that
 * autoscheduler/SpecializationPlanner.h parses (`tessel lib --profile`, `tessel specialize`). */
#include "tessel_runtime.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define TESSEL_RT_API __attribute__((weak))

static pthread_mutex_t profile_lock = PTHREAD_MUTEX_INITIALIZER;

TESSEL_RT_API void tessel_profile_count(tessel_profile *p, const int64_t *shape) {
    const size_t row = (size_t)p->symbol_count * sizeof(int64_t);
    int i = 0;
    while (i < p->used && memcmp(p->shapes + (size_t)i * (size_t)p->symbol_count, shape, row)) i++;
    if (i == p->used) {
        if (p->used == p->capacity) return;
        if (row) memcpy(p->shapes + (size_t)i * (size_t)p->symbol_count, shape, row);
        p->calls[i] = 0;
        p->used++;
    }
    p->calls[i]++;
}

TESSEL_RT_API void tessel_profile_write(const tessel_profile *p, FILE *f) {
    fprintf(f, "# calls per shape of %s (TESSEL_LIB_PROFILE)\n", p->library);
    for (int i = 0; i < p->used; i++) {
        for (int s = 0; s < p->symbol_count; s++)
            fprintf(f, "%s=%lld ", p->symbol_names[s], (long long)p->shapes[(size_t)i * (size_t)p->symbol_count + (size_t)s]);
        fprintf(f, "calls=%lld\n", p->calls[i]);
    }
}

TESSEL_RT_API void tessel_profile_record(tessel_profile *p, const int64_t *shape, void (*at_exit)(void)) {
    pthread_mutex_lock(&profile_lock);
    if (p->state == 0) {
        const char *path = getenv("TESSEL_LIB_PROFILE");
        p->state = path && *path ? 2 : 1;
        if (p->state == 2 && at_exit) atexit(at_exit);
    }
    if (p->state == 2) tessel_profile_count(p, shape);
    pthread_mutex_unlock(&profile_lock);
}

TESSEL_RT_API void tessel_profile_write_to_env_file(const tessel_profile *p) {
    const char *path = getenv("TESSEL_LIB_PROFILE");
    FILE *f = path && *path ? fopen(path, "w") : NULL;
    if (!f) return;
    tessel_profile_write(p, f);
    fclose(f);
}
