/** \file
 * The autoscheduler's space for attention groups (dsl/passes/AttentionFusion.h). A point is the
 * CPU attention nest's knobs (sched::CpuAttentionParams, the nest cpu_attention and its decode
 * variant are points of): query rows per task, the register tile's rows and column vectors (the
 * same tile serves q Kᵀ and probs V), and whether K and V are copied into blocks once per call,
 * per block where a task uses them, or (S <= kAttentionInPlaceRows) read in place with q Kᵀ in
 * vectors along the depth. SearchSpace.h, Pruning.h and CostModel.h dispatch here on
 * Workload::kind == Attention; the tuner, database, measurer and coverage report are shared.
 * Shape classes: attention_decode (S <= sched::kAttentionDecodeRows query rows), else
 * attention_prefill.
 *
 * Pruning rules (in order):
 *  - registers:      the tile's accumulators, its column vectors and a broadcast fit the
 *                    register file (rows x vectors + vectors + 1 <= registers).
 *  - tile-in-block:  a task's query rows are a multiple of the tile's rows.
 *  - query-rows:     no task holds more query rows than S rounded up to the tile (a larger block
 *                    computes rows nobody reads).
 *
 * Cost terms (CPU):
 *   compute  = 4 B S L D flops, grown by the tails (S to whole tiles, L to whole key blocks, Dv
 *              to whole column tiles), at the FMA rate times the tile's issue efficiency
 *              (FMAs per step over the larger of FMAs and loads, per port, and at most the
 *              accumulators over 1.5 x latency x FMA units: the loads' latency too), plus the exps:
 *              one per score and one per state element per key block, vectorized
 *   copies   = K (transposed: a gather, about a cycle per element) and V into blocks: copied once,
 *              a pass of its own before the nest (its cycles plus its bytes); copied per
 *              block, inside the nest, once per query block of a batch entry (compute); read
 *              in place, none, and a pass summing q Kᵀ's lanes per key (compute)
 *   memory   = q, o, K and V once from DRAM (or L3), and the copies read by every query block
 *   overhead = tasks x per-task cost + per-call cost, over the cores the tasks fill
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

/** The workload of attention `group` of `g` at `symbols`; nullopt when a size is unbound. */
std::optional<Workload> attention_workload(const dsl::Graph &g, const dsl::FusionGroup &group, const sched::GroupShape &shape,
                                           const std::map<std::string, int64_t> &symbols);

/** attention_decode or attention_prefill. */
ShapeClass attention_shape_class(const AttentionWork &a);

/** Every point for `w` (the library's alone on CUDA, where attention is not fused). */
std::vector<CandidateParams> enumerate_attention_space(const Workload &w, const TargetModel &model);

/** The point cpu_attention runs at w's S: its prefill nest, or its decode variant. */
CandidateParams attention_library_point(const Workload &w, const Halide::Target &target);

/** The point's nest for w's group. */
sched::ScheduleSpec make_attention_schedule(const CandidateParams &p, const Workload &w, const Halide::Target &target);

/** The rules of the file comment, in order. */
const std::vector<PruningRule> &attention_pruning_rules();

/** The cost terms of the file comment. */
CostBreakdown estimate_attention_cpu(const Workload &w, const CandidateParams &p, const CpuModel &c);

}  // namespace tessel::autosched
