/* The C runtime of generated libraries (runtime/tessel_runtime.h), as C: the packer against
 * layouts computed by hand (each of the three orders winning once), guards (divisible by zero,
 * unknown operators, missing extents), argument-check messages, the profile's text form and
 * the target choice. Prints each failed check and exits 1 when any failed. */
#include "tessel_runtime.h"

#include "HalideRuntime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            failures++;                                                              \
        }                                                                            \
    } while (0)
#define CHECK_TEXT(text, expected)                                                                             \
    do {                                                                                                       \
        if (strcmp((text), (expected))) {                                                                      \
            fprintf(stderr, "%s:%d: got \"%s\"\n  expected \"%s\"\n", __FILE__, __LINE__, (text), (expected)); \
            failures++;                                                                                        \
        }                                                                                                      \
    } while (0)

/* Allocations with live ranges; conflicts where the ranges intersect. */
typedef struct plan5 {
    int n;
    int64_t bytes[5];
    int first[5], last[5];
    unsigned char conflicts[25];
} plan5;

static void live_range_conflicts(plan5 *p) {
    for (int i = 0; i < p->n; i++)
        for (int j = 0; j < p->n; j++)
            p->conflicts[i * p->n + j] = i != j && p->first[i] <= p->last[j] && p->first[j] <= p->last[i];
}

