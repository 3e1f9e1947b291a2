#include "autoscheduler/RecordReuse.h"

#include "schedules/ScheduleJson.h"

#include <algorithm>
#include <ctime>
#include <iostream>

namespace tessel::autosched {

namespace {

/** Runs `imported` once on the request's group and shape, checked against the reference. */
Measurement verify_import(const TuneRequest &r, const nlohmann::json &schedule, Measurer *measurer, const TunerParams &params) {
    MeasureTask check = make_measure_task(*r.graph, r.group, r.symbols, r.target.to_string());
    check.repeats = 1;
    check.warmup = 0;
    check.timeout_seconds = params.timeout_seconds;
    check.memory_limit_bytes = params.memory_limit_bytes;
    try {
        const sched::ScheduleSpec imported = sched::schedule_from_json(schedule);
        if (measurer) return measurer->measure(check, {imported}).at(0);
        if (const std::string child = find_measure_executable(); !child.empty())
            return IsolatedMeasurer(child).measure_one(check, imported);
        return validate_measurement(run_measurement(check, imported));
    } catch (const std::exception &e) {
        return Measurement{Status::CompileError, 0, {}, e.what(), 0, 0};
    }
}

}  // namespace

bool reuse_record(const TuneContext &ctx, TuningCache &cache, bool measuring, TuneResult &result) {
    const TuneRequest &r = ctx.request;
    std::ostream *log = ctx.log;
    const bool on_cpu = ctx.target.device == sched::Device::Cpu;
    std::optional<TuningRecord> hit = cache.lookup(result.key);
    std::vector<nlohmann::json> refused_here;
    while (hit && hit->measured_by == kImported && on_cpu) {
        if (std::find(refused_here.begin(), refused_here.end(), hit->schedule) != refused_here.end()) {
            hit.reset();  // refused, but the database could not store that (read-only)
            break;
        }
        const Measurement m = verify_import(r, hit->schedule, ctx.measurer, ctx.params);
        TuningRecord verdict = *hit;
        verdict.created_unix = (int64_t)std::time(nullptr);
        if (m.ok()) {
            verdict.measured_by = kVerified;
            verdict.notes += "; verified here against the reference (max relative error " + std::to_string(m.max_error) + ")";
            cache.commit(verdict);
            hit = verdict;
            if (log) *log << "imported record verified against the reference on this shape\n";
            break;
        }
        verdict.measured_by = kRefused;
        verdict.notes += "; refused here: " + to_string(m.status) + ": " + m.message;
        cache.commit(verdict);
        refused_here.push_back(hit->schedule);
        std::cerr << "tessel: an imported tuning record for " << r.group.name << " at " << r.workload.to_string()
                  << " was refused: " << to_string(m.status) << ": " << m.message << "\n";
        hit = cache.lookup(result.key);
    }
    if (!hit) return false;
    if (hit->measured_by == kMeasured || hit->measured_by == kVerified || !measuring) {
        result.schedule = sched::schedule_from_json(hit->schedule);
        result.source = ScheduleProvenance::Database;
        result.time_ms = hit->median_ms;
        result.decision = "database hit (" + hit->measured_by + ", " + hit->cost_model_version + "): " + hit->notes;
        return true;
    }
    if (log) *log << "database holds only the cost model's unmeasured pick (or an unverified import) for this key; measuring\n";
    return false;
}

void commit_result(TuningCache &cache, const TuneResult &result, size_t winner, const CostModel &model) {
    TuningRecord rec;
    rec.key = result.key;
    rec.schedule = sched::to_json(result.schedule);
    rec.median_ms = result.time_ms;
    if (result.ranked[winner].measured) rec.samples = result.ranked[winner].measured->samples;
    rec.cost_model_version = model.version();
    rec.measured_by = result.source == ScheduleProvenance::Measured ? kMeasured : kModel;
    rec.created_unix = (int64_t)std::time(nullptr);
    rec.notes = result.params.to_string() + "; " + result.decision;
    cache.commit(rec);
}

}  // namespace tessel::autosched
