/** \file
 * Tuner: wires the autoscheduler's parts — search space, pruning, cost model, measurer and
 * tuning cache — for one matmul+epilogue group at one shape on one target.
 *
 *   cache hit? -> return it (no measurement); a measuring run takes only measured records as
 *                 hits: a model-only record is measured over and outranked
 *   enumerate_space -> prune (counts per rule) -> cost model ranks every survivor
 *   CPU, measuring:   measure the model's top `budget` in isolated children, plus the library's
 *                     own point for the shape (library_point) when it is not among them;
 *                     near-tie rule below
 *   CPU, model only:  the model's top pick
 *   CUDA (no GPU):    the model's best candidates in order, each assembled with ptxas -v for
 *                     the target's architecture (sched::TargetFacts); the first without spills
 *                     and within limits wins
 *   -> commit the winner to the cache
 *
 * Every measurement is validated (validate_measurement: a finite, non-negative time) whichever
 * Measurer produced it; a failed or invalid candidate is recorded in `ranked` and never wins.
 *
 * Near-tie rule (so re-tuning picks the same winner): every candidate whose median is within
 * `tie_tolerance` (3%) of the fastest median is tied with it; among the tied, the one the cost
 * model ranks best wins. Measurement noise between near-equal candidates therefore cannot flip
 * the choice; only a candidate more than 3% faster can.
 */
#pragma once

#include "autoscheduler/CostModel.h"
#include "autoscheduler/MeasureTask.h"
#include "autoscheduler/Measurer.h"
#include "autoscheduler/Pruning.h"
#include "autoscheduler/TuningDatabase.h"
#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"
#include "schedules/ScheduleProvenance.h"

#include <Halide.h>

#include <cstdint>
#include <optional>
#include <ostream>

namespace tessel::autosched {

/** Every knob of the tuner; the apps parse these, nothing reads the environment. */
struct TunerParams {
    int budget = 6;               ///< candidates measured per shape (CPU)
    int repeats = 5;              ///< timed runs per candidate (median)
    int warmup = 1;               ///< untimed runs before them
    double timeout_seconds = 30;  ///< per candidate, compile included
    /** Every measured candidate is checked against the group's default library schedule on
     * its inputs before its time counts (MeasureTask::verify). */
    bool verify = true;
    int64_t memory_limit_bytes = default_child_memory_limit();  ///< per measuring child (RLIMIT_AS); 0 = none
    double tie_tolerance = 0.03;  ///< near-tie band, relative to the fastest median (no final round)
    /** Final round: the fastest screened candidates (at most `finalists`, each within
     * `finalist_band` of the fastest median) are timed again together in one child, call by call
     * in turn, for `final_rounds` rounds and then until the fastest is separated from each other
     * at `confidence` (paired sign test) or `final_max_rounds`; the winner is the fastest, or
     * among those it is tied with, the one the cost model ranks highest. The library's own point
     * always joins the round (beyond `finalists`, wherever it screened), and a winner that
     * is not separated from it gives way to it: tuning never replaces the library's schedule on a
     * difference the measurement cannot tell from noise. finalists < 2: off. */
    int finalists = 3;
    double finalist_band = 0.25;  ///< screening repeats alone drift by tens of percent on a shared machine
    int final_rounds = 10, final_max_rounds = 40;
    double confidence = 0.95;
    bool measure = true;   ///< false: the model's pick, no measurement
    int ptxas_checks = 4;  ///< CUDA: how many top candidates may be assembled
    /** Shape classes whose model ranking correlated poorly (< this) get twice the budget. */
    double min_rank_correlation = 0.5;
    std::map<std::string, double> class_rank_correlation;  ///< filled by coverage runs
    /** This machine's measured numbers (MachineNumbers.h) for the target model; none: nominal. */
    std::optional<MachineNumbers> machine;
};

/** What to tune: one planned group of a graph at one workload. The group itself travels to
 * the measuring child (MeasureTask), which lowers exactly it. */
struct TuneRequest {
    const dsl::Graph *graph = nullptr;  ///< the graph `group` was planned on (its mode is the key's)
    dsl::FusionGroup group;
    std::map<std::string, int64_t> symbols;
    Workload workload;  ///< M, K, N from group_extents at `symbols`, plus epilogue cost
    Halide::Target target;
};

struct RankedCandidate {
    CandidateParams params;
    CostBreakdown cost;
    std::optional<Measurement> measured;
    std::string ptxas;  ///< CUDA: the ptxas verdict when checked
    /** The screening measurement when the final round replaced `measured` (Coverage compares
     * every candidate on the same kind of measurement: screening). */
    std::optional<Measurement> screened;
};

struct TuneResult {
    TuningKey key;
    sched::ScheduleSpec schedule;
    CandidateParams params;
    /** Database, Measured or Model (never User or LibraryDefault). */
    ScheduleProvenance source = ScheduleProvenance::Model;
    bool ptxas_checked = false;  ///< CUDA: the model's pick was checked with ptxas
    /** "database", "measured", "model", or "model+ptxas" when ptxas_checked. */
    std::string source_text() const;
    double time_ms = 0;  ///< measured median, or the model's estimate
    PruneReport prune;
    std::vector<RankedCandidate> ranked;  ///< every survivor in model order (measured ones filled)
    int measured_count = 0;
    double seconds = 0;    ///< wall time of this tune() call
    std::string decision;  ///< why the winner won
};

/** What the tuner's roles (RecordReuse, SearchStrategy) see of one tune() call. */
struct TuneContext {
    const TuneRequest &request;
    const TargetModel &target;  ///< the request's target with this machine's numbers
    const CostModel &model;
    Measurer *measurer;  ///< null: model only
    const TunerParams &params;
    std::ostream *log;  ///< null: quiet
};

/** The tuner: reuse a record (RecordReuse.h), else search (SearchStrategy.h), then commit. */
class Tuner {
public:
    /** `measurer` may be null (model only); `cache` may be null (no reuse). */
    Tuner(const CostModel &model, Measurer *measurer, TuningCache *cache, TunerParams params)
        : model_(model), measurer_(measurer), cache_(cache), params_(std::move(params)) {}

    TuneResult tune(const TuneRequest &request, std::ostream *log = nullptr);

    /** The key a request is stored under. */
    static TuningKey key_for(const TuneRequest &request);

    /** The near-tie rule on measured candidates in model order; returns the winner's index. */
    static size_t pick_winner(const std::vector<RankedCandidate> &ranked, double tie_tolerance, std::string *why);

    /** The final round's rule on `finalists` (indices into `ranked`, whose measurements pair by
     * round): the fastest median, or the model's best among the candidates it is not separated
     * from at `confidence`; then, when `incumbent` (the library's point) is a finalist, that
     * winner must be separated from it too, or the incumbent wins. `why` gets each comparison
     * (ratio, p-value) and the spread. */
    static size_t pick_final(const std::vector<RankedCandidate> &ranked, const std::vector<size_t> &finalists, double confidence,
                             std::string *why, size_t incumbent = SIZE_MAX);

private:
    const CostModel &model_;
    Measurer *measurer_;
    TuningCache *cache_;
    TunerParams params_;
};

}  // namespace tessel::autosched
