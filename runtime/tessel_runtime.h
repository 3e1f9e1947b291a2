/* Tessel's library runtime: the C that every library `tessel lib` writes runs on, and the one
 * place the packing and guard rules are written (dsl/analysis/BufferAssignment and
 * schedules/Schedule's Guard::holds call the functions below).
 *
 * Plain C11 with no global state: a generated library (driver/KernelLibrary.h) holds its tables
 * (arguments, values, memory plans, groups, guards, variants, targets) as constant data, keeps
 * its mutable state (the chosen target, the profile histogram, per-thread messages) itself, and
 * calls these functions from thin entry points. Every function is a weak symbol, so that an
 * application linking two generated libraries (each carrying a copy) links one copy.
 *
 * Concepts, one source file each:
 *   tessel_arguments.c  argument checks and the sizes of values as expressions of the symbols
 *   tessel_guard.c      guard evaluation and the first variant whose guards hold
 *   tessel_pack.c       best-fit arena packing over a conflict table, three orders
 *   tessel_cpu.c        the first target whose CPU features the machine reports
 *   tessel_profile.c    the TESSEL_LIB_PROFILE histogram in the shape-profile text form
 *   tessel_library.c    a library call: checks, layout, dispatch of every group
 *   tessel_program.c    elementwise programs: a group run by interpreting its ops (no code
 *                       generated for it), with the reference interpreter's numerics
 *   tessel_program_call.c  a library's entry into it, reporting through halide_error
 */
#ifndef TESSEL_RUNTIME_H
#define TESSEL_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct halide_buffer_t;
struct halide_dimension_t;

/* ---- sizes (tessel_arguments.c) ---- */

/** One logical extent: a static size (symbol < 0) or the size bound to symbols[symbol]. */
typedef struct tessel_dim {
    int64_t size;
    int symbol;
} tessel_dim;

/** A physical axis of a laid-out value (dsl/ir/Layout.h): a whole logical axis, the panel width,
 * or the number of panels (ceil(extent / width)). */
enum { TESSEL_AXIS_WHOLE = 0, TESSEL_AXIS_IN_PANEL = 1, TESSEL_AXIS_PANELS = 2 };
typedef struct tessel_physical_dim {
    int axis; /* index into the value's logical dims */
    int part; /* TESSEL_AXIS_* */
    int64_t width;
} tessel_physical_dim;

/** A tensor the library passes to kernels: an argument of an entry or an intermediate. */
typedef struct tessel_value {
    const char *name;      /* the C parameter name of an argument; the graph's name otherwise */
    const char *type_text; /* "f32[M, K]", for messages */
    int type_code, type_bits, element_bytes;
    int rank;               /* logical rank; a rank-0 tensor is a 1-D buffer of extent 1 */
    const tessel_dim *dims; /* outermost first */
    int physical_rank;
    const tessel_physical_dim *physical; /* outermost first */
} tessel_value;

/** The extent of a dim under the bound symbols. */
int64_t tessel_dim_extent(tessel_dim d, const int64_t *symbols);
/** v's physical extents, outermost first (physical_rank of them; 0 for panels of width below 1). */
void tessel_physical_extents(const tessel_value *v, const int64_t *symbols, int64_t *extents);
/** v's bytes rounded up to 64 into *bytes; 1 when they overflow int64 or a panel width is below 1, else 0. */
int tessel_value_bytes(const tessel_value *v, const int64_t *symbols, int64_t *bytes);

/** Checks the buffers of values[slots[i]] (i < count; slots NULL: 0..count-1; buffers indexed by slot): each non-null with host memory, of
 * max(1, rank) dimensions, of the value's element type, each extent equal to its static size or to the symbol it binds
 * (the first argument naming a symbol binds it: symbols[] holds -1 for unbound ones), then each
 * dense with every min 0. Returns 0, or 1 with the message (the argument, its extent and the graph's type) in
 * error. */
int tessel_check_arguments(const tessel_value *values, const int *slots, int count, struct halide_buffer_t *const *buffers,
                           const char *const *symbol_names, int64_t *symbols, char *error, size_t error_size);

/* ---- guards (tessel_guard.c) ---- */

/** A guard's operator: ==, <=, >=, and % (the extent divisible by the value). */
enum { TESSEL_GUARD_UNKNOWN = 0, TESSEL_GUARD_EQ = 1, TESSEL_GUARD_LE = 2, TESSEL_GUARD_GE = 3, TESSEL_GUARD_DIVISIBLE = 4 };
/** "==", "<=", ">=", "%" -> TESSEL_GUARD_*; anything else TESSEL_GUARD_UNKNOWN. */
int tessel_guard_op_from_text(const char *text);
/** Whether `extent op value` holds: 1 or 0 ("% 0" holds for no extent); -1 for an unknown operator. */
int tessel_guard_holds(int op, int64_t value, int64_t extent);

