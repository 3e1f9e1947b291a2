/* Elementwise programs: a fusion group of elementwise ops run by interpreting its steps over
 * chunks of its iteration domain, for groups Tessel chose not to compile (the compile budget,
 * compiler/Plan.h). One definition for both roads: Tessel links it for `tessel run`, and
 * generated libraries carry it. The numerics are the reference interpreter's (each op in double,
 * rounded to f32), so a program's results are the interpreter's bit for bit. */
#include "tessel_runtime.h"

#include <HalideRuntime.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TESSEL_RT_API __attribute__((weak))

/* Elements per chunk: every register holds one chunk of its value. */
enum { CHUNK = 64, STACK_REGISTERS = 64 };

static const double kSqrtHalf = 0.70710678118654752440;      /* 1 / sqrt(2) */
static const double kSqrtTwoOverPi = 0.79788456080286535588; /* sqrt(2 / pi) */

static float nan_max(float a, float b) {
    if (isnan(a) || isnan(b)) return NAN;
    if (a == b) return signbit(a) ? b : a; /* max(-0, +0) = +0 */
    return a > b ? a : b;
}

static float nan_min(float a, float b) {
    if (isnan(a) || isnan(b)) return NAN;
    if (a == b) return signbit(a) ? a : b; /* min(-0, +0) = -0 */
    return a < b ? a : b;
}

/* The interpreter's unary formulas (unary_formula), in double. */
static double unary(int op, double x) {
    switch (op) {
    case TESSEL_PROGRAM_GELU: return 0.5 * x * erfc(-x * kSqrtHalf);
    case TESSEL_PROGRAM_GELU_TANH: return x / (1.0 + exp(-2.0 * kSqrtTwoOverPi * (x + 0.044715 * x * x * x)));
    case TESSEL_PROGRAM_TANH: return tanh(x);
    case TESSEL_PROGRAM_EXP: return exp(x);
    case TESSEL_PROGRAM_RELU: return isnan(x) ? x : (x > 0 ? x : 0.0);
    case TESSEL_PROGRAM_NEG: return -x;
    case TESSEL_PROGRAM_ABS: return fabs(x);
    case TESSEL_PROGRAM_SQRT: return sqrt(x);
    case TESSEL_PROGRAM_RSQRT: return 1.0 / sqrt(x);
    case TESSEL_PROGRAM_LOG: return log(x);
    case TESSEL_PROGRAM_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case TESSEL_PROGRAM_SILU: return x / (1.0 + exp(-x));
    case TESSEL_PROGRAM_SIN: return sin(x);
    default: return cos(x);
    }
}

/* One step over n lanes. +, -, *, / in f32 are the double results rounded (double holds them
 * exactly enough that rounding twice never differs). */
static void run_step(const tessel_program_step *s, float (*reg)[CHUNK], int n) {
    float *r = reg[s->result];
    const float *a = s->a >= 0 ? reg[s->a] : NULL, *b = s->b >= 0 ? reg[s->b] : NULL, *c = s->c >= 0 ? reg[s->c] : NULL;
    int i;
    switch (s->op) {
    case TESSEL_PROGRAM_CONST:
        for (i = 0; i < n; i++) r[i] = s->value;
        break;
    case TESSEL_PROGRAM_COPY: memmove(r, a, (size_t)n * sizeof(float)); break;
    case TESSEL_PROGRAM_ADD:
        for (i = 0; i < n; i++) r[i] = a[i] + b[i];
        break;
    case TESSEL_PROGRAM_SUB:
        for (i = 0; i < n; i++) r[i] = a[i] - b[i];
        break;
    case TESSEL_PROGRAM_MUL:
        for (i = 0; i < n; i++) r[i] = a[i] * b[i];
        break;
    case TESSEL_PROGRAM_DIV:
        for (i = 0; i < n; i++) r[i] = a[i] / b[i];
        break;
    case TESSEL_PROGRAM_MAX:
        for (i = 0; i < n; i++) r[i] = nan_max(a[i], b[i]);
        break;
    case TESSEL_PROGRAM_MIN:
        for (i = 0; i < n; i++) r[i] = nan_min(a[i], b[i]);
        break;
    case TESSEL_PROGRAM_LT:
        for (i = 0; i < n; i++) r[i] = a[i] < b[i] ? 1.0f : 0.0f;
        break;
    case TESSEL_PROGRAM_LE:
        for (i = 0; i < n; i++) r[i] = a[i] <= b[i] ? 1.0f : 0.0f;
        break;
    case TESSEL_PROGRAM_GT:
        for (i = 0; i < n; i++) r[i] = a[i] > b[i] ? 1.0f : 0.0f;
        break;
    case TESSEL_PROGRAM_GE:
        for (i = 0; i < n; i++) r[i] = a[i] >= b[i] ? 1.0f : 0.0f;
        break;
    case TESSEL_PROGRAM_EQ:
        for (i = 0; i < n; i++) r[i] = a[i] == b[i] ? 1.0f : 0.0f;
        break;
    case TESSEL_PROGRAM_NE:
        for (i = 0; i < n; i++) r[i] = a[i] != b[i] ? 1.0f : 0.0f;
        break;
    case TESSEL_PROGRAM_WHERE:
        for (i = 0; i < n; i++) r[i] = a[i] != 0.0f ? b[i] : c[i]; /* NaN is nonzero */
        break;
    default:
        for (i = 0; i < n; i++) r[i] = (float)unary(s->op, (double)a[i]);
        break;
    }
}

