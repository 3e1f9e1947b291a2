#include "autoscheduler/SearchStrategy.h"

#include "autoscheduler/AttentionSpace.h"
#include "autoscheduler/GroupKindSpace.h"
#include "codegen/Ptxas.h"
#include "lowering/CompiledKernel.h"

#include <algorithm>

namespace tessel::autosched {

namespace {

/** The candidate's variant for this shape, compiled ahead of time and judged by the one set of
 * PTX limits (codegen/PtxReport.h). */
std::string check_with_ptxas(const TuneRequest &r, const sched::ScheduleSpec &s) {
    const CompiledKernel k(*r.graph, r.group, s, r.target, KernelBackend::AheadOfTime,
                           std::map<std::string, int64_t>{{"M", r.workload.M}, {"K", r.workload.K}, {"N", r.workload.N}});
    return k.ptx_report().verdict(k.ptx_limits());
}

/** Moves the library's own point for the shape into the first `budget` candidates (adding it
 * when pruning dropped it); returns its index, and grows `budget` by one when it was beyond. */
size_t seed_library_point(const TuneContext &ctx, TuneResult &result, int &budget) {
    const TuneRequest &r = ctx.request;
    const std::optional<CandidateParams> lib = library_point(r.workload, r.target);
    if (!lib) return SIZE_MAX;
    auto it =
        std::find_if(result.ranked.begin(), result.ranked.end(), [&](const RankedCandidate &c) { return c.params == *lib; });
    if (it == result.ranked.end()) {
        result.ranked.push_back({*lib, ctx.model.predict(r.workload, std::vector<CandidateParams>{*lib})[0], std::nullopt, ""});
        it = result.ranked.end() - 1;
    }
    size_t index = it - result.ranked.begin();
    if (index >= (size_t)budget) {
        RankedCandidate seed = *it;
        result.ranked.erase(it);
        result.ranked.insert(result.ranked.begin() + budget, seed);
        index = budget++;
    }
    return index;
}

/** The screened candidates within finalist_band of the fastest (at most `finalists`), plus the
 * library's point wherever it screened: separate screenings of one schedule drift apart on a
 * shared machine, so only a round timing them together may rank them. */
std::vector<size_t> pick_finalists(const TunerParams &params, const TuneResult &result, int budget, size_t library_index) {
    std::vector<std::pair<double, size_t>> ok;
    for (int i = 0; i < budget; i++)
        if (result.ranked[i].measured->ok()) ok.push_back({result.ranked[i].measured->median_ms, (size_t)i});
    std::sort(ok.begin(), ok.end());
    std::vector<size_t> finalists;
    for (const auto &[ms, i] : ok)
        if ((int)finalists.size() < params.finalists && ms <= ok.front().first * (1 + params.finalist_band))
            finalists.push_back(i);
    if (library_index < (size_t)budget && result.ranked[library_index].measured->ok() &&
        std::find(finalists.begin(), finalists.end(), library_index) == finalists.end())
        finalists.push_back(library_index);
    return finalists;
}

}  // namespace

void rank_candidates(const TuneContext &ctx, TuneResult &result) {
    const Workload &w = ctx.request.workload;
    const std::vector<CandidateParams> space = enumerate_space(w, ctx.target);
    std::vector<CandidateParams> survivors = prune(space, w, ctx.target, &result.prune);
    if (survivors.empty()) {
        // Tiny problems fail the parallel-work rule everywhere: keep the always-correct nest.
        CandidateParams fallback;
        fallback.nest = ctx.target.device == sched::Device::Cuda ? NestFamily::CudaSimple : NestFamily::General;
        survivors.push_back(w.kind == dsl::GroupKind::MatmulEpilogue ? fallback
                            : w.kind == dsl::GroupKind::Attention    ? attention_library_point(w, ctx.request.target)
                                                                     : group_library_point(w));
    }
    const auto costs = ctx.model.predict(w, survivors);
    std::vector<size_t> order(survivors.size());
    for (size_t i = 0; i < order.size(); i++) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a].total_s() < costs[b].total_s(); });
    for (size_t i : order) result.ranked.push_back({survivors[i], costs[i], std::nullopt, ""});
    if (ctx.log) *ctx.log << result.prune.to_string() << "\n";
}

size_t model_pick(TuneResult &result, std::string decision) {
    result.source = ScheduleProvenance::Model;
    result.decision = std::move(decision);
    result.time_ms = result.ranked[0].cost.total_s() * 1e3;
    return 0;
}

