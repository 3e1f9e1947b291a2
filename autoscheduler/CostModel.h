/** \file
 * The analytical cost model: predicts the run time of each candidate from its arithmetic,
 * the bytes it moves with tile reuse, and its use of the machine (vector and FMA-pipe
 * utilization, parallel efficiency, occupancy), as a roofline with overheads:
 *
 *   time = max(compute, memory) + epilogue + overhead
 *   compute  = executed flops / (peak x vector utilization x pipe efficiency x parallel efficiency)
 *   memory   = bytes from DRAM / bandwidth + cache traffic (packing, re-reads, accumulators) / L2 bandwidth
 *   epilogue = output elements x (vector flops + scalar library calls) of the fused epilogue
 *   overhead = parallel tasks x per-task cost + per-call cost (CPU); launches (CUDA)
 *
 * Each term is reported (`tessel tune --explain`). The nominal peak and bandwidth of the
 * TargetModel are scaled by a Calibration per shape class, fitted to measurements: a model
 * calibrated on square matrices is a poor judge of decode shapes (memory-bound), which is why
 * calibrations are kept per class (see Coverage.h).
 */
#pragma once

#include "autoscheduler/SearchSpace.h"

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tessel::autosched {

constexpr const char *kCostModelVersion = "analytical-1";

/** The estimate of one candidate, term by term (seconds). */
struct CostBreakdown {
    double compute_s = 0, memory_s = 0, epilogue_s = 0, overhead_s = 0;
    double flops = 0;  ///< executed, including recomputed tails
    double dram_bytes = 0, cache_bytes = 0;
    double vector_utilization = 1;  ///< useful lanes / lanes
    double pipe_efficiency = 1;     ///< FMA issue slots used per k step (load-bound blocks lose)
    double parallel_efficiency = 1;
    int64_t tasks = 1;
    double total_s() const;
    std::string explain() const;  ///< one line per term
};

/** Multipliers on the model's nominal machine: fitted per shape class. */
struct Calibration {
    double compute_scale = 1;  ///< measured compute time / modelled
    double memory_scale = 1;   ///< measured memory time / modelled
    int samples = 0;
};

/** Interface (TVM's cost-model role): batched prediction, updated from measurements. */
class CostModel {
public:
    virtual ~CostModel() = default;
    virtual std::vector<CostBreakdown> predict(const Workload &w, std::span<const CandidateParams> candidates) const = 0;
    virtual std::string version() const = 0;
};

class AnalyticalCostModel : public CostModel {
public:
    explicit AnalyticalCostModel(TargetModel model) : model_(std::move(model)) {}
    std::vector<CostBreakdown> predict(const Workload &w, std::span<const CandidateParams> candidates) const override;
    std::string version() const override { return kCostModelVersion; }

    /** The calibration used for a shape class ("decode", "square", "mlp"); default 1, 1. */
    void set_calibration(const std::string &shape_class, Calibration c) { calibration_[shape_class] = c; }
    Calibration calibration(const std::string &shape_class) const;
    /** Use one calibration for every class (to show what a single-class calibration does). */
    void set_global_calibration(Calibration c) { global_ = c; }

    /** Least-squares fit of compute and memory scales to (breakdown, measured seconds) pairs:
     * measured ~ a x compute + b x memory + overhead, restricted to a, b > 0. */
    static Calibration fit(const std::vector<std::pair<CostBreakdown, double>> &samples);

    const TargetModel &target() const { return model_; }

private:
    TargetModel model_;
    std::map<std::string, Calibration> calibration_;
    std::optional<Calibration> global_;
    CostBreakdown estimate_cpu(const Workload &w, const CandidateParams &p) const;
    CostBreakdown estimate_cuda(const Workload &w, const CandidateParams &p) const;
};

}  // namespace tessel::autosched