/** One guard of a variant: over extents[extent] of its group; extent < 0 names an extent the
 * group lacks, and such a guard never holds. */
typedef struct tessel_guard {
    int extent;
    int op;
    int64_t value;
} tessel_guard;
/** The first of `count` variants whose guards all hold (variant i has guard_counts[i] guards,
 * stored one variant after another in guards); count when none does; -1 on an unknown operator. */
int tessel_pick_variant(const tessel_guard *guards, const int *guard_counts, int count, const int64_t *extents);

/* ---- arena packing (tessel_pack.c) ---- */

enum { TESSEL_ALIGNMENT = 64, TESSEL_PACK_ORDERS = 3 };
/** Bytes of scratch tessel_pack and tessel_pack_order need for n allocations. */
#define TESSEL_PACK_SCRATCH_BYTES(n) ((size_t)((n) > 0 ? (n) : 1) * (2 * sizeof(int) + 4 * sizeof(int64_t)))

/** The allocations in order `which` (0: largest first, ties earlier first step; 1: largest
 * bytes x steps first; 2: earliest first step first, ties largest), each sort stable. */
void tessel_pack_order(int which, int n, const int64_t *bytes, const int *first_step, const int *last_step, int *order,
                       void *scratch);
/** Best fit in `order`: each allocation at the lowest offset of the smallest gap between placed
 * allocations that conflict with it (conflicts[i * n + j] != 0) that fits it, else on top of
 * them. Returns the peak. */
int64_t tessel_pack_in_order(int n, const int *order, const int64_t *bytes, const unsigned char *conflicts, int64_t *offsets,
                             void *scratch);
/** Packs in the three orders and keeps the lowest peak (ties: the earlier order); returns it.
 * Sizes should be multiples of TESSEL_ALIGNMENT, and then so are the offsets. */
int64_t tessel_pack(int n, const int64_t *bytes, const int *first_step, const int *last_step, const unsigned char *conflicts,
                    int64_t *offsets, void *scratch);

/* ---- CPU dispatch (tessel_cpu.c) ---- */

/** One compiled copy of the library's kernels. */
typedef struct tessel_target {
    const char *suffix;        /* "avx512", "avx2", "x86_64": its kernels' suffix and TESSEL_LIB_ISA's name */
    const char *halide_target; /* for messages */
    int feature_count;
    const char *const *features; /* __builtin_cpu_supports names: "avx2", "avx512f", ... */
} tessel_target;
/** Whether this CPU reports the feature (0 for a name the runtime does not know). */
int tessel_cpu_supports(const char *feature);
/** The first target whose features `supports` reports all of, and whose suffix is `only` when
 * `only` is set and not empty; -1 when none. */
int tessel_pick_target(const tessel_target *targets, int count, const char *only, int (*supports)(const char *feature));

/* ---- shape profile (tessel_profile.c) ---- */

/** Calls counted per binding of the library's symbols (TESSEL_LIB_PROFILE), in storage the
 * library owns: shapes[capacity * symbol_count], calls[capacity]. */
typedef struct tessel_profile {
    const char *library;
    int symbol_count;
    const char *const *symbol_names; /* sorted by name */
    int capacity, used;
    int64_t *shapes;
    long long *calls;
    int state; /* 0 undecided, 1 off, 2 on */
} tessel_profile;
/** Counts one call at `shape` (symbol_count sizes); a new shape past capacity is not counted. */
void tessel_profile_count(tessel_profile *p, const int64_t *shape);
/** Writes the histogram in the shape-profile text form (autoscheduler/SpecializationPlanner.h):
 * a comment line, then "M=1 N=8 calls=12" per shape. */
void tessel_profile_write(const tessel_profile *p, FILE *f);
/** Under p's lock: decides at the first call whether TESSEL_LIB_PROFILE is set (then `at_exit`,
 * which should write the profile, is registered with atexit) and counts the call when it is. */
void tessel_profile_record(tessel_profile *p, const int64_t *shape, void (*at_exit)(void));
/** Writes p to the file TESSEL_LIB_PROFILE names (nothing when it cannot be opened). */
void tessel_profile_write_to_env_file(const tessel_profile *p);

/* ---- a library call (tessel_library.c) ---- */

/** A memory plan (dsl/analysis/BufferAssignment.h): per allocation its live steps and the
 * values it holds (value_begin[a] .. value_begin[a + 1] in values), and which pairs conflict. */
