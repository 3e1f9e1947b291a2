#include "autoscheduler/Tuner.h"

#include "autoscheduler/RecordReuse.h"
#include "autoscheduler/SearchStrategy.h"
#include "autoscheduler/TuningKey.h"
#include "support/Clock.h"
#include "support/Statistics.h"

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace tessel::autosched {

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
                if (i == fastest)
                    os << "fastest measured median (" << best << " ms)";
                else
                    os << "within " << tie_tolerance * 100 << "% of the fastest median (" << m->median_ms << " vs " << best
                       << " ms): tied, and the cost model ranks it higher (#" << i + 1 << " vs #" << fastest + 1 << ")";
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
       << " (" << ranked[lead].measured->median_ms << " ms, spread " << std::setprecision(1) << relative_spread(a) * 100 << "%)";
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

std::string TuneResult::source_text() const { return std::string(to_string(source)) + (ptxas_checked ? "+ptxas" : ""); }

TuneResult Tuner::tune(const TuneRequest &r, std::ostream *log) {
    const SteadyClock::time_point t0 = SteadyClock::now();
    TuneResult result;
    result.key = key_for(r);
    const TargetModel tm = TargetModel::for_target(r.target).with_numbers(params_.machine);
    const TuneContext ctx{r, tm, model_, measurer_, params_, log};
    // A measuring run takes only measured records as hits: a model-only record (what a command
    // without --tune stores) is a guess, measured over and outranked by the measured record.
    const bool measuring = params_.measure && measurer_ && tm.device == sched::Device::Cpu;
    if (cache_ && reuse_record(ctx, *cache_, measuring, result)) {
        result.seconds = seconds_since(t0);
        return result;
    }

    rank_candidates(ctx, result);
    size_t winner = 0;
    if (tm.device == sched::Device::Cuda && r.workload.kind != dsl::GroupKind::MatmulEpilogue)
        winner = model_pick(result, "no GPU here: the library's group schedule (the space has one point on CUDA)");
    else if (tm.device == sched::Device::Cuda)
        winner = search_by_ptxas(ctx, result);
    else if (measuring)
        winner = search_by_measurement(ctx, result);
    else
        winner = model_pick(result, "the cost model's top pick (not measured)");
    result.params = result.ranked[winner].params;
    result.schedule = make_schedule(result.params, r.workload, r.target);

    if (cache_) commit_result(*cache_, result, winner, model_);
    result.seconds = seconds_since(t0);
    return result;
}

}  // namespace tessel::autosched