static const char *name_of(const tessel_program *p) { return p->name ? p->name : "elementwise program"; }

static void describe(const struct halide_buffer_t *b, char *text, size_t bytes) {
    size_t used = 0;
    int d;
    used += (size_t)snprintf(text, bytes, "[");
    for (d = b->dimensions - 1; d >= 0 && used < bytes; d--)
        used += (size_t)snprintf(text + used, bytes - used, "%s%d", d == b->dimensions - 1 ? "" : ", ", b->dim[d].extent);
    if (used < bytes) snprintf(text + used, bytes - used, "]");
}

static int fail_shape(const tessel_program *p, int argument, const struct halide_buffer_t *b,
                      const struct halide_buffer_t *domain, const char *what, char *error, size_t error_bytes) {
    char got[160], want[160];
    describe(b, got, sizeof got);
    describe(domain, want, sizeof want);
    snprintf(error, error_bytes, "%s: argument %d has extents %s (Halide order, innermost first), %s %s", name_of(p), argument,
             got, what, want);
    return -1;
}

/* Checks the program itself: ops known, registers in range, operands present where the op
 * reads them (a library's tables are data; a corrupt one is an error, not a stray write). */
static int check_program(const tessel_program *p, char *error, size_t error_bytes) {
    int s, o, status = 0;
    unsigned char *written;
    if (p->input_count < 0 || p->output_count < 1 || p->step_count < 0 || p->register_count < p->input_count ||
        p->register_count > TESSEL_PROGRAM_MAX_REGISTERS || (p->step_count > 0 && !p->steps) || !p->output_registers) {
        snprintf(error, error_bytes, "%s: a malformed program (%d inputs, %d outputs, %d registers, %d steps)", name_of(p),
                 p->input_count, p->output_count, p->register_count, p->step_count);
        return -1;
    }
    /* Which registers hold a value: the inputs, then each step's result; nothing is read before. */
    written = (unsigned char *)calloc((size_t)p->register_count + 1, 1);
    if (!written) {
        snprintf(error, error_bytes, "%s: out of memory checking %d registers", name_of(p), p->register_count);
        return -1;
    }
    for (o = 0; o < p->input_count; o++) written[o] = 1;
    for (s = 0; s < p->step_count && !status; s++) {
        const tessel_program_step *t = &p->steps[s];
        const int operands = t->op == TESSEL_PROGRAM_CONST                               ? 0
                             : t->op == TESSEL_PROGRAM_WHERE                             ? 3
                             : t->op >= TESSEL_PROGRAM_ADD && t->op <= TESSEL_PROGRAM_NE ? 2
                                                                                         : 1;
        const int32_t used[3] = {t->a, t->b, t->c};
        int bad = t->op < 0 || t->op >= TESSEL_PROGRAM_OP_COUNT || t->result < 0 || t->result >= p->register_count;
        for (o = 0; o < operands; o++) bad = bad || used[o] < 0 || used[o] >= p->register_count || !written[used[o]];
        if (bad) {
            snprintf(error, error_bytes,
                     "%s: step %d is malformed (op %d, result r%d, operands r%d r%d r%d of %d registers, each written before)",
                     name_of(p), s, t->op, t->result, t->a, t->b, t->c, p->register_count);
            status = -1;
        } else {
            written[t->result] = 1;
        }
    }
    for (o = 0; o < p->output_count && !status; o++)
        if (p->output_registers[o] < 0 || p->output_registers[o] >= p->register_count || !written[p->output_registers[o]]) {
            snprintf(error, error_bytes, "%s: output %d reads register %d of %d, which no step writes", name_of(p), o,
                     p->output_registers[o], p->register_count);
            status = -1;
        }
    free(written);
    return status;
}

