/* A library call: walks a generated library's tables (tessel_library) for one entry. It checks
 * the caller's buffers, sizes every allocation from the bound symbols and packs them
 * (tessel_pack, over the plan's conflict table), lays out the prepared block, describes every
 * intermediate, picks the target once, and runs each group's first variant whose guards hold,
 * in plan order. Halide's error handler and parallel loop are installed by the caller (the
 * generated entry), which owns the Halide runtime. */
#include "tessel_runtime.h"

#include "HalideRuntime.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define TESSEL_RT_API __attribute__((weak))

static int fail(tessel_call_text *t, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->error, sizeof t->error, fmt, ap);
    va_end(ap);
    return code;
}

static void note_variant(tessel_call_text *t, const char *group, const char *variant, const char *suffix) {
    const size_t used = strlen(t->variants);
    if (suffix)
        snprintf(t->variants + used, sizeof t->variants - used, "%s=%s [%s]; ", group, variant, suffix);
    else
        snprintf(t->variants + used, sizeof t->variants - used, "%s=%s; ", group, variant);
}

/* Every allocation's bytes (the largest of its values') and offset; the peak into *peak. */
static int plan_arena(const tessel_library *lib, const tessel_memory_plan *plan, tessel_call_frame *f, tessel_call_text *t,
                      int64_t *peak) {
    for (int a = 0; a < plan->allocation_count; a++) {
        f->bytes[a] = 0;
        for (int k = plan->value_begin[a]; k < plan->value_begin[a + 1]; k++) {
            int64_t b = 0;
            if (tessel_value_bytes(&lib->values[plan->values[k]], f->symbols, &b)) return fail(t, 1, "the sizes overflow int64");
            if (b > f->bytes[a]) f->bytes[a] = b;
        }
    }
    *peak = tessel_pack(plan->allocation_count, f->bytes, plan->first_step, plan->last_step, plan->conflicts, f->offsets,
                        f->pack_scratch);
    return 0;
}

/* The prepared values one after another in the block (their sizes follow from the weights). */
static int plan_prepared(const tessel_library *lib, tessel_call_frame *f, tessel_call_text *t, int64_t *total) {
    *total = 0;
    for (int i = 0; i < lib->prepared_count; i++) {
        int64_t b = 0;
        if (tessel_value_bytes(&lib->values[lib->prepared[i]], f->symbols, &b) || *total > INT64_MAX - b)
            return fail(t, 1, "the sizes overflow int64");
        f->prepared_offsets[i] = *total;
        *total += b;
    }
    return 0;
}

/* Binds the entry's buffers to their slots, checks them and plans: *peak (the arena, WHOLE and
 * RUN_PREPARED) and *prepared_total (the block, PREPARE and RUN_PREPARED). */
static int check_and_plan(const tessel_library *lib, int entry, struct halide_buffer_t *const *arguments, tessel_call_frame *f,
                          tessel_call_text *t, int64_t *peak, int64_t *prepared_total) {
    for (int s = 0; s < lib->symbol_count; s++) f->symbols[s] = -1;
    for (int s = 0; s < lib->slot_count; s++) f->slots[s] = NULL;
    *peak = *prepared_total = 0;
    if (entry == TESSEL_ENTRY_PREPARE) {
        for (int i = 0; i < lib->weight_count; i++) f->slots[lib->weights[i]] = arguments[i];
    } else {
        for (int i = 0; i < lib->argument_count; i++) f->slots[i] = arguments[i];
        if (tessel_check_arguments(lib->values, NULL, lib->argument_count, f->slots, lib->symbol_names, f->symbols, t->error,
                                   sizeof t->error))
            return 1;
        if (plan_arena(lib, entry == TESSEL_ENTRY_WHOLE ? lib->whole : lib->kept, f, t, peak)) return 1;
    }
    if (entry != TESSEL_ENTRY_WHOLE) {
        if (tessel_check_arguments(lib->values, lib->weights, lib->weight_count, f->slots, lib->symbol_names, f->symbols,
                                   t->error, sizeof t->error))
            return 1;
        if (plan_prepared(lib, f, t, prepared_total)) return 1;
    }
    return 0;
}

