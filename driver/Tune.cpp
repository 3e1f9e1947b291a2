#include "driver/Tune.h"

#include "compiler/Plan.h"
#include "dsl/ir/Parser.h"

#include "autoscheduler/Coverage.h"
#include "autoscheduler/GroupKindSpace.h"
#include "autoscheduler/JobPayload.h"
#include "autoscheduler/JobQueue.h"
#include "autoscheduler/TuningKey.h"
#include "autoscheduler/TuningStore.h"
#include "codegen/Compile.h"
#include "dsl/Simplify.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "dsl/passes/Fusion.h"
#include "dsl/passes/GroupExtents.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/ScheduleJson.h"

#include <cmath>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#ifndef TESSEL_SHAPE_SUITE
#define TESSEL_SHAPE_SUITE "bench/shapes.txt"
#endif

namespace tessel {

using autosched::Workload;

namespace {

/** "512x1024x4096" -> Workload. */
Workload parse_shape(const std::string &s) {
    Workload w;
    char x1 = 0, x2 = 0;
    std::istringstream is(s);
    if (!(is >> w.M >> x1 >> w.K >> x2 >> w.N) || x1 != 'x' || x2 != 'x' || w.M <= 0 || w.K <= 0 || w.N <= 0 || !is.eof())
        throw std::invalid_argument("--shapes '" + s + "': expected MxKxN with positive sizes, e.g. 1x4096x4096");
    return w;
}

/** The M, K, N dims of a 2-D matmul+epilogue group (its GroupExtents), or nullopt. */
struct GroupDims {
    dsl::Dim M, K, N;
};

std::optional<GroupDims> group_dims(const dsl::Graph &g, const dsl::FusionGroup &group) {
    if (group.kind != dsl::GroupKind::MatmulEpilogue) return std::nullopt;
    const dsl::GroupExtents e = dsl::group_extents(g, group);
    if (!e.has("M") || !e.has("K") || !e.has("N")) return std::nullopt;
    return GroupDims{e.extents.at("M").dim, e.extents.at("K").dim, e.extents.at("N").dim};
}

/** Binds the group's symbolic M, K, N to `w`; false when a static dim disagrees. */
bool bind_symbols(const GroupDims &d, const Workload &w, std::map<std::string, int64_t> &symbols, std::string *why) {
    const std::pair<const dsl::Dim *, int64_t> dims[] = {{&d.M, w.M}, {&d.K, w.K}, {&d.N, w.N}};
    const char *names[] = {"M", "K", "N"};
    for (int i = 0; i < 3; i++) {
        const dsl::Dim &dim = *dims[i].first;
        if (dim.is_static()) {
            if (dim.size != dims[i].second) {
                if (why)
                    *why = std::string(names[i]) + "=" + std::to_string(dims[i].second) + " conflicts with the graph's static " +
                           std::to_string(dim.size);
                return false;
            }
        } else if (dim.kind == dsl::Dim::Kind::Symbol) {
            auto [it, fresh] = symbols.insert({dim.symbol, dims[i].second});
            if (!fresh && it->second != dims[i].second) {
                if (why)
                    *why = "symbol " + dim.symbol + " would be both " + std::to_string(it->second) + " and " +
                           std::to_string(dims[i].second);
                return false;
            }
        }
    }
    return true;
}

autosched::TuneRequest make_request(const dsl::Graph &g, const dsl::FusionGroup &fg,
                                    const std::map<std::string, int64_t> &symbols, const Workload &w,
                                    const Halide::Target &target) {
    autosched::TuneRequest r;
    r.graph = &g;
    r.group = fg;
    r.symbols = symbols;
    r.workload = w;
    r.target = target;
    return r;
}

void print_result(const autosched::TuneResult &r, const TuneOptions &o, std::ostream &out) {
    // A database hit carries the stored schedule, not the point it came from: name the nest.
    const std::string winner = r.params.nest == autosched::NestFamily::None ? r.schedule.description : r.params.to_string();
    out << "  " << r.decision << "\n  winner: " << winner << " -> " << std::fixed << std::setprecision(3) << r.time_ms << " ms ("
        << r.source_text() << "), tuned in " << std::setprecision(1) << r.seconds << " s\n";
    if (r.source == ScheduleProvenance::Database) return;
    out << "  " << r.prune.to_string() << "\n";
    const int show = std::max(o.explain ? o.explain_top : 0, r.measured_count);
    for (int i = 0; i < show && i < (int)r.ranked.size(); i++) {
        const auto &c = r.ranked[i];
        out << "  #" << std::setw(2) << i + 1 << " " << std::left << std::setw(34) << c.params.to_string() << std::right
            << " model " << std::setw(8) << std::setprecision(3) << c.cost.total_s() * 1e3 << " ms";
        if (c.measured)
            out << "  measured "
                << (c.measured->ok() ? std::to_string(c.measured->median_ms).substr(0, 7) + " ms"
                                     : autosched::to_string(c.measured->status) + ": " + c.measured->message);
        if (!c.ptxas.empty()) out << "  ptxas " << c.ptxas;
        out << "\n";
        if (o.explain && i < o.explain_top) out << "       " << c.cost.explain() << "\n";
    }
}

/** Tunes `fg` at one shape: calibrations and budgets from the results so far, then the tuner,
 * the printed result and the --compare hook. */
void tune_one(const dsl::Graph &g, const dsl::FusionGroup &fg, const std::string &name,
              const std::map<std::string, int64_t> &symbols, const Workload &w, const TuneOptions &o,
              const Halide::Target &target, autosched::AnalyticalCostModel &model, autosched::Measurer *measurer,
              autosched::TuningStore &db, autosched::TunerParams &params, std::vector<autosched::TuneResult> &results,
              std::vector<Workload> &workloads, int &failures, std::ostream &out) {
    // Calibrations fitted so far steer the model and the budget for the next shapes.
    for (const auto &[cls, c] : autosched::fit_calibrations(model.target(), results, workloads)) model.set_calibration(cls, c);
    // A class whose candidates measured within noise of each other has a rank correlation of
    // noise: a doubled budget would measure more ties, so only ranked classes count.
    for (const auto &row : autosched::coverage_by_class(results))
        if (!row.within_noise()) params.class_rank_correlation[row.shape_class] = row.rank_correlation;
    autosched::Tuner tuner(model, measurer, &db, params);
    out << "\ngroup " << fg.name << " [" << dsl::to_string(fg.kind) << "] shape " << name << " (" << w.to_string() << ", "
        << autosched::to_string(w.shape_class()) << ")\n";
    autosched::TuneResult r = tuner.tune(make_request(g, fg, symbols, w, target), &out);
    out << "\n";
    print_result(r, o, out);
    if (o.after_each) o.after_each(g, fg, symbols, w, r, out);
    if (r.schedule.steps.empty()) failures++;
    results.push_back(std::move(r));
    workloads.push_back(w);
}

/** The symbol bindings to tune at, each named: without --shapes, the graph's own (--dim and its
 * static sizes), then, when that leaves a symbol unbound, the suite's shapes; with --shapes,
 * each shape bound to every matmul+epilogue group's M, K, N (and, by name, to symbols called M,
 * K and N: a softmax over [M, N] is tuned at the shape's M and N). A shape that conflicts with a
 * static size is an error when asked for and skipped when it comes from the suite. */
std::vector<std::pair<std::string, std::map<std::string, int64_t>>> tune_bindings(
    const dsl::Graph &graph, const Halide::Target &target, const TuneOptions &o,
    const std::vector<std::pair<std::string, Workload>> &requested) {
    std::vector<std::pair<std::string, std::map<std::string, int64_t>>> out;
    std::set<std::map<std::string, int64_t>> seen;
    auto add = [&](const std::string &name, const std::map<std::string, int64_t> &symbols) {
        if (seen.insert(symbols).second) out.push_back({name, symbols});
    };
    const std::set<std::string> symbols = graph_symbols(graph);
    bool all_bound = true;
    for (const auto &s : symbols) all_bound = all_bound && o.dims.count(s);
    std::vector<std::pair<std::string, Workload>> shapes = requested;
    if (requested.empty()) {
        add("graph", o.dims);
        if (all_bound) return out;
        for (const auto &s : autosched::load_shape_suite(o.suite.empty() ? TESSEL_SHAPE_SUITE : o.suite))
            shapes.push_back({s.name, s.workload});
    }
    // The matmul groups' M, K, N dims, from the graph planned at --dim (the groups do not change
    // with the sizes; their extents name the symbols to bind).
    PlanOptions probe;
    probe.symbols = o.dims;
    probe.schedules.autoschedule = false;
    const PlannedProgram p = plan(graph, target, probe);
    std::vector<GroupDims> dims;
    for (const auto &fg : p.fusion.groups)
        if (auto d = group_dims(p.graph, fg)) dims.push_back(*d);
    for (const auto &[name, w] : shapes) {
        std::map<std::string, int64_t> by_name = o.dims;
        for (const auto &[sym, size] : {std::pair<std::string, int64_t>{"M", w.M}, {"K", w.K}, {"N", w.N}})
            if (symbols.count(sym)) by_name.insert({sym, size});
        bool any = false;
        for (const GroupDims &d : dims) {
            std::map<std::string, int64_t> bound = o.dims;
            std::string why;
            if (!bind_symbols(d, w, bound, &why)) {
                if (!requested.empty()) throw std::invalid_argument("shape " + w.to_string() + ": " + why);
                continue;
            }
            for (const auto &[sym, size] : by_name) bound.insert({sym, size});
            add(name, bound);
            any = true;
        }
        if (!any) add(name, by_name);
    }
    return out;
}

using Bindings = std::vector<std::pair<std::string, std::map<std::string, int64_t>>>;
using GroupVisitor =
    std::function<void(const std::string &binding, const std::map<std::string, int64_t> &symbols, const PlannedProgram &p,
                       const dsl::FusionGroup &group, const std::optional<autosched::Workload> &workload)>;

/** Plans the graph at each binding as `tessel run` and `tessel lib` will at those sizes (the same
 * front door: remat, layouts, prepared groups, the compile budget), so each group visited is a
 * group they compile (elementwise programs are not visited: they have no schedule);
 * `workload` is nullopt where a size of the group is not bound. */
void for_each_planned_group(const dsl::Graph &graph, const Halide::Target &target, const Bindings &bindings,
                            const GroupVisitor &visit) {
    for (const auto &[name, symbols] : bindings) {
        PlanOptions po;
        po.symbols = symbols;
        po.schedules.autoschedule = false;
        const PlannedProgram p = plan(graph, target, po);
        for (size_t i = 0; i < p.fusion.groups.size(); i++) {
            const dsl::FusionGroup &fg = p.fusion.groups[i];
            if (p.budget.program[i]) continue;  // an elementwise program past the compile budget: no schedule to tune
            visit(name, symbols, p, fg, group_workload(p.graph, fg, symbols));
        }
    }
}

/** --enqueue: each group at each binding becomes a job on the server (JobQueue.h) instead of
 * being measured here; keys the server already has a record for are not enqueued. The payload
 * is what a worker plans from (driver/FleetTuning.h): the graph's text, the binding, the group. */
int enqueue_tune(const TuneOptions &o, const dsl::Graph &graph, const Halide::Target &target, const Bindings &bindings,
                 std::ostream &out) {
    if (!autosched::is_server_database(o.db))
        throw std::invalid_argument("--enqueue needs a server: --db postgresql://user@host:port/dbname (got '" + o.db + "')");
    std::ifstream f(o.file);
    std::stringstream text;
    text << f.rdbuf();
    autosched::JobQueue queue(o.db);
    std::vector<autosched::JobSpec> jobs;
    std::set<std::string> seen;
    int64_t hits = 0;
    const GroupVisitor enqueue_group = [&](const std::string &name, const std::map<std::string, int64_t> &symbols,
                                           const PlannedProgram &p, const dsl::FusionGroup &fg,
                                           const std::optional<autosched::Workload> &w) {
        if (!w) return;
        autosched::JobSpec job;
        job.key = autosched::Tuner::key_for(make_request(p.graph, fg, symbols, *w, target));
        if (!seen.insert(job.key.to_json().dump()).second) return;
        if (queue.store().lookup(job.key)) {
            hits++;
            return;
        }
        job.machine_class = o.machine_class;
        job.max_attempts = o.max_attempts;
        autosched::TuneJobPayload payload;
        payload.graph = text.str();
        payload.file = o.file;
        payload.symbols = symbols;
        payload.group = fg.name;
        payload.shape = name;
        payload.budget = o.params.budget;
        payload.repeats = o.params.repeats;
        payload.timeout_seconds = o.params.timeout_seconds;
        payload.verify = o.params.verify;
        payload.measure = o.params.measure;
        job.payload = payload.to_json();
        jobs.push_back(std::move(job));
    };
    for_each_planned_group(graph, target, bindings, enqueue_group);
    const int64_t added = queue.enqueue(jobs);
    std::vector<autosched::TuningKey> keys;
    for (const auto &j : jobs) keys.push_back(j.key);
    out << "enqueued " << added << " job" << (added == 1 ? "" : "s") << " on " << queue.store().location() << " for target "
        << target.to_string() << (o.machine_class.empty() ? "" : " and machine class '" + o.machine_class + "'") << " ("
        << (int64_t)jobs.size() - added << " already queued or done, " << hits
        << " already in the database); run `tessel worker --db URL` on hosts of that target, `tessel jobs --db URL` to watch\n";
    if (!o.wait) return 0;
    std::string last;
    for (;;) {
        const autosched::QueueStatus s = queue.status_of(keys);
        const std::string line = std::to_string(s.done) + " done, " + std::to_string(s.running) + " running, " +
                                 std::to_string(s.queued) + " queued, " + std::to_string(s.failed) + " failed";
        if (line != last) out << "waiting for the workers: " << line << "\n" << std::flush;
        last = line;
        if (s.queued + s.running == 0) {
            for (const auto &[id, error] : s.failures) out << "job " << id << " failed: " << error << "\n";
            if (s.failed) return 1;
            break;
        }
        std::this_thread::sleep_for(std::chrono::duration<double>(o.wait_poll_seconds));
    }
    TuneOptions again = o;
    again.enqueue = false;
    out << "every job is done; the results, from " << queue.store().location() << ":\n";
    return run_tune(again, out);
}

}  // namespace

int run_tune(const TuneOptions &o, std::ostream &out) {
    // Validate every argument before anything is created on disk (the database).
    std::vector<std::pair<std::string, Workload>> requested;
    for (const auto &s : o.shapes) requested.push_back({s, parse_shape(s)});
    if (!(o.params.timeout_seconds > 0) || !std::isfinite(o.params.timeout_seconds))
        throw std::invalid_argument("--timeout " + std::to_string(o.params.timeout_seconds) +
                                    ": expected a positive number of seconds");
    const dsl::Graph graph = dsl::parse_file(o.file);
    check_symbols(graph, o.dims);
    const Halide::Target target = parse_target(o.target);
    const auto bindings = tune_bindings(graph, target, o, requested);
    if (o.enqueue) return enqueue_tune(o, graph, target, bindings, out);

    const std::unique_ptr<autosched::TuningStore> store = autosched::open_tuning_store(o.db);
    autosched::TuningStore &db = *store;
    // Every result is committed: refuse now, not after the measuring, when that cannot work.
    db.check_writable();
    autosched::TunerParams params = o.params;
    if (!target.has_gpu_feature()) {
        // The cost model's peak and bandwidth are this machine's: measured once, then stored.
        params.machine = db.machine_numbers(autosched::machine_identity(), autosched::probe_isa(target));
        if (!params.machine) {
            params.machine = autosched::measure_machine(target);
            db.store_machine_numbers(*params.machine);
            out << "measured this machine once for the cost model (stored in " << db.location()
                << "; `tessel db probe` measures again): " << params.machine->to_string() << "\n";
        }
    }
    const autosched::TargetModel tm = autosched::TargetModel::for_target(target).with_numbers(params.machine);
    autosched::AnalyticalCostModel model(tm);
    std::unique_ptr<autosched::IsolatedMeasurer> measurer;
    if (tm.device == sched::Device::Cuda) {
        out << "target has CUDA and no GPU is used here: candidates are ranked by the cost model and checked with "
               "ptxas -v for "
            << tm.cuda.ptx_arch() << ", not measured\n";
        params.measure = false;
    } else if (params.measure) {
        measurer = std::make_unique<autosched::IsolatedMeasurer>();
    }
    out << tm.to_string() << "\ndatabase " << db.location() << "\n";

    std::vector<autosched::TuneResult> results;
    std::vector<Workload> workloads;
    int failures = 0;
    std::set<std::string> tuned;
    const GroupVisitor tune_group = [&](const std::string &name, const std::map<std::string, int64_t> &symbols,
                                        const PlannedProgram &p, const dsl::FusionGroup &fg,
                                        const std::optional<autosched::Workload> &w) {
        if (!w) {
            if (fg.kind == dsl::GroupKind::AttentionBackward)  // compiler/ScheduleSelection.cpp's group_workload
                out << "group " << fg.name << " [" << dsl::to_string(fg.kind)
                    << "]: no search space for this kind yet (the library's cpu_attention_backward serves it); skipped\n";
            else if (!requested.empty() || name == "graph")
                out << "group " << fg.name << " [" << dsl::to_string(fg.kind) << "]: a size is not bound at " << name
                    << "; skipped\n";
            return;
        }
        if (!tuned.insert(fg.name + " " + w->to_string()).second) return;
        tune_one(p.graph, fg, name, symbols, *w, o, target, model, measurer.get(), db, params, results, workloads, failures, out);
    };
    for_each_planned_group(graph, target, bindings, tune_group);
    if (results.empty()) {
        out << "no group of " << o.file << " has every size bound by the requested shapes and --dim\n";
        return 1;
    }
    if (o.coverage) {
        const auto cov = autosched::coverage_by_class(results);
        if (!cov.empty()) {
            out << "\nworkload coverage (measured candidates, model order vs measured order):\n" << autosched::to_string(cov);
            out << "\ncalibration experiment (same measurements, re-ranked under each calibration):\n"
                << autosched::to_string(autosched::calibration_experiment(tm, results, workloads));
        } else {
            out << "\nworkload coverage: nothing measured in this run (all database hits or model-only)\n";
        }
    }
    return failures ? 1 : 0;
}

}  // namespace tessel