static int same(const int64_t *a, const int64_t *b, int n) {
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* Checks each order's sequence and peak, and that tessel_pack keeps the lowest. */
static void check_orders(plan5 *p, const int expected_order[3][5], const int64_t expected_peak[3], const int64_t best_offsets[5],
                         int64_t best_peak) {
    int64_t scratch[64], offsets[5];
    int order[5];
    live_range_conflicts(p);
    for (int w = 0; w < TESSEL_PACK_ORDERS; w++) {
        tessel_pack_order(w, p->n, p->bytes, p->first, p->last, order, scratch);
        for (int i = 0; i < p->n; i++)
            if (order[i] != expected_order[w][i]) {
                fprintf(stderr, "order %d position %d: %d, expected %d\n", w, i, order[i], expected_order[w][i]);
                failures++;
            }
        CHECK(tessel_pack_in_order(p->n, order, p->bytes, p->conflicts, offsets, scratch) == expected_peak[w]);
    }
    CHECK(sizeof scratch >= TESSEL_PACK_SCRATCH_BYTES(5));
    CHECK(tessel_pack(p->n, p->bytes, p->first, p->last, p->conflicts, offsets, scratch) == best_peak);
    CHECK(same(offsets, best_offsets, p->n));
    for (int i = 0; i < p->n; i++) CHECK(offsets[i] % TESSEL_ALIGNMENT == 0);
}

static void test_packer(void) {
    { /* A chain a0 - a1 - a2: largest first puts a2 and a0 at 0 and a1 above both (256). */
        plan5 p = {3, {128, 64, 192}, {0, 1, 2}, {1, 2, 3}, {0}};
        const int orders[3][5] = {{2, 0, 1}, {2, 0, 1}, {0, 1, 2}};
        const int64_t peaks[3] = {256, 256, 384}, best[5] = {0, 192, 0};
        check_orders(&p, orders, peaks, best, 256);
    }
    { /* Largest first wins (320 against 448 and 448). */
        plan5 p = {5, {64, 192, 64, 128, 64}, {1, 2, 3, 0, 1}, {3, 2, 5, 1, 2}, {0}};
        const int orders[3][5] = {{1, 3, 0, 4, 2}, {3, 0, 1, 2, 4}, {3, 0, 4, 1, 2}};
        const int64_t peaks[3] = {320, 448, 448}, best[5] = {192, 0, 0, 0, 256};
        check_orders(&p, orders, peaks, best, 320);
    }
    { /* Bytes x steps first wins (576 against 640 and 640). */
        plan5 p = {5, {128, 128, 192, 128, 192}, {3, 3, 1, 2, 1}, {4, 4, 2, 3, 3}, {0}};
        const int orders[3][5] = {{2, 4, 3, 0, 1}, {4, 2, 0, 1, 3}, {2, 4, 3, 0, 1}};
        const int64_t peaks[3] = {640, 576, 640}, best[5] = {192, 320, 192, 448, 0};
        check_orders(&p, orders, peaks, best, 576);
    }
    { /* Earliest first wins (320 against 384 and 384): a0 fills the gap a1 leaves below a3. */
        plan5 p = {5, {128, 128, 192, 64, 64}, {1, 0, 2, 0, 0}, {3, 0, 4, 1, 1}, {0}};
        const int orders[3][5] = {{2, 1, 0, 3, 4}, {2, 0, 1, 3, 4}, {1, 3, 4, 0, 2}};
        const int64_t peaks[3] = {384, 384, 320}, best[5] = {0, 0, 128, 128, 192};
        check_orders(&p, orders, peaks, best, 320);
    }
    int64_t scratch[8], offsets[1];
    CHECK(tessel_pack(0, NULL, NULL, NULL, NULL, offsets, scratch) == 0);
}

static void test_guards(void) {
    CHECK(tessel_guard_op_from_text("==") == TESSEL_GUARD_EQ);
    CHECK(tessel_guard_op_from_text("<=") == TESSEL_GUARD_LE);
    CHECK(tessel_guard_op_from_text(">=") == TESSEL_GUARD_GE);
    CHECK(tessel_guard_op_from_text("%") == TESSEL_GUARD_DIVISIBLE);
    CHECK(tessel_guard_op_from_text("<") == TESSEL_GUARD_UNKNOWN);
    CHECK(tessel_guard_op_from_text("") == TESSEL_GUARD_UNKNOWN);
    CHECK(tessel_guard_holds(TESSEL_GUARD_EQ, 1, 1) == 1);
    CHECK(tessel_guard_holds(TESSEL_GUARD_EQ, 1, 2) == 0);
    CHECK(tessel_guard_holds(TESSEL_GUARD_LE, 16, 16) == 1);
    CHECK(tessel_guard_holds(TESSEL_GUARD_LE, 16, 17) == 0);
    CHECK(tessel_guard_holds(TESSEL_GUARD_GE, 8, 8) == 1);
    CHECK(tessel_guard_holds(TESSEL_GUARD_GE, 8, 7) == 0);
    CHECK(tessel_guard_holds(TESSEL_GUARD_DIVISIBLE, 16, 48) == 1);
    CHECK(tessel_guard_holds(TESSEL_GUARD_DIVISIBLE, 16, 40) == 0);
    CHECK(tessel_guard_holds(TESSEL_GUARD_DIVISIBLE, 0, 0) == 0); /* divisible by zero: never */
    CHECK(tessel_guard_holds(TESSEL_GUARD_DIVISIBLE, 0, 16) == 0);
    CHECK(tessel_guard_holds(TESSEL_GUARD_DIVISIBLE, -1, INT64_MIN) == 1);
    CHECK(tessel_guard_holds(TESSEL_GUARD_UNKNOWN, 1, 1) == -1);
    CHECK(tessel_guard_holds(99, 1, 1) == -1);

    /* Variants: {M == 1}, {M <= 16, N % 8}, {K >= 4 where the group has no K}, fallback. */
    const tessel_guard guards[] = {
        {0, TESSEL_GUARD_EQ, 1}, {0, TESSEL_GUARD_LE, 16}, {1, TESSEL_GUARD_DIVISIBLE, 8}, {-1, TESSEL_GUARD_GE, 4}};
    const int counts[] = {1, 2, 1, 0};
    const int64_t m1[] = {1, 3}, m13n16[] = {13, 16}, m13n3[] = {13, 3};
    CHECK(tessel_pick_variant(guards, counts, 4, m1) == 0);
    CHECK(tessel_pick_variant(guards, counts, 4, m13n16) == 1);
    CHECK(tessel_pick_variant(guards, counts, 4, m13n3) == 3);
    CHECK(tessel_pick_variant(guards, counts, 3, m13n3) == 3); /* none holds: count */
    const tessel_guard unknown[] = {{0, 7, 1}};
    const int one[] = {1, 0};
    CHECK(tessel_pick_variant(unknown, one, 2, m1) == -1);
}

/* A dense f32 buffer, extents outermost first. */
static halide_buffer_t buffer(int rank, const int *extents, halide_dimension_t *dims, float *host) {
    halide_buffer_t b;
    memset(&b, 0, sizeof b);
    b.type.code = halide_type_float;
    b.type.bits = 32;
    b.type.lanes = 1;
    b.dimensions = rank;
    b.dim = dims;
    b.host = (uint8_t *)host;
    int stride = 1;
    for (int d = 0; d < rank; d++) {
        dims[d].min = 0;
        dims[d].extent = extents[rank - 1 - d];
        dims[d].stride = stride;
        dims[d].flags = 0;
        stride *= dims[d].extent;
    }
    return b;
}

static void test_arguments(void) {
    /* x : f32[M, K], g : f32[K, 4], y : f32[M] */
    const char *const names[] = {"K", "M"};
    const tessel_dim xd[] = {{0, 1}, {0, 0}}, gd[] = {{0, 0}, {4, -1}}, yd[] = {{0, 1}};
    const tessel_value values[] = {{"x", "f32[M, K]", halide_type_float, 32, 4, 2, xd, 0, NULL},
                                   {"g", "f32[K, 4]", halide_type_float, 32, 4, 2, gd, 0, NULL},
                                   {"y", "f32[M]", halide_type_float, 32, 4, 1, yd, 0, NULL}};
    static float data[4096];
    halide_dimension_t dx[2], dg[2], dy[1];
    const int ex[] = {3, 9}, eg[] = {9, 4}, ey[] = {3};
    halide_buffer_t x = buffer(2, ex, dx, data), g = buffer(2, eg, dg, data), y = buffer(1, ey, dy, data);
    halide_buffer_t *buffers[] = {&x, &g, &y};
    int64_t symbols[2] = {-1, -1};
    char error[1024] = "";
    CHECK(tessel_check_arguments(values, NULL, 3, buffers, names, symbols, error, sizeof error) == 0);
    CHECK(symbols[0] == 9 && symbols[1] == 3);

    symbols[0] = symbols[1] = -1;
    dg[1].extent = 8; /* g's K axis is 8 where x bound K = 9 */
    CHECK(tessel_check_arguments(values, NULL, 3, buffers, names, symbols, error, sizeof error) == 1);
    CHECK_TEXT(error, "argument g: extent 8 in axis 0 (K), but K = 9 from an earlier argument; the graph declares f32[K, 4]");
    dg[1].extent = 9;

    symbols[0] = symbols[1] = -1;
    dg[0].extent = 5;
    CHECK(tessel_check_arguments(values, NULL, 3, buffers, names, symbols, error, sizeof error) == 1);
    CHECK_TEXT(error, "argument g: extent 5 in axis 1, the graph declares f32[K, 4]");
    dg[0].extent = 4;

    symbols[0] = symbols[1] = -1;
    buffers[0] = NULL;
    CHECK(tessel_check_arguments(values, NULL, 3, buffers, names, symbols, error, sizeof error) == 1);
    CHECK_TEXT(error, "argument x (f32[M, K]) is null or has no host memory");
    buffers[0] = &x;

    symbols[0] = symbols[1] = -1;
    y.dimensions = 2;
    CHECK(tessel_check_arguments(values, NULL, 3, buffers, names, symbols, error, sizeof error) == 1);
    CHECK_TEXT(error, "argument y has 2 dimensions; f32[M] needs 1");
    y.dimensions = 1;

    symbols[0] = symbols[1] = -1;
    x.type.bits = 16;
    CHECK(tessel_check_arguments(values, NULL, 3, buffers, names, symbols, error, sizeof error) == 1);
    CHECK_TEXT(error, "argument x is not f32 (f32[M, K])");
    x.type.bits = 32;

    symbols[0] = symbols[1] = -1;
    dx[0].extent = 0;
    CHECK(tessel_check_arguments(values, NULL, 3, buffers, names, symbols, error, sizeof error) == 1);
    CHECK_TEXT(error, "argument x: extent 0 in axis 1");
    dx[0].extent = 9;

    /* A wrong stride is reported after every extent is checked. */
    symbols[0] = symbols[1] = -1;
    dx[1].stride = 10;
    CHECK(tessel_check_arguments(values, NULL, 3, buffers, names, symbols, error, sizeof error) == 1);
    CHECK_TEXT(error, "argument x is not dense (dimension 1 has stride 10, expected 9)");
    dx[1].stride = 9;

    /* A min other than 0 (the kernels index every buffer from 0), after the extents and strides. */
    symbols[0] = symbols[1] = -1;
    dx[0].min = -3;
    CHECK(tessel_check_arguments(values, NULL, 3, buffers, names, symbols, error, sizeof error) == 1);
    CHECK_TEXT(error, "argument x: dimension 0 has min -3; a library's buffers are indexed from 0");
    dx[0].min = 0;

    /* Only g, through its slot (the prepare entry checks the weights alone). */
    const int weights[] = {1};
    symbols[0] = symbols[1] = -1;
    CHECK(tessel_check_arguments(values, weights, 1, buffers, names, symbols, error, sizeof error) == 0);
    CHECK(symbols[0] == 9 && symbols[1] == -1);

    /* Sizes: bf16 [M, K] in panels of 16 along K: M x ceil(K / 16) x 16 x 2 bytes, to 64. */
    const tessel_physical_dim panels[] = {{1, TESSEL_AXIS_PANELS, 16}, {0, TESSEL_AXIS_WHOLE, 0}, {1, TESSEL_AXIS_IN_PANEL, 16}};
    const tessel_value packed = {"w", "bf16[M, K]", halide_type_bfloat, 16, 2, 2, xd, 3, panels};
    const int64_t bound[] = {37, 3};
    int64_t extents[3], bytes = 0;
    tessel_physical_extents(&packed, bound, extents);
    CHECK(extents[0] == 3 && extents[1] == 3 && extents[2] == 16);
    CHECK(tessel_value_bytes(&packed, bound, &bytes) == 0);
    CHECK(bytes == 320); /* 288 rounded up */
    const tessel_physical_dim whole[] = {{0, TESSEL_AXIS_WHOLE, 0}, {1, TESSEL_AXIS_WHOLE, 0}};
    const tessel_value dense = {"x", "f32[M, K]", halide_type_float, 32, 4, 2, xd, 2, whole};
    CHECK(tessel_value_bytes(&dense, bound, &bytes) == 0);
    CHECK(bytes == 448); /* 3 x 37 x 4 = 444, rounded up */
    const int64_t huge[] = {INT64_MAX / 2, 4};
    CHECK(tessel_value_bytes(&dense, huge, &bytes) == 1);
    /* A malformed table (panels of width 0) is refused, not divided by. */
    const tessel_physical_dim empty_panels[] = {
        {1, TESSEL_AXIS_PANELS, 0}, {0, TESSEL_AXIS_WHOLE, 0}, {1, TESSEL_AXIS_IN_PANEL, 0}};
    const tessel_value malformed = {"w", "bf16[M, K]", halide_type_bfloat, 16, 2, 2, xd, 3, empty_panels};
    tessel_physical_extents(&malformed, bound, extents);
    CHECK(extents[0] == 0);
    CHECK(tessel_value_bytes(&malformed, bound, &bytes) == 1);
}

static void test_profile(void) {
    const char *const names[] = {"K", "M"};
    int64_t shapes[2 * 2];
    long long calls[2];
    tessel_profile p = {"mlp", 2, names, 2, 0, shapes, calls, 0};
    const int64_t a[] = {37, 1}, b[] = {37, 4}, c[] = {8, 8};
    tessel_profile_count(&p, a);
    tessel_profile_count(&p, b);
    tessel_profile_count(&p, a);
    tessel_profile_count(&p, c); /* past capacity: not counted */
    char text[256] = "";
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f) return;
    tessel_profile_write(&p, f);
    rewind(f);
    const size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    CHECK_TEXT(text, "# calls per shape of mlp (TESSEL_LIB_PROFILE)\nK=37 M=1 calls=2\nK=37 M=4 calls=1\n");
}