typedef struct tessel_memory_plan {
    int allocation_count;
    const int *first_step, *last_step;
    const int *value_begin;         /* allocation_count + 1 entries */
    const int *values;              /* value slots */
    const unsigned char *conflicts; /* allocation_count^2 */
} tessel_memory_plan;

/** Where an entry places one intermediate: in the arena, in the prepared block, at another
 * buffer's host memory (an in-place result, a reshape view), or as another buffer with permuted
 * dimensions (a strided transpose view: dim d is source dim permutation[d]). */
enum { TESSEL_PLACE_ARENA = 0, TESSEL_PLACE_PREPARED = 1, TESSEL_PLACE_ALIAS = 2, TESSEL_PLACE_STRIDED = 3 };
typedef struct tessel_placement {
    int slot, kind;
    int index;              /* ARENA: allocation; PREPARED: position in the block; ALIAS, STRIDED: source slot */
    const int *permutation; /* STRIDED only */
} tessel_placement;

/** One variant of a group's kernel: its function (Halide's argv form), label and guards. */
typedef struct tessel_variant {
    int (*run)(void **args);
    const char *label;
} tessel_variant;

/** Which entry runs: the whole graph, the prepared groups alone, or the per-call groups over a
 * prepared block. */
enum { TESSEL_ENTRY_WHOLE = 0, TESSEL_ENTRY_PREPARE = 1, TESSEL_ENTRY_RUN_PREPARED = 2 };

/** A group for one target: its extents, its kernel's arguments (slots), its variants (the last
 * the fallback, with no guards) and whether it runs only in the prepare entry, or is a view
 * (nothing runs) in the whole entry's plan or in the kept plan. */
typedef struct tessel_group {
    const char *name;
    int prepared, view_in_whole, view_in_kept;
    int extent_count;
    const tessel_dim *extents;
    int argument_count;
    const int *arguments;
    int variant_count;
    const tessel_variant *variants;
    const int *guard_counts;
    const tessel_guard *guards;
    /* A cache write (update_tail) among its outputs: the kernel argument of the result (-1: none),
     * the cache's slot, the tensor axis and the positions written. The kernel writes only those
     * (a window of the result); the result's other bytes are the cache's: copied first unless the
     * caller passed one buffer for both, which is refused with tail_refusal when it is set (the
     * old cache is still read after the write). */
    int tail_argument, tail_cache, tail_axis;
    tessel_dim tail_count;
    const char *tail_refusal;
} tessel_group;

/** Everything a generated library knows, as data. Slots: the entry's arguments first (graph
 * inputs in program order, then outputs), then every intermediate any entry places. */
typedef struct tessel_library {
    const char *name;
    int symbol_count;
    const char *const *symbol_names; /* sorted */
    int slot_count, argument_count, max_rank;
    const tessel_value *values; /* per slot */
    int weight_count;
    const int *weights;                     /* argument slots of the weights, in argument order */
    const tessel_memory_plan *whole, *kept; /* kept: NULL without prepared groups */
    int prepared_count;
    const int *prepared; /* the prepared values' slots, in block order */
    int placement_count[3];
    const tessel_placement *placements[3]; /* per TESSEL_ENTRY_* */
    int target_count;
    const tessel_target *targets;
    const char *targets_text; /* "t1, t2", for messages */
    int group_count;
    const tessel_group *const *groups; /* per target, group_count each, in plan order */
} tessel_library;

/** A library's mutable state: the chosen target (-1 undecided) and its profile. */
typedef struct tessel_library_state {
    int target;
    tessel_profile profile;
    void (*write_profile_at_exit)(void);
} tessel_library_state;

/** Per-thread texts of the last call. */
typedef struct tessel_call_text {
    char error[1024];
    char variants[4096];
    char halide_message[1024];
} tessel_call_text;

/** Per-call storage, sized by the library (arrays of at least one element each). */
typedef struct tessel_call_frame {
    struct halide_buffer_t **slots;  /* slot_count */
    struct halide_buffer_t *buffers; /* slot_count */
    struct halide_dimension_t *dims; /* slot_count * max_rank */
    int64_t *symbols;                /* symbol_count */
    int64_t *bytes, *offsets;        /* the larger plan's allocation_count */
    int64_t *prepared_offsets;       /* prepared_count */
    void *pack_scratch;              /* TESSEL_PACK_SCRATCH_BYTES(allocations) */
    void **kernel_args;              /* the most arguments of any group */
} tessel_call_frame;

/** Runs `entry` over `arguments` (the entry's buffers: all slots below argument_count, or the
 * weights alone for TESSEL_ENTRY_PREPARE, in the weights' order). `prepared`/`prepared_bytes`:
 * the prepared block (PREPARE writes it, RUN_PREPARED reads it). A NULL workspace is allocated
 * for the call. Returns 0, 1 (bad argument), 2 (workspace or block), 3 (no target, a kernel
 * failed), with the message in text->error and the variants that ran in text->variants. */
