#include "autoscheduler/Tuner.h"

#include "autoscheduler/GroupKindSpace.h"
#include "autoscheduler/TuningKey.h"
#include "codegen/Compile.h"
#include "codegen/Ptxas.h"
#include "lowering/CompiledKernel.h"
#include "schedules/ScheduleJson.h"
#include "support/Statistics.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace tessel::autosched {

std::string TuneResult::source_text() const {
    return std::string(to_string(source)) + (ptxas_checked ? "+ptxas" : "");
}

TuningKey Tuner::key_for(const TuneRequest &r) {
    TuningKey k = TuningKey::current();
    k.group_hash = structural_hash(*r.graph, r.group);
    k.shape_class = to_string(r.workload.shape_class());
    k.shapes = r.workload.to_string();
    k.target = r.target.to_string();
    k.numeric_mode = to_key_string(r.graph->mode);
    k.space_version = kSearchSpaceVersion;
    return k;
}

size_t Tuner::pick_winner(const std::vector<RankedCandidate> &ranked, double tie_tolerance, std::string *why) {
    double best = INFINITY;
    size_t fastest = ranked.size();
    for (size_t i = 0; i < ranked.size(); i++) {
        if (ranked[i].measured && ranked[i].measured->ok() && ranked[i].measured->median_ms < best) {
            best = ranked[i].measured->median_ms;
            fastest = i;
        }
    }
    if (fastest == ranked.size()) return fastest;
    // `ranked` is in model order: the first candidate inside the tie band is the model's best.
    for (size_t i = 0; i < ranked.size(); i++) {
        const auto &m = ranked[i].measured;
        if (m && m->ok() && m->median_ms <= best * (1 + tie_tolerance)) {
            if (why) {
                std::ostringstream os;
                os << std::fixed << std::setprecision(3);
                if (i == fastest) os << "fastest measured median (" << best << " ms)";
                else
                    os << "within " << tie_tolerance * 100 << "% of the fastest median (" << m->median_ms << " vs "
                       << best << " ms): tied, and the cost model ranks it higher (#" << i + 1 << " vs #"
                       << fastest + 1 << ")";
                *why = os.str();
            }
            return i;
        }
    }
    return fastest;
}

size_t Tuner::pick_final(const std::vector<RankedCandidate> &ranked, const std::vector<size_t> &finalists, double confidence,
                         std::string *why, size_t incumbent) {
    size_t lead = ranked.size();
    for (size_t i : finalists)
        if (ranked[i].measured && ranked[i].measured->ok() &&
            (lead == ranked.size() || ranked[i].measured->median_ms < ranked[lead].measured->median_ms))
            lead = i;
    if (lead == ranked.size()) return lead;
    const std::vector<double> &a = ranked[lead].measured->samples;
    std::ostringstream os;
    os << std::fixed << std::setprecision(3) << "final round, " << a.size() << " interleaved rounds: fastest #" << lead + 1
       << " (" << ranked[lead].measured->median_ms << " ms, spread " << std::setprecision(1)
       << relative_spread(a) * 100 << "%)";
    size_t winner = lead;
    for (size_t i : finalists) {
        if (i == lead || !ranked[i].measured || !ranked[i].measured->ok()) continue;
        const PairedComparison c = compare_paired(a, ranked[i].measured->samples);
        os << std::setprecision(3) << "; vs #" << i + 1 << ": ratio " << c.median_ratio << ", p = " << c.p_value
           << (c.separated(confidence) ? " (faster)" : " (tied)");
        if (!c.separated(confidence) && i < winner) winner = i;  // model order: a lower index ranks higher
    }
    if (winner != lead) os << "; #" << winner + 1 << " wins: tied with the fastest, and the cost model ranks it higher";
    // The library's point is the default: a winner must be separated from it, not only faster in
    // the medians (in screening, a 4 % lead of one candidate over the library reversed in --compare).
    const bool incumbent_ran = std::find(finalists.begin(), finalists.end(), incumbent) != finalists.end() &&
                               ranked[incumbent].measured && ranked[incumbent].measured->ok();
    if (incumbent_ran && winner != incumbent) {
        const PairedComparison c = compare_paired(ranked[winner].measured->samples, ranked[incumbent].measured->samples);
        if (!c.separated(confidence)) {
            const PairedComparison l = compare_paired(a, ranked[incumbent].measured->samples);
            os << std::setprecision(3) << "; #" << winner + 1 << " is not separated from #" << incumbent + 1
               << ", the library's point (ratio " << c.median_ratio << ", p = " << c.p_value << ")";
            if (lead != incumbent && l.separated(confidence)) {
                os << ", the fastest is (ratio " << l.median_ratio << ", p = " << l.p_value << "): #" << lead + 1 << " wins";
                winner = lead;
            } else {
                os << ": the library's point stays";
                winner = incumbent;
            }
        }
    }
    if (why) *why = os.str();
    return winner;
}

