/** \file
 * Pruning: documented rules that remove points of the search space before the cost model
 * ranks them. Each rule is a name, a one-line statement of what it demands, and a predicate
 * returning why a point fails it (empty when it passes). prune() applies the rules in order
 * and reports how many points each one removed.
 *
 * CPU rules
 *  - nest-applies:       the nest's guard must hold for this workload (gemm needs M >= mr and
 *                        N >= nr; the split-K decode nest is for M <= 16, where w must be
 *                        streamed once).
 *  - register-budget:    mr x nr accumulators + nr vectors of w + 1 broadcast of x must fit the
 *                        vector register file.
 *  - latency-hiding:     a gemm block needs at least fma_latency x fma_units independent
 *                        accumulators, or the FMA pipes idle.
 *  - parallel-work:      at least as many parallel tasks as cores.
 *  - panel-fits-l2:      the packed panel of w (K x nr x panel) must fit in L2 to be reused by
 *                        every row tile.
 *  - partials-fit-l2:    the decode nest's M x N partial sums per chunk must fit in L2.
 * CUDA rules
 *  - nest-applies:       the tiled nest needs M >= BM, N >= BN and K % KT == 0; decode needs
 *                        M <= MB.
 *  - thread-limit:       threads per block within 32..1024 and a whole number of warps.
 *  - shared-memory:      staged tiles within the 48 KiB a block can use statically.
 *  - register-estimate:  TN x TM accumulators + operands + ~24 overhead within 255 per thread.
 *  - occupancy:          at least half as many blocks as SMs, so the grid keeps the chip busy.
 *
 * Both devices, last
 *  - ordered-sum:        in numeric mode exact, no nest that splits the k sum into partial sums
 *                        (CPU split-K, gemv, decode; CUDA tiled and decode use rfactor).
 *
 * The always-correct fallback nest ("general" on CPU, "cuda_simple" on CUDA) may fail the
 * rules for tiny problems; the tuner keeps it when nothing else survives.
 */
#pragma once

#include "autoscheduler/SearchSpace.h"

#include <functional>
#include <string>
#include <vector>

namespace tessel::autosched {

struct PruningRule {
    std::string name;
    std::string statement;
    std::function<std::string(const CandidateParams &, const Workload &, const TargetModel &)> violation;
};

/** The rules for a device, in the order prune() applies them. */
const std::vector<PruningRule> &pruning_rules(sched::Device device);

struct PruneReport {
    size_t generated = 0;
    std::vector<std::pair<std::string, size_t>> removed_by_rule;  ///< in rule order
    size_t survivors = 0;
    std::string to_string() const;
};

/** Keeps the points every rule accepts; fills `report` with the counts. */
std::vector<CandidateParams> prune(const std::vector<CandidateParams> &points, const Workload &w, const TargetModel &model,
                                   PruneReport *report = nullptr);

}  // namespace tessel::autosched