int tessel_library_call(const tessel_library *lib, tessel_library_state *state, int entry,
                        struct halide_buffer_t *const *arguments, void *prepared, int64_t prepared_bytes, void *workspace,
                        int64_t workspace_bytes, tessel_call_frame *frame, tessel_call_text *text);
/** Workspace bytes the entry (WHOLE or RUN_PREPARED) needs for these buffers; -1 on a bad one. */
int64_t tessel_library_workspace_bytes(const tessel_library *lib, int entry, struct halide_buffer_t *const *arguments,
                                       tessel_call_frame *frame, tessel_call_text *text);
/** Bytes of the prepared block for these weights; -1 on a bad one. */
int64_t tessel_library_prepared_bytes(const tessel_library *lib, struct halide_buffer_t *const *weights, tessel_call_frame *frame,
                                      tessel_call_text *text);

/* ---- elementwise programs (tessel_program.c) ---- */

/** The ops of an elementwise program; each computes as the reference interpreter does
 * (dsl/interp/Interpreter.cpp: in double, rounded to f32), so a program's results are the
 * interpreter's bit for bit. Comparisons give 1.0f or 0.0f; WHERE picks `b` where `a` is
 * nonzero (NaN included). CONST sets every lane to the step's value. */
enum {
    TESSEL_PROGRAM_CONST = 0,
    TESSEL_PROGRAM_COPY,
    TESSEL_PROGRAM_ADD,
    TESSEL_PROGRAM_SUB,
    TESSEL_PROGRAM_MUL,
    TESSEL_PROGRAM_DIV,
    TESSEL_PROGRAM_MAX,
    TESSEL_PROGRAM_MIN,
    TESSEL_PROGRAM_LT,
    TESSEL_PROGRAM_LE,
    TESSEL_PROGRAM_GT,
    TESSEL_PROGRAM_GE,
    TESSEL_PROGRAM_EQ,
    TESSEL_PROGRAM_NE,
    TESSEL_PROGRAM_WHERE,
    TESSEL_PROGRAM_GELU,
    TESSEL_PROGRAM_GELU_TANH,
    TESSEL_PROGRAM_TANH,
    TESSEL_PROGRAM_EXP,
    TESSEL_PROGRAM_RELU,
    TESSEL_PROGRAM_NEG,
    TESSEL_PROGRAM_ABS,
    TESSEL_PROGRAM_SQRT,
    TESSEL_PROGRAM_RSQRT,
    TESSEL_PROGRAM_LOG,
    TESSEL_PROGRAM_SIGMOID,
    TESSEL_PROGRAM_SILU,
    TESSEL_PROGRAM_SIN,
    TESSEL_PROGRAM_COS,
    TESSEL_PROGRAM_OP_COUNT
};

/** The most registers a program may use (a check, not a limit programs meet: one per live value). */
#define TESSEL_PROGRAM_MAX_REGISTERS (1 << 20)

/** One step: register `result` = op(registers a, b, c) (unused operands are -1), or `value`
 * for CONST. */
typedef struct tessel_program_step {
    int32_t op, result, a, b, c;
    float value;
} tessel_program_step;

/** An elementwise group as a register program over f32. Registers 0 .. input_count-1 hold the
 * inputs (arguments 0 .. input_count-1, broadcast to the outputs' shape); the outputs
 * (arguments input_count ..) are read from output_registers after the last step. Every output
 * has the same shape, the iteration domain; an input's dimension is that extent or 1, and an
 * input may have fewer dimensions (numpy broadcasting: Halide's dim 0 is the innermost axis). */
typedef struct tessel_program {
    const char *name;
    int32_t input_count, output_count, register_count, step_count;
    const tessel_program_step *steps;
    const int32_t *output_registers;
} tessel_program;

/** Runs `program` over `buffers` (inputs, then outputs: f32 halide_buffer_t with host memory,
 * any strides). Returns 0, or -1 with a message naming the argument and both shapes in
 * `error` (at most error_bytes, NUL-terminated). Single-threaded; an output may be an input's
 * storage (an in-place update): each element is read before it is written. */
int tessel_program_run(const tessel_program *program, struct halide_buffer_t *const *buffers, char *error, size_t error_bytes);
/** tessel_program_run for a generated library's functions (tessel_program_call.c): a failure is
 * reported through halide_error and returned as halide_error_code_generic_error (-1). */
int tessel_program_call(const tessel_program *program, struct halide_buffer_t *const *buffers);

#ifdef __cplusplus
}
#endif

#endif
