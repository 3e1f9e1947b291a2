/* Argument checks and sizes: what a library verifies about the caller's buffers before it runs
 * (null, rank, type, each extent against the graph's static size and against the symbol it
 * binds, density), and the bytes of every value as an expression of the bound symbols. */
#include "tessel_runtime.h"

#include <string.h>

#include "HalideRuntime.h"

#include <stdarg.h>

#define TESSEL_RT_API __attribute__((weak))

static int fail(char *error, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error, size, fmt, ap);
    va_end(ap);
    return 1;
}

TESSEL_RT_API int64_t tessel_dim_extent(tessel_dim d, const int64_t *symbols) {
    return d.symbol < 0 ? d.size : symbols[d.symbol];
}

TESSEL_RT_API void tessel_physical_extents(const tessel_value *v, const int64_t *symbols, int64_t *extents) {
    for (int p = 0; p < v->physical_rank; p++) {
        const tessel_physical_dim pd = v->physical[p];
        const int64_t e = tessel_dim_extent(v->dims[pd.axis], symbols);
        /* A panel width below 1 only comes from a malformed table; it gives extent 0, not a division by zero. */
        extents[p] = pd.part == TESSEL_AXIS_WHOLE      ? e
                     : pd.part == TESSEL_AXIS_IN_PANEL ? pd.width
                     : pd.width < 1                    ? 0
                                                       : (e + pd.width - 1) / pd.width;
    }
}

TESSEL_RT_API int tessel_value_bytes(const tessel_value *v, const int64_t *symbols, int64_t *bytes) {
    int64_t extents[64], b = v->element_bytes;
    if (v->physical_rank > 64) return 1;
    for (int p = 0; p < v->physical_rank; p++)
        if (v->physical[p].part != TESSEL_AXIS_WHOLE && v->physical[p].width < 1) return 1;
    tessel_physical_extents(v, symbols, extents);
    for (int p = 0; p < v->physical_rank; p++)
        if (__builtin_mul_overflow(b, extents[p], &b)) return 1;
    if (b > INT64_MAX - (TESSEL_ALIGNMENT - 1)) return 1;
    *bytes = (b + TESSEL_ALIGNMENT - 1) / TESSEL_ALIGNMENT * TESSEL_ALIGNMENT;
    return 0;
}

TESSEL_RT_API int tessel_check_arguments(const tessel_value *values, const int *slots, int count,
                                         struct halide_buffer_t *const *buffers, const char *const *symbol_names,
                                         int64_t *symbols, char *error, size_t error_size) {
    for (int i = 0; i < count; i++) {
        const tessel_value *a = &values[slots ? slots[i] : i];
        const halide_buffer_t *b = buffers[slots ? slots[i] : i];
        const int rank = a->rank > 1 ? a->rank : 1;
        if (!b || !b->host)
            return fail(error, error_size, "argument %s (%s) is null or has no host memory", a->name, a->type_text);
        if (b->dimensions != rank)
            return fail(error, error_size, "argument %s has %d dimensions; %s needs %d", a->name, b->dimensions, a->type_text,
                        rank);
        if (b->type.code != a->type_code || b->type.bits != a->type_bits || b->type.lanes != 1)
            return fail(error, error_size, "argument %s is not %.*s (%s)", a->name, (int)strcspn(a->type_text, "["), a->type_text,
                        a->type_text);
        for (int ax = 0; ax < a->rank; ax++) {
            const int extent = b->dim[a->rank - 1 - ax].extent;
            const tessel_dim d = a->dims[ax];
            if (d.symbol < 0) {
                if (extent != d.size)
                    return fail(error, error_size, "argument %s: extent %d in axis %d, the graph declares %s", a->name, extent,
                                ax, a->type_text);
                continue;
            }
            if (extent < 1) return fail(error, error_size, "argument %s: extent %d in axis %d", a->name, extent, ax);
            int64_t *sym = &symbols[d.symbol];
            if (*sym < 0)
                *sym = extent;
            else if (*sym != extent)
                return fail(
                    error, error_size,
                    "argument %s: extent %d in axis %d (%s), but %s = %lld from an earlier argument; the graph declares %s",
                    a->name, extent, ax, symbol_names[d.symbol], symbol_names[d.symbol], (long long)*sym, a->type_text);
        }
    }
    /* Density and mins last, so that a wrong extent is reported as such rather than as odd strides. */
    for (int i = 0; i < count; i++) {
        const tessel_value *a = &values[slots ? slots[i] : i];
        const halide_buffer_t *b = buffers[slots ? slots[i] : i];
        const int rank = a->rank > 1 ? a->rank : 1;
        int64_t stride = 1;
        for (int d = 0; d < rank; d++) {
            if (b->dim[d].stride != stride)
                return fail(error, error_size, "argument %s is not dense (dimension %d has stride %d, expected %lld)", a->name, d,
                            b->dim[d].stride, (long long)stride);
            stride *= b->dim[d].extent;
        }
        /* The kernels index every buffer from 0: a min elsewhere would shift one buffer's
         * coordinates against the others' and the workspace's. */
        for (int d = 0; d < rank; d++)
            if (b->dim[d].min != 0)
                return fail(error, error_size, "argument %s: dimension %d has min %d; a library's buffers are indexed from 0",
                            a->name, d, b->dim[d].min);
    }
    return 0;
}