static const char *reported;
static int reports(const char *feature) { return strstr(reported, feature) != NULL; }

static void test_targets(void) {
    const char *const avx512[] = {"avx512f", "avx2"}, *const avx2[] = {"avx2", "fma"};
    const tessel_target targets[] = {{"avx512", "x86-64-linux-avx512", 2, avx512},
                                     {"avx2", "x86-64-linux-avx2", 2, avx2},
                                     {"x86_64", "x86-64-linux", 0, NULL}};
    reported = "avx2 fma avx512f";
    CHECK(tessel_pick_target(targets, 3, NULL, reports) == 0);
    CHECK(tessel_pick_target(targets, 3, "", reports) == 0);
    CHECK(tessel_pick_target(targets, 3, "avx2", reports) == 1);
    CHECK(tessel_pick_target(targets, 3, "x86_64", reports) == 2);
    reported = "avx2";
    CHECK(tessel_pick_target(targets, 3, NULL, reports) == 2);
    CHECK(tessel_pick_target(targets, 2, NULL, reports) == -1);
    CHECK(tessel_pick_target(targets, 3, "avx512", reports) == -1);
    CHECK(tessel_cpu_supports("no-such-feature") == 0);
    CHECK(tessel_pick_target(targets, 3, "x86_64", tessel_cpu_supports) == 2);
}

int main(void) {
    test_packer();
    test_guards();
    test_arguments();
    test_profile();
    test_targets();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    else
        printf("runtime: all checks passed\n");
    return failures ? 1 : 0;
}
