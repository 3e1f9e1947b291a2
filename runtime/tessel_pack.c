/* Arena packing: the one best-fit packer (dsl/analysis/BufferAssignment.cpp calls tessel_pack
 * for plans up to kMaxBestFitAllocations allocations; generated libraries pack per call with it).
 * Allocations are placed in an order, each at the lowest offset of the smallest gap between the
 * already placed allocations that conflict with it that fits it, else on top; three orders are
 * tried and the lowest peak kept, as heap simulators try several. */
#include "tessel_runtime.h"

#include <stdlib.h>

#define TESSEL_RT_API __attribute__((weak))

typedef struct pack_keys {
    int which;
    const int64_t *bytes;
    const int *first, *last;
} pack_keys;

/* Whether allocation x goes strictly before y in order `which`. */
static int before(const pack_keys *k, int x, int y) {
    const int64_t bx = k->bytes[x], by = k->bytes[y];
    switch (k->which) {
    case 0: return bx != by ? bx > by : k->first[x] < k->first[y];
    case 1: {
        const int64_t sx = (int64_t)(k->last[x] - k->first[x] + 1), sy = (int64_t)(k->last[y] - k->first[y] + 1);
        return bx * sx > by * sy;
    }
    default: return k->first[x] != k->first[y] ? k->first[x] < k->first[y] : bx > by;
    }
}

/* Stable merge sort of order[0..n) by `before`, through tmp[n]. */
static void merge_sort(const pack_keys *k, int *order, int *tmp, int n) {
    for (int width = 1; width < n; width *= 2) {
        for (int lo = 0; lo < n; lo += 2 * width) {
            const int mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            int i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = before(k, order[j], order[i]) ? order[j++] : order[i++];
            while (i < mid) tmp[o++] = order[i++];
            while (j < hi) tmp[o++] = order[j++];
        }
        for (int i = 0; i < n; i++) order[i] = tmp[i];
    }
}

TESSEL_RT_API void tessel_pack_order(int which, int n, const int64_t *bytes, const int *first_step, const int *last_step,
                                     int *order, void *scratch) {
    const pack_keys k = {which, bytes, first_step, last_step};
    for (int i = 0; i < n; i++) order[i] = i;
    merge_sort(&k, order, (int *)scratch, n);
}

static int by_range(const void *a, const void *b) {
    const int64_t *x = (const int64_t *)a, *y = (const int64_t *)b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

TESSEL_RT_API int64_t tessel_pack_in_order(int n, const int *order, const int64_t *bytes, const unsigned char *conflicts,
                                           int64_t *offsets, void *scratch) {
    int64_t *taken = (int64_t *)scratch; /* [begin, end) pairs of the conflicting placed ones */
    int64_t peak = 0;
    for (int k = 0; k < n; k++) {
        const int cur = order[k];
        int count = 0;
        for (int q = 0; q < k; q++) {
            const int p = order[q];
            if (!conflicts[(size_t)cur * (size_t)n + (size_t)p]) continue;
            taken[2 * count] = offsets[p];
            taken[2 * count + 1] = offsets[p] + bytes[p];
            count++;
        }
        qsort(taken, (size_t)count, 2 * sizeof(int64_t), by_range);
        const int64_t need = bytes[cur];
        int64_t cursor = 0, best = -1, best_gap = INT64_MAX;
        for (int t = 0; t < count; t++) {
            const int64_t begin = taken[2 * t], end = taken[2 * t + 1];
            if (begin - cursor >= need && begin - cursor < best_gap) {
                best = cursor;
                best_gap = begin - cursor;
            }
            if (end > cursor) cursor = end;
        }
        offsets[cur] = best >= 0 ? best : cursor;
        if (offsets[cur] + need > peak) peak = offsets[cur] + need;
    }
    return peak;
}

TESSEL_RT_API int64_t tessel_pack(int n, const int64_t *bytes, const int *first_step, const int *last_step,
                                  const unsigned char *conflicts, int64_t *offsets, void *scratch) {
    if (n <= 0) return 0;
    /* scratch: order[n], sort tmp[n] (ints), then trial offsets[n] and the taken ranges[2n]. */
    int *order = (int *)scratch, *tmp = order + n;
    int64_t *trial = (int64_t *)scratch + ((size_t)n * 2 * sizeof(int) + sizeof(int64_t) - 1) / sizeof(int64_t);
    int64_t *ranges = trial + n;
    int64_t best = -1;
    for (int which = 0; which < TESSEL_PACK_ORDERS; which++) {
        tessel_pack_order(which, n, bytes, first_step, last_step, order, tmp);
        const int64_t peak = tessel_pack_in_order(n, order, bytes, conflicts, trial, ranges);
        if (best < 0 || peak < best) {
            best = peak;
            for (int i = 0; i < n; i++) offsets[i] = trial[i];
        }
    }
    return best;
}
