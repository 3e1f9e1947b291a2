/** \file
 * The search space for a matmul+epilogue fusion group on one target.
 *
 * A point is a CandidateParams: which loop nest (the same nests the hand-written library
 * composes: schedules/MatmulCpuSchedules.h, schedules/MatmulCudaSchedules.h) and its sizes. The
 * values are generated from the workload's iteration space (M, K, N) and the TargetModel
 * (vector width, registers, caches; CUDA thread and shared-memory limits), not listed by hand.
 * make_schedule() turns a point into a ScheduleSpec — the same type as the library's — whose
 * variant holds the nest under the guards where it is valid, with the always-correct general
 * nest as the fallback, so a tuned schedule is correct for any shape it is later run on.
 */
#pragma once

#include "autoscheduler/TargetModel.h"
#include "dsl/ir/Graph.h"
#include "schedules/Schedule.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace tessel::autosched {

/** Bump when the space or make_schedule changes: it is part of every tuning key. */
constexpr int kSearchSpaceVersion = 5;  // 2: split-K register-block nest ("splitk"); 3: "gemv"; 4: ordered-sum rule (exact mode); 5: "panel" nests

/** The extents of one matmul+epilogue problem: y[M,N] = epilogue(x[M,K] @ w[K,N]). */
struct Workload {
    int64_t M = 1, K = 1, N = 1;
    /** The fused epilogue's cost per output element: vectorizable flops, and calls to scalar
     * library functions (strict-mode tanh is one), which do not vectorize. */
    double epilogue_flops = 0, epilogue_scalar_calls = 0;
    /** The graph's numeric mode keeps the k sum in program order (exact): nests that split it
     * into partial sums (split-K, gemv, decode; CUDA tiled and decode) are pruned. */
    bool ordered_reductions = false;
    /** w is stored in panels of this many columns (lower::LoweredGroup::rhs_panel_width), 0 when
     * row-major: where the vector width divides it, the space is the panel nests reading the
     * panels in place (and the general nest), never a row-major nest reading them through index
     * arithmetic. */
    int64_t rhs_panel_width = 0;
    /** "decode" (M <= 16), "square" (M, K, N within 2x of each other), else "mlp". */
    std::string shape_class() const;
    std::string to_string() const;  ///< "M=1,K=4096,N=4096"
    double flops() const { return 2.0 * M * K * N; }
};

struct CandidateParams {
    std::string nest;  ///< cpu: gemm, splitk, gemv, decode, panel, general; cuda: cuda_tiled, cuda_decode, cuda_simple
    // CPU nests.
    int mr = 0, nr_vectors = 0, panel_blocks = 0, k_unroll = 0, k_chunk = 0;
    // CUDA nests.
    int BN = 0, BM = 0, TN = 0, TM = 0, KT = 0, NB = 0, KS = 0, MB = 0;

    std::string to_string() const;  ///< "gemm mr=8 nr=3v panel=1"
    nlohmann::json to_json() const;
    bool operator==(const CandidateParams &) const = default;
};

/** Fills w.epilogue_flops / epilogue_scalar_calls from the group's non-contraction nodes:
 * a small cost table per op (e.g. erf-GELU ~30 vector flops; tanh-GELU in strict mode one
 * scalar tanh call, in fast mode ~25 vector flops). */
void add_epilogue_cost(const dsl::Graph &g, const std::vector<dsl::ValueId> &nodes, Workload &w);

/** Every point of the space for `w` on `model` (before pruning), in a stable order. */
std::vector<CandidateParams> enumerate_space(const Workload &w, const TargetModel &model);

/** The point that reproduces the library's default schedule for `w` (cpu_blocked's nest for
 * this shape), or nullopt on CUDA. The tuner always measures it beside the model's top K, so
 * a tuned schedule is never worse than the library's beyond the near-tie band. */
std::optional<CandidateParams> library_point(const Workload &w, const Halide::Target &target);

/** The ScheduleSpec of a point: its nest as a guarded variant, the general nest as fallback. */
sched::ScheduleSpec make_schedule(const CandidateParams &p, const Halide::Target &target);

}  // namespace tessel::autosched