/* A dense descriptor of value `v` at `host` (extents innermost first, in the value's storage type). */
static void describe_dense(const tessel_value *v, halide_buffer_t *b, halide_dimension_t *dims, const int64_t *symbols,
                           void *host) {
    int64_t extents[64];
    tessel_physical_extents(v, symbols, extents);
    const int rank = v->physical_rank > 1 ? v->physical_rank : 1;
    memset(b, 0, sizeof *b);
    b->type.code = (halide_type_code_t)v->type_code;
    b->type.bits = (uint8_t)v->type_bits;
    b->type.lanes = 1;
    b->dimensions = rank;
    b->dim = dims;
    b->host = (uint8_t *)host;
    int64_t stride = 1;
    for (int d = 0; d < rank; d++) {
        const int64_t e = v->physical_rank ? extents[v->physical_rank - 1 - d] : 1;
        dims[d].min = 0;
        dims[d].extent = (int32_t)e;
        dims[d].stride = (int32_t)stride;
        dims[d].flags = 0;
        stride *= e;
    }
}

static void place_values(const tessel_library *lib, int entry, tessel_call_frame *f, uint8_t *arena, uint8_t *block) {
    for (int i = 0; i < lib->placement_count[entry]; i++) {
        const tessel_placement *p = &lib->placements[entry][i];
        const tessel_value *v = &lib->values[p->slot];
        halide_buffer_t *b = &f->buffers[p->slot];
        halide_dimension_t *dims = &f->dims[(size_t)p->slot * (size_t)lib->max_rank];
        if (p->kind == TESSEL_PLACE_STRIDED) {
            const halide_buffer_t *src = f->slots[p->index];
            *b = *src;
            b->dim = dims;
            for (int d = 0; d < v->rank; d++) dims[d] = src->dim[p->permutation[d]];
        } else {
            void *host = p->kind == TESSEL_PLACE_ARENA      ? arena + f->offsets[p->index]
                         : p->kind == TESSEL_PLACE_PREPARED ? block + f->prepared_offsets[p->index]
                                                            : f->slots[p->index]->host;
            describe_dense(v, b, dims, f->symbols, host);
        }
        f->slots[p->slot] = b;
    }
}

/* The cache write of `grp`: its result holds the cache (copied unless the caller passed one buffer
 * for both) and *window describes the positions its kernel writes, re-based at 0. */
static int tail_window(const tessel_group *grp, tessel_call_frame *f, tessel_call_text *t, halide_buffer_t *window,
                       halide_dimension_t *dims) {
    const halide_buffer_t *result = f->slots[grp->arguments[grp->tail_argument]], *cache = f->slots[grp->tail_cache];
    if (result->dimensions > 64) return fail(t, 1, "kernel %s: more than 64 dimensions", grp->name);
    if (result->host == cache->host) {
        if (grp->tail_refusal)
            return fail(t, 1, "kernel %s: the cache and the updated cache are one buffer, but %s", grp->name, grp->tail_refusal);
    } else {
        int64_t bytes = (result->type.bits + 7) / 8;
        for (int d = 0; d < result->dimensions; d++) bytes *= result->dim[d].extent;
        memcpy(result->host, cache->host, (size_t)bytes);
    }
    *window = *result;
    window->dim = dims;
    for (int d = 0; d < result->dimensions; d++) dims[d] = result->dim[d];
    const int d = result->dimensions - 1 - grp->tail_axis;
    const int64_t count = tessel_dim_extent(grp->tail_count, f->symbols);
    window->host += (int64_t)(dims[d].extent - count) * dims[d].stride * ((result->type.bits + 7) / 8);
    dims[d].extent = (int32_t)count;
    dims[d].min = 0;
    return 0;
}

/* Runs the groups `entry` runs (the prepared ones, the per-call ones, or all) for target `t`. */
static int run_groups(const tessel_library *lib, int entry, int target, tessel_call_frame *f, tessel_call_text *t) {
    const tessel_group *groups = lib->groups[target];
    const char *suffix = lib->targets[target].suffix;
    for (int g = 0; g < lib->group_count; g++) {
        const tessel_group *grp = &groups[g];
        if ((entry == TESSEL_ENTRY_PREPARE && !grp->prepared) || (entry == TESSEL_ENTRY_RUN_PREPARED && grp->prepared)) continue;
        if (entry == TESSEL_ENTRY_WHOLE ? grp->view_in_whole : grp->view_in_kept) {
            note_variant(t, grp->name, "view", NULL);
            continue;
        }
        int64_t extents[64];
        for (int e = 0; e < grp->extent_count && e < 64; e++) extents[e] = tessel_dim_extent(grp->extents[e], f->symbols);
        const int v = tessel_pick_variant(grp->guards, grp->guard_counts, grp->variant_count, extents);
        if (v < 0 || v >= grp->variant_count)
            return fail(t, 3, "kernel %s (%s): no variant's guards can be evaluated", grp->name, suffix);
        for (int a = 0; a < grp->argument_count; a++) f->kernel_args[a] = f->slots[grp->arguments[a]];
        halide_buffer_t window;
        halide_dimension_t window_dims[64];
        if (grp->tail_argument >= 0) {
            const int rc = tail_window(grp, f, t, &window, window_dims);
            if (rc) return rc;
            f->kernel_args[grp->tail_argument] = &window;
        }
        const int rc = grp->variants[v].run(f->kernel_args);
        note_variant(t, grp->name, grp->variants[v].label, suffix);
        if (rc != 0) return fail(t, 3, "kernel %s (%s) failed (%d): %s", grp->name, suffix, rc, t->halide_message);
    }
    return 0;
}