size_t search_by_ptxas(const TuneContext &ctx, TuneResult &result) {
    result.source = ScheduleProvenance::Model;
    result.ptxas_checked = true;
    size_t winner = 0;
    bool found = false;
    for (int i = 0; i < (int)result.ranked.size() && i < ctx.params.ptxas_checks && !found; i++) {
        RankedCandidate &c = result.ranked[i];
        c.ptxas = find_ptxas().empty()
                      ? "skipped (no ptxas)"
                      : check_with_ptxas(ctx.request, make_schedule(c.params, ctx.request.workload, ctx.request.target));
        if (c.ptxas.rfind("ok", 0) == 0 || c.ptxas.rfind("skipped", 0) == 0) {
            winner = i;
            found = true;
        }
    }
    result.decision =
        "no GPU here: tuned by the cost model and the ptxas check alone; " +
        std::string(found ? "the best-ranked candidate that assembled cleanly" : "none assembled cleanly; the model's pick");
    result.time_ms = result.ranked[winner].cost.total_s() * 1e3;
    return winner;
}

size_t search_by_measurement(const TuneContext &ctx, TuneResult &result) {
    const TuneRequest &r = ctx.request;
    const TunerParams &params = ctx.params;
    int budget = params.budget;
    auto corr = params.class_rank_correlation.find(to_string(r.workload.shape_class()));
    if (corr != params.class_rank_correlation.end() && corr->second < params.min_rank_correlation) budget *= 2;
    budget = std::min<int>(budget, (int)result.ranked.size());
    const size_t library_index = seed_library_point(ctx, result, budget);

    MeasureTask task = make_measure_task(*r.graph, r.group, r.symbols, r.target.to_string());
    task.repeats = params.repeats;
    task.warmup = params.warmup;
    task.timeout_seconds = params.timeout_seconds;
    task.verify = params.verify;
    task.memory_limit_bytes = params.memory_limit_bytes;
    // Memory-bound shapes are timed with cold caches, as they run (and as the benchmark
    // measures them): 4x the last-level cache.
    if (r.workload.shape_class() == ShapeClass::Decode)
        task.flush_bytes = std::min<int64_t>(4 * ctx.target.cpu.l3_bytes, 512 << 20);
    std::vector<sched::ScheduleSpec> schedules;
    for (int i = 0; i < budget; i++) {
        schedules.push_back(make_schedule(result.ranked[i].params, r.workload, r.target));
        schedules.back().name = "candidate_" + std::to_string(i + 1);
    }
    const auto measured = ctx.measurer->measure(task, schedules, ctx.log ? progress_bar(*ctx.log) : ProgressFn{});
    for (int i = 0; i < budget; i++)
        result.ranked[i].measured = i < (int)measured.size()
                                        ? validate_measurement(measured[i])
                                        : Measurement{Status::InvalidResult, 0, {}, "the measurer returned no result", 0, 0};
    result.measured_count = budget;
    size_t winner = Tuner::pick_winner(result.ranked, params.tie_tolerance, &result.decision);

    // Final round: the screened front-runners timed together, call by call, so the machine's
    // drift between their separate screenings cannot rank them.
    if (winner < result.ranked.size() && params.finalists >= 2) {
        const std::vector<size_t> finalists = pick_finalists(params, result, budget, library_index);
        if (finalists.size() >= 2) {
            MeasureTask final_task = task;
            final_task.repeats = params.final_rounds;
            final_task.max_rounds = params.final_max_rounds;
            final_task.confidence = params.confidence;
            std::vector<sched::ScheduleSpec> final_schedules;
            for (size_t i : finalists) final_schedules.push_back(schedules[i]);
            if (ctx.log)
                *ctx.log << "final round: " << finalists.size() << " candidates within " << params.finalist_band * 100
                         << "% of the fastest and the library's point, timed together\n";
            const auto final = ctx.measurer->measure_interleaved(final_task, final_schedules);
            std::vector<size_t> kept;
            for (size_t k = 0; k < finalists.size() && k < final.size(); k++) {
                const Measurement m = validate_measurement(final[k]);
                if (!m.ok()) continue;
                result.ranked[finalists[k]].screened = result.ranked[finalists[k]].measured;
                result.ranked[finalists[k]].measured = m;
                kept.push_back(finalists[k]);
            }
            if (kept.size() >= 2)
                winner = Tuner::pick_final(result.ranked, kept, params.confidence, &result.decision, library_index);
        }
    }
    if (winner == result.ranked.size()) return model_pick(result, "every measured candidate failed; the model's pick");
    result.source = ScheduleProvenance::Measured;
    result.time_ms = result.ranked[winner].measured->median_ms;
    return winner;
}

}  // namespace tessel::autosched
