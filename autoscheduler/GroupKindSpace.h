/** \file
 * The autoscheduler's space for elementwise and reduction groups (softmax, layernorm, row and
 * column sums, plain elementwise chains): every group kind that is not a matmul+epilogue.
 *
 * A point is the CPU nest's knobs (sched::CpuGroupParams, the same nest cpu_elementwise and
 * cpu_rows are points of): vectors per iteration, rows per parallel task (rank 1: elements per
 * task) or one thread, row-local reductions per output row or at root, lane partial sums, and for
 * reductions that keep n (column sums) the vectors of n each task accumulates independently.
 * Every point is legal for every group of its kind: the nest guards its tails and ignores a knob
 * where it would be wrong (lanes in exact mode, per-row placement with several outputs), so the
 * space holds only the points that differ. SearchSpace.h, Pruning.h and CostModel.h dispatch
 * here on Workload::kind; the tuner, database, measurer and coverage report are the matmul
 * groups' own.
 *
 * Pruning rules (in order):
 *  - ordered-sum:    in exact mode, no lane partial sums on a reduction along n (they reorder
 *                    the sum; the nest would ignore the knob, so the point is a duplicate).
 *  - vector-width:   no more vectors per iteration than one row fills (v x lanes <= columns,
 *                    one vector always allowed).
 *  - parallel-work:  a parallel nest makes at least as many tasks as cores where the rows
 *                    allow it (rows per task <= ceil(rows / cores); rank 1: blocks past the
 *                    smallest only when they still make a task per core).
 *
 * Cost terms (CPU; AnalyticalCostModel::predict calls estimate_group_cpu):
 *   compute  = output elements x (vector flops per element) at the vector rate, tails of each
 *              row at the scalar rate, one cycle per loop iteration (fewer with more vectors),
 *              and each reduction's reads: one vector add per lane group with lanes, one
 *              dependent scalar add per element without (an add's latency), all over the
 *              working cores
 *   memory   = the group's bytes at the rate of the cache level they fit in (DRAM beyond L3),
 *              plus, for reductions at root, their inputs read again (from cache when they fit,
 *              else DRAM); one thread reaches part of the two cores' bandwidth
 *   epilogue = libm calls (strict tanh) per element
 *   overhead = tasks x per-task cost + per-call cost
 */
#pragma once

#include "autoscheduler/CostModel.h"
#include "autoscheduler/Pruning.h"
#include "autoscheduler/SearchSpace.h"
#include "dsl/passes/Fusion.h"

#include <map>
#include <optional>
#include <string>

namespace tessel::autosched {

/** Elementwise, Rows or Columns (Workload::shape_class). */
ShapeClass group_shape_class(const sched::GroupShape &shape);

/** The workload of an elementwise or reduction `group` of `g` at `symbols`: `shape` from the
 * lowering (lower::group_shape), sizes, bytes and the op cost table. nullopt when a size of a
 * value the group touches is unbound. */
std::optional<Workload> group_kind_workload(const dsl::Graph &g, const dsl::FusionGroup &group, const sched::GroupShape &shape,
                                            const std::map<std::string, int64_t> &symbols);

/** Every point for `w` on `model` (one point, the library's, on CUDA: no GPU here to measure). */
std::vector<CandidateParams> enumerate_group_space(const Workload &w, const TargetModel &model);

/** cpu_elementwise's point for elementwise groups, cpu_rows's for reduction groups. */
CandidateParams group_library_point(const Workload &w);

/** The point's nest for `w.group.shape` (the library's group schedule on CUDA). */
sched::ScheduleSpec make_group_schedule(const CandidateParams &p, const Workload &w, const Halide::Target &target);

/** The rules of the file comment, in order. */
const std::vector<PruningRule> &group_pruning_rules();

/** The cost terms of the file comment. */
CostBreakdown estimate_group_cpu(const Workload &w, const CandidateParams &p, const CpuModel &c);

}  // namespace tessel::autosched