TESSEL_RT_API int tessel_library_call(const tessel_library *lib, tessel_library_state *state, int entry,
                                      struct halide_buffer_t *const *arguments, void *prepared, int64_t prepared_bytes,
                                      void *workspace, int64_t workspace_bytes, tessel_call_frame *f, tessel_call_text *t) {
    t->error[0] = 0;
    t->variants[0] = 0;
    int64_t peak = 0, prepared_total = 0;
    if (check_and_plan(lib, entry, arguments, f, t, &peak, &prepared_total)) return 1;
    if (entry == TESSEL_ENTRY_PREPARE && (!prepared || ((uintptr_t)prepared & 63) || prepared_bytes < prepared_total))
        return fail(t, 2, "the prepared block at %p holds %lld bytes; these weights need %lld bytes, 64-byte aligned", prepared,
                    (long long)prepared_bytes, (long long)prepared_total);
    if (entry == TESSEL_ENTRY_RUN_PREPARED && (!prepared || ((uintptr_t)prepared & 63)))
        return fail(t, 2, "the prepared block at %p is null or not 64-byte aligned", prepared);
    if (entry != TESSEL_ENTRY_PREPARE && lib->symbol_count > 0)
        tessel_profile_record(&state->profile, f->symbols, state->write_profile_at_exit);
    void *owned = NULL;
    if (entry != TESSEL_ENTRY_PREPARE) {
        if (!workspace && peak > 0) {
            owned = aligned_alloc(64, (size_t)peak);
            if (!owned) return fail(t, 2, "cannot allocate a workspace of %lld bytes", (long long)peak);
            workspace = owned;
            workspace_bytes = peak;
        }
        if (workspace_bytes < peak || ((uintptr_t)workspace & 63))
            return fail(t, 2, "the workspace holds %lld bytes at %p; this call needs %lld bytes, 64-byte aligned",
                        (long long)workspace_bytes, workspace, (long long)peak);
    }
    place_values(lib, entry, f, (uint8_t *)workspace, (uint8_t *)prepared);
    if (state->target < 0)
        state->target = tessel_pick_target(lib->targets, lib->target_count, getenv("TESSEL_LIB_ISA"), tessel_cpu_supports);
    if (state->target < 0) {
        free(owned);
        return fail(t, 3, "this CPU supports none of the library's targets (%s)%s", lib->targets_text,
                    getenv("TESSEL_LIB_ISA") ? " allowed by TESSEL_LIB_ISA" : "");
    }
    const int rc = run_groups(lib, entry, state->target, f, t);
    free(owned);
    return rc;
}

TESSEL_RT_API int64_t tessel_library_workspace_bytes(const tessel_library *lib, int entry,
                                                     struct halide_buffer_t *const *arguments, tessel_call_frame *f,
                                                     tessel_call_text *t) {
    int64_t peak = 0, prepared_total = 0;
    if (check_and_plan(lib, entry == TESSEL_ENTRY_WHOLE ? TESSEL_ENTRY_WHOLE : TESSEL_ENTRY_RUN_PREPARED, arguments, f, t, &peak,
                       &prepared_total))
        return -1;
    return peak;
}

TESSEL_RT_API int64_t tessel_library_prepared_bytes(const tessel_library *lib, struct halide_buffer_t *const *weights,
                                                    tessel_call_frame *f, tessel_call_text *t) {
    int64_t peak = 0, prepared_total = 0;
    if (check_and_plan(lib, TESSEL_ENTRY_PREPARE, weights, f, t, &peak, &prepared_total)) return -1;
    return prepared_total;
}