/* Checks every buffer; fills per-argument strides over the domain's dims (0 where broadcast). */
static int check(const tessel_program *p, struct halide_buffer_t *const *buffers, int64_t *strides, int rank, char *error,
                 size_t error_bytes) {
    const int count = p->input_count + p->output_count;
    const struct halide_buffer_t *domain = buffers[p->input_count];
    int a, d;
    for (a = 0; a < count; a++) {
        const struct halide_buffer_t *b = buffers[a];
        if (!b || !b->host) {
            snprintf(error, error_bytes, "%s: argument %d is %s", name_of(p), a, b ? "a buffer without host memory" : "null");
            return -1;
        }
        if (b->type.code != halide_type_float || b->type.bits != 32 || b->type.lanes != 1) {
            snprintf(error, error_bytes, "%s: argument %d is not a float32 buffer (type code %d, %d bits)", name_of(p), a,
                     b->type.code, b->type.bits);
            return -1;
        }
        if (b->dimensions > rank || (a >= p->input_count && b->dimensions != rank))
            return fail_shape(p, a, b, domain,
                              a >= p->input_count ? "the outputs' shape is" : "more dimensions than the outputs'", error,
                              error_bytes);
        if (!b->dim && b->dimensions > 0) {
            snprintf(error, error_bytes, "%s: argument %d has %d dimensions and no dimension array", name_of(p), a,
                     b->dimensions);
            return -1;
        }
        for (d = 0; d < rank; d++) {
            const int extent = d < b->dimensions ? b->dim[d].extent : 1;
            if (extent < 0) {
                snprintf(error, error_bytes, "%s: argument %d has a negative extent (%d) in dimension %d", name_of(p), a, extent,
                         d);
                return -1;
            }
            if (extent != domain->dim[d].extent && !(a < p->input_count && extent == 1))
                return fail_shape(p, a, b, domain,
                                  a >= p->input_count ? "and the first output has" : "which do not broadcast to the outputs'",
                                  error, error_bytes);
            strides[a * rank + d] = d < b->dimensions && extent == domain->dim[d].extent ? b->dim[d].stride : 0;
        }
    }
    return 0;
}

TESSEL_RT_API int tessel_program_run(const tessel_program *p, struct halide_buffer_t *const *buffers, char *error,
                                     size_t error_bytes) {
    const struct halide_buffer_t *domain;
    float stack_registers[STACK_REGISTERS][CHUNK];
    float(*reg)[CHUNK] = stack_registers;
    int64_t stack_strides[16 * 8], *strides = stack_strides, stack_base[16], *base = stack_base, rows = 1, row, position[8];
    int count, rank, a, d, status = 0;
    if (!p || !buffers) {
        snprintf(error, error_bytes, "elementwise program: %s is null", p ? "the buffer array" : "the program");
        return -1;
    }
    if (check_program(p, error, error_bytes)) return -1;
    count = p->input_count + p->output_count;
    domain = buffers[p->input_count];
    if (!domain) {
        snprintf(error, error_bytes, "%s: argument %d is null", name_of(p), p->input_count);
        return -1;
    }
    rank = domain->dimensions;
    if (rank < 1 || rank > 8) {
        snprintf(error, error_bytes, "%s: outputs of %d dimensions (1 to 8 are supported)", name_of(p), rank);
        return -1;
    }
    if (count > 16) {
        strides = (int64_t *)malloc(sizeof(int64_t) * (size_t)count * 8);
        base = (int64_t *)malloc(sizeof(int64_t) * (size_t)count);
    }
    if (p->register_count > STACK_REGISTERS) reg = (float(*)[CHUNK])malloc(sizeof(float) * CHUNK * (size_t)p->register_count);
    if (!strides || !base || !reg) {
        snprintf(error, error_bytes, "%s: out of memory for %d registers", name_of(p), p->register_count);
        status = -1;
        goto done;
    }
    if (check(p, buffers, strides, rank, error, error_bytes)) {
        status = -1;
        goto done;
    }
    for (d = 1; d < rank; d++) rows *= domain->dim[d].extent;
    memset(position, 0, sizeof position);
    for (row = 0; row < rows; row++) {
        const int64_t width = domain->dim[0].extent;
        int64_t x;
        /* Each argument's element offset at the start of this row. */
        for (a = 0; a < count; a++) {
            base[a] = 0;
            for (d = 1; d < rank; d++) base[a] += position[d] * strides[a * rank + d];
        }
        for (x = 0; x < width; x += CHUNK) {
            const int n = (int)(width - x < CHUNK ? width - x : CHUNK);
            int i, s;
            for (a = 0; a < p->input_count; a++) {
                const float *in = (const float *)buffers[a]->host + base[a];
                const int64_t stride = strides[a * rank];
                for (i = 0; i < n; i++) reg[a][i] = in[(x + i) * stride];
            }
            for (s = 0; s < p->step_count; s++) run_step(&p->steps[s], reg, n);
            for (a = 0; a < p->output_count; a++) {
                const int arg = p->input_count + a;
                float *out = (float *)buffers[arg]->host + base[arg];
                const int64_t stride = strides[arg * rank];
                for (i = 0; i < n; i++) out[(x + i) * stride] = reg[p->output_registers[a]][i];
            }
        }
        for (d = 1; d < rank; d++) { /* next row: an odometer over dims 1 .. rank-1 */
            if (++position[d] < domain->dim[d].extent) break;
            position[d] = 0;
        }
    }
done:
    if (strides != stack_strides) free(strides);
    if (base != stack_base) free(base);
    if (reg != stack_registers) free(reg);
    return status;
}