namespace {

/** The candidate's variant for this shape, compiled ahead of time and judged by the one set of
 * PTX limits (codegen/PtxReport.h). */
std::string check_with_ptxas(const TuneRequest &r, const sched::ScheduleSpec &s) {
    const CompiledKernel k(*r.graph, r.group, s, r.target, KernelBackend::AheadOfTime,
                           std::map<std::string, int64_t>{{"M", r.workload.M}, {"K", r.workload.K}, {"N", r.workload.N}});
    return k.ptx_report().verdict(k.ptx_limits());
}

}  // namespace

TuneResult Tuner::tune(const TuneRequest &r, std::ostream *log) {
    const auto t0 = std::chrono::steady_clock::now();
    TuneResult result;
    result.key = key_for(r);
    const Halide::Target &target = r.target;
    auto finish = [&] {
        result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return result;
    };

    const TargetModel tm = TargetModel::for_target(target).with_numbers(params_.machine);
    // A measuring run takes only measured records as hits: a model-only record (what a command
    // without --tune stores) is a guess, measured over and outranked by the measured record.
    const bool measuring = params_.measure && measurer_ && tm.device == sched::Device::Cpu;
    if (cache_) {
        std::optional<TuningRecord> hit = cache_->lookup(result.key);
        // An imported record is used only once its schedule has been checked here, on this
        // group and shape, against the reference: the check's verdict is stored beside it
        // (verified or refused), so it runs once per record, not once per lookup.
        std::vector<nlohmann::json> refused_here;
        while (hit && hit->measured_by == kImported && tm.device == sched::Device::Cpu) {
            if (std::find(refused_here.begin(), refused_here.end(), hit->schedule) != refused_here.end()) {
                hit.reset();  // refused, but the database could not store that (read-only)
                break;
            }
            MeasureTask check = make_measure_task(*r.graph, r.group, r.symbols, r.target.to_string());
            check.repeats = 1;
            check.warmup = 0;
            check.timeout_seconds = params_.timeout_seconds;
            check.memory_limit_bytes = params_.memory_limit_bytes;
            sched::ScheduleSpec imported;
            Measurement m;
            try {
                imported = sched::schedule_from_json(hit->schedule);
                if (measurer_) m = measurer_->measure(check, {imported}).at(0);
                else if (const std::string child = find_measure_executable(); !child.empty())
                    m = IsolatedMeasurer(child).measure_one(check, imported);
                else
                    m = validate_measurement(run_measurement(check, imported));
            } catch (const std::exception &e) {
                m = Measurement{Status::CompileError, 0, {}, e.what(), 0, 0};
            }
            TuningRecord verdict = *hit;
            verdict.created_unix = (int64_t)std::time(nullptr);
            if (m.ok()) {
                verdict.measured_by = kVerified;
                verdict.notes += "; verified here against the reference (max relative error " + std::to_string(m.max_error) + ")";
                cache_->commit(verdict);
                hit = verdict;
                if (log) *log << "imported record verified against the reference on this shape\n";
                break;
            }
            verdict.measured_by = kRefused;
            verdict.notes += "; refused here: " + to_string(m.status) + ": " + m.message;
            cache_->commit(verdict);
            refused_here.push_back(hit->schedule);
            std::cerr << "tessel: an imported tuning record for " << r.group.name << " at " << r.workload.to_string()
                      << " was refused: " << to_string(m.status) << ": " << m.message << "\n";
            hit = cache_->lookup(result.key);
        }
        if (hit) {
            if (hit->measured_by == kMeasured || hit->measured_by == kVerified || !measuring) {
                result.schedule = sched::schedule_from_json(hit->schedule);
                result.source = ScheduleProvenance::Database;
                result.time_ms = hit->median_ms;
                result.decision = "database hit (" + hit->measured_by + ", " + hit->cost_model_version + "): " + hit->notes;
                return finish();
            }
            if (log) *log << "database holds only the cost model's unmeasured pick (or an unverified import) for this key; measuring\n";
        }
    }

    const std::vector<CandidateParams> space = enumerate_space(r.workload, tm);
    std::vector<CandidateParams> survivors = prune(space, r.workload, tm, &result.prune);
    if (survivors.empty()) {
        // Tiny problems fail the parallel-work rule everywhere: keep the always-correct nest.
        CandidateParams fallback;
        fallback.nest = tm.device == sched::Device::Cuda ? NestFamily::CudaSimple : NestFamily::General;
        survivors.push_back(r.workload.kind == dsl::GroupKind::MatmulEpilogue ? fallback : group_library_point(r.workload));
    }
    const auto costs = model_.predict(r.workload, survivors);
    std::vector<size_t> order(survivors.size());
    for (size_t i = 0; i < order.size(); i++) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a].total_s() < costs[b].total_s(); });
    for (size_t i : order) result.ranked.push_back({survivors[i], costs[i], std::nullopt, ""});
    if (log) *log << result.prune.to_string() << "\n";

    size_t winner = 0;
    if (tm.device == sched::Device::Cuda && r.workload.kind != dsl::GroupKind::MatmulEpilogue) {
        result.source = ScheduleProvenance::Model;
        result.decision = "no GPU here: the library's group schedule (the space has one point on CUDA)";
        result.time_ms = result.ranked[0].cost.total_s() * 1e3;
    } else if (tm.device == sched::Device::Cuda) {
        result.source = ScheduleProvenance::Model, result.ptxas_checked = true;
        bool found = false;
        for (int i = 0; i < (int)result.ranked.size() && i < params_.ptxas_checks && !found; i++) {
            auto &c = result.ranked[i];
            c.ptxas = find_ptxas().empty() ? "skipped (no ptxas)" : check_with_ptxas(r, make_schedule(c.params, r.workload, target));
            if (c.ptxas.rfind("ok", 0) == 0 || c.ptxas.rfind("skipped", 0) == 0) {
                winner = i;
                found = true;
            }
        }
        result.decision = "no GPU here: tuned by the cost model and the ptxas check alone; " +
                          std::string(found ? "the best-ranked candidate that assembled cleanly" : "none assembled cleanly; the model's pick");
        result.time_ms = result.ranked[winner].cost.total_s() * 1e3;
    } else if (params_.measure && measurer_) {
        int budget = params_.budget;
        auto corr = params_.class_rank_correlation.find(to_string(r.workload.shape_class()));
        if (corr != params_.class_rank_correlation.end() && corr->second < params_.min_rank_correlation) budget *= 2;
        budget = std::min<int>(budget, (int)result.ranked.size());
        // Seed: the library's own point is always measured too (moved up to the budget's end).
        size_t library_index = SIZE_MAX;
        if (auto lib = library_point(r.workload, target)) {
            auto it = std::find_if(result.ranked.begin(), result.ranked.end(),
                                   [&](const RankedCandidate &c) { return c.params == *lib; });
            if (it == result.ranked.end()) {
                result.ranked.push_back({*lib, model_.predict(r.workload, std::vector<CandidateParams>{*lib})[0], std::nullopt, ""});
                it = result.ranked.end() - 1;
            }
            library_index = it - result.ranked.begin();
            if (library_index >= (size_t)budget) {
                RankedCandidate seed = *it;
                result.ranked.erase(it);
                result.ranked.insert(result.ranked.begin() + budget, seed);
                library_index = budget++;
            }
        }
        MeasureTask task = make_measure_task(*r.graph, r.group, r.symbols, r.target.to_string());
        task.repeats = params_.repeats;
        task.warmup = params_.warmup;
        task.timeout_seconds = params_.timeout_seconds;
        task.verify = params_.verify;
        task.memory_limit_bytes = params_.memory_limit_bytes;
        // Memory-bound shapes are timed with cold caches, as they run (and as the benchmark
        // measures them): 4x the last-level cache.
        if (r.workload.shape_class() == ShapeClass::Decode) task.flush_bytes = std::min<int64_t>(4 * tm.cpu.l3_bytes, 512 << 20);
        std::vector<sched::ScheduleSpec> schedules;
        for (int i = 0; i < budget; i++) {
            schedules.push_back(make_schedule(result.ranked[i].params, r.workload, target));
            schedules.back().name = "candidate_" + std::to_string(i + 1);
        }
        const auto measured = measurer_->measure(task, schedules, log ? progress_bar(*log) : ProgressFn{});
        for (int i = 0; i < budget; i++)
            result.ranked[i].measured = i < (int)measured.size()
                                            ? validate_measurement(measured[i])
                                            : Measurement{Status::InvalidResult, 0, {}, "the measurer returned no result", 0, 0};
        result.measured_count = budget;
        winner = pick_winner(result.ranked, params_.tie_tolerance, &result.decision);
        // Final round: the screened front-runners timed together, call by call, so the machine's
        // drift between their separate screenings cannot rank them.
        if (winner < result.ranked.size() && params_.finalists >= 2) {
            std::vector<std::pair<double, size_t>> ok;
            for (int i = 0; i < budget; i++)
                if (result.ranked[i].measured->ok()) ok.push_back({result.ranked[i].measured->median_ms, (size_t)i});
            std::sort(ok.begin(), ok.end());
            std::vector<size_t> finalists;
            for (const auto &[ms, i] : ok)
                if ((int)finalists.size() < params_.finalists && ms <= ok.front().first * (1 + params_.finalist_band))
                    finalists.push_back(i);
            // The library's point joins wherever it screened: separate screenings of one schedule
            // have disagreed with --compare by 1.7x (a column sum on an Intel Xeon screened 38 %
            // behind the fastest and ran 18 % ahead of it in the comparison).
            if (library_index < (size_t)budget && result.ranked[library_index].measured->ok() &&
                std::find(finalists.begin(), finalists.end(), library_index) == finalists.end())
                finalists.push_back(library_index);
            if (finalists.size() >= 2) {
                MeasureTask final_task = task;
                final_task.repeats = params_.final_rounds;
                final_task.max_rounds = params_.final_max_rounds;
                final_task.confidence = params_.confidence;
                std::vector<sched::ScheduleSpec> final_schedules;
                for (size_t i : finalists) final_schedules.push_back(schedules[i]);
                if (log) *log << "final round: " << finalists.size() << " candidates within " << params_.finalist_band * 100
                              << "% of the fastest and the library's point, timed together\n";
                const auto final = measurer_->measure_interleaved(final_task, final_schedules);
                std::vector<size_t> kept;
                for (size_t k = 0; k < finalists.size() && k < final.size(); k++) {
                    const Measurement m = validate_measurement(final[k]);
                    if (!m.ok()) continue;
                    result.ranked[finalists[k]].screened = result.ranked[finalists[k]].measured;
                    result.ranked[finalists[k]].measured = m;
                    kept.push_back(finalists[k]);
                }
                if (kept.size() >= 2)
                    winner = pick_final(result.ranked, kept, params_.confidence, &result.decision, library_index);
            }
        }
        if (winner == result.ranked.size()) {
            winner = 0;
            result.source = ScheduleProvenance::Model;
            result.decision = "every measured candidate failed; the model's pick";
            result.time_ms = result.ranked[0].cost.total_s() * 1e3;
        } else {
            result.source = ScheduleProvenance::Measured;
            result.time_ms = result.ranked[winner].measured->median_ms;
        }
    } else {
        result.source = ScheduleProvenance::Model;
        result.decision = "the cost model's top pick (not measured)";
        result.time_ms = result.ranked[0].cost.total_s() * 1e3;
    }
    result.params = result.ranked[winner].params;
    result.schedule = make_schedule(result.params, r.workload, target);

    if (cache_) {
        TuningRecord rec;
        rec.key = result.key;
        rec.schedule = sched::to_json(result.schedule);
        rec.median_ms = result.time_ms;
        if (result.ranked[winner].measured) rec.samples = result.ranked[winner].measured->samples;
        rec.cost_model_version = model_.version();
        rec.measured_by = result.source == ScheduleProvenance::Measured ? kMeasured : kModel;
        rec.created_unix = (int64_t)std::time(nullptr);
        rec.notes = result.params.to_string() + "; " + result.decision;
        cache_->commit(rec);
    }
    return finish();
}

}  // namespace tessel::autosched
