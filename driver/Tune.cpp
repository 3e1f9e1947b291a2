#include "driver/Tune.h"

#include "driver/TextFile.h"

#include "autoscheduler/Coverage.h"
#include "autoscheduler/GroupKindSpace.h"
#include "autoscheduler/TuningKey.h"
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
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

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
                if (why) *why = std::string(names[i]) + "=" + std::to_string(dims[i].second) +
                                " conflicts with the graph's static " + std::to_string(dim.size);
                return false;
            }
        } else if (dim.kind == dsl::Dim::Kind::Symbol) {
            auto [it, fresh] = symbols.insert({dim.symbol, dims[i].second});
            if (!fresh && it->second != dims[i].second) {
                if (why) *why = "symbol " + dim.symbol + " would be both " + std::to_string(it->second) + " and " +
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

/** A database's lookups without its commits (a read-only database, or none at all). */
class LookupOnlyCache : public autosched::TuningCache {
public:
    explicit LookupOnlyCache(autosched::TuningDatabase *db) : db_(db) {}
    std::optional<autosched::TuningRecord> lookup(const autosched::TuningKey &key) override {
        return db_ ? db_->lookup(key) : std::nullopt;
    }
    void commit(const autosched::TuningRecord &) override {}
    std::vector<autosched::TuningRecord> top_k(const autosched::TuningKey &key, int k) override {
        return db_ ? db_->top_k(key, k) : std::vector<autosched::TuningRecord>{};
    }

private:
    autosched::TuningDatabase *db_;
};

void print_result(const autosched::TuneResult &r, const TuneOptions &o, std::ostream &out) {
    // A database hit carries the stored schedule, not the point it came from: name the nest.
    const std::string winner = r.params.nest.empty() ? r.schedule.description : r.params.to_string();
    out << "  " << r.decision << "\n  winner: " << winner << " -> " << std::fixed << std::setprecision(3)
        << r.time_ms << " ms (" << r.source << "), tuned in " << std::setprecision(1) << r.seconds << " s\n";
    if (r.source == "database") return;
    out << "  " << r.prune.to_string() << "\n";
    const int show = std::max(o.explain ? o.explain_top : 0, r.measured_count);
    for (int i = 0; i < show && i < (int)r.ranked.size(); i++) {
        const auto &c = r.ranked[i];
        out << "  #" << std::setw(2) << i + 1 << " " << std::left << std::setw(34) << c.params.to_string() << std::right
            << " model " << std::setw(8) << std::setprecision(3) << c.cost.total_s() * 1e3 << " ms";
        if (c.measured)
            out << "  measured " << (c.measured->ok() ? std::to_string(c.measured->median_ms).substr(0, 7) + " ms"
                                                    : autosched::to_string(c.measured->status) + ": " + c.measured->message);
        if (!c.ptxas.empty()) out << "  ptxas " << c.ptxas;
        out << "\n";
        if (o.explain && i < o.explain_top) out << "       " << c.cost.explain() << "\n";
    }
}

/** The group's facts the search space needs beyond M, K, N: the epilogue's cost and how w is
 * stored (`rhs_panel_width`: the lowering's panel fact, lower_group(g, group).rhs_panel_width,
 * so the space offers nests that read those panels in place). */
void add_group_facts(const dsl::Graph &g, const dsl::FusionGroup &group, int64_t rhs_panel_width, Workload &w) {
    autosched::add_epilogue_cost(g, group.nodes, w);
    w.rhs_panel_width = rhs_panel_width;
}

}  // namespace

std::optional<Workload> group_workload(const dsl::Graph &g, const dsl::FusionGroup &group,
                                       const std::map<std::string, int64_t> &symbols, const lower::LoweredGroup *lowered) {
    const bool matmul = group.kind == dsl::GroupKind::MatmulEpilogue;
    if (matmul && !group_dims(g, group)) return std::nullopt;
    std::optional<lower::LoweredGroup> own;
    if (!lowered) lowered = &own.emplace(lower::lower_group(g, group));
    if (!matmul) return autosched::group_kind_workload(g, group, lower::group_shape(*lowered), symbols);
    const auto e = dsl::group_extents(g, group).concrete(symbols);
    if (!e) return std::nullopt;
    Workload w{e->at("M"), e->at("K"), e->at("N")};
    add_group_facts(g, group, lowered->rhs_panel_width, w);
    return w;
}

namespace {

/** Tunes `fg` at one shape: calibrations and budgets from the results so far, then the tuner,
 * the printed result and the --compare hook. */
void tune_one(const dsl::Graph &g, const dsl::FusionGroup &fg, const std::string &name,
              const std::map<std::string, int64_t> &symbols, const Workload &w, const TuneOptions &o,
              const Halide::Target &target, autosched::AnalyticalCostModel &model, autosched::Measurer *measurer,
              autosched::TuningDatabase &db, autosched::TunerParams &params, std::vector<autosched::TuneResult> &results,
              std::vector<Workload> &workloads, int &failures, std::ostream &out) {
    // Calibrations fitted so far steer the model and the budget for the next shapes.
    for (const auto &[cls, c] : autosched::fit_calibrations(model.target(), results, workloads)) model.set_calibration(cls, c);
    // A class whose candidates measured within noise of each other has a rank correlation of
    // noise: a doubled budget would measure more ties, so only ranked classes count.
    for (const auto &row : autosched::coverage_by_class(results))
        if (!row.within_noise()) params.class_rank_correlation[row.shape_class] = row.rank_correlation;
    autosched::Tuner tuner(model, measurer, &db, params);
    out << "\ngroup " << fg.name << " [" << dsl::to_string(fg.kind) << "] shape " << name << " (" << w.to_string() << ", "
        << w.shape_class() << ")\n";
    autosched::TuneResult r = tuner.tune(make_request(g, fg, symbols, w, target), &out);
    out << "\n";
    print_result(r, o, out);
    if (o.after_each) o.after_each(g, fg, symbols, w, r, out);
    if (r.schedule.steps.empty()) failures++;
    results.push_back(std::move(r));
    workloads.push_back(w);
}

/** An elementwise or reduction group: its sizes are the graph's symbols, bound by --dim and, by
 * name, by each shape's M, K and N (so a softmax over [M, N] is tuned at the suite's M and N, and
 * the layernorm before a matmul at that matmul's M and K). Shapes that leave a size of the group
 * unbound, or repeat sizes already tuned, are skipped. */
void tune_group_kind(const dsl::Graph &g, const dsl::FusionGroup &fg, const std::vector<std::pair<std::string, Workload>> &requested,
                     const TuneOptions &o, const Halide::Target &target, autosched::AnalyticalCostModel &model,
                     autosched::Measurer *measurer, autosched::TuningDatabase &db, autosched::TunerParams &params,
                     std::vector<autosched::TuneResult> &results, std::vector<Workload> &workloads, int &failures,
                     std::ostream &out) {
    std::vector<std::pair<std::string, Workload>> shapes = requested;
    if (shapes.empty()) shapes.push_back({"graph", Workload{}});  // the graph's static sizes and --dim
    if (requested.empty())
        for (const auto &s : autosched::load_shape_suite(o.suite.empty() ? TESSEL_SHAPE_SUITE : o.suite))
            shapes.push_back({s.name, s.workload});
    const sched::GroupShape shape = lower::group_shape(lower::lower_group(g, fg));
    std::set<std::string> tuned;
    for (const auto &[name, mkn] : shapes) {
        std::map<std::string, int64_t> symbols = o.dims;
        if (name != "graph")
            for (const auto &[sym, size] : {std::pair<std::string, int64_t>{"M", mkn.M}, {"K", mkn.K}, {"N", mkn.N}})
                symbols.insert({sym, size});
        const auto w = autosched::group_kind_workload(g, fg, shape, symbols);
        if (!w) {
            if (!requested.empty()) out << "group " << fg.name << ": a size is not bound at " << name << "; skipped\n";
            continue;
        }
        if (!tuned.insert(w->to_string()).second) continue;
        tune_one(g, fg, name, symbols, *w, o, target, model, measurer, db, params, results, workloads, failures, out);
    }
}

}  // namespace

int run_tune(const TuneOptions &o, std::ostream &out) {
    // Validate every argument before anything is created on disk (the database).
    std::vector<std::pair<std::string, Workload>> requested;
    for (const auto &s : o.shapes) requested.push_back({s, parse_shape(s)});
    if (!(o.params.timeout_seconds > 0) || !std::isfinite(o.params.timeout_seconds))
        throw std::invalid_argument("--timeout " + std::to_string(o.params.timeout_seconds) +
                                    ": expected a positive number of seconds");
    const std::string text = read_text_file(o.file);
    const dsl::Graph g = dsl::simplify_text(text, o.file).graph;
    const Halide::Target target = parse_target(o.target);
    const dsl::FusionPlan plan = dsl::plan_fusion(g, lower::fusion_options(target));

    autosched::TuningDatabase db(o.db);
    // Every result is committed: refuse now, not after the measuring, when that cannot work.
    db.check_writable();
    autosched::TunerParams params = o.params;
    if (!target.has_gpu_feature()) {
        // The cost model's peak and bandwidth are this machine's: measured once, then stored.
        params.machine = db.machine_numbers(autosched::machine_identity(), autosched::probe_isa(target));
        if (!params.machine) {
            params.machine = autosched::measure_machine(target);
            db.store_machine_numbers(*params.machine);
            out << "measured this machine once for the cost model (stored in " << o.db << "; `tessel db probe` measures again): "
                << params.machine->to_string() << "\n";
        }
    }
    const autosched::TargetModel tm = autosched::TargetModel::for_target(target).with_numbers(params.machine);
    autosched::AnalyticalCostModel model(tm);
    std::unique_ptr<autosched::IsolatedMeasurer> measurer;
    if (tm.device == sched::Device::Cuda) {
        out << "target has CUDA and no GPU is used here: candidates are ranked by the cost model and checked with "
               "ptxas -v for sm_90, not measured\n";
        params.measure = false;
    } else if (params.measure) {
        measurer = std::make_unique<autosched::IsolatedMeasurer>();
    }
    out << tm.to_string() << "\ndatabase " << o.db << "\n";

    std::vector<autosched::TuneResult> results;
    std::vector<Workload> workloads;
    int failures = 0;
    for (const auto &fg : plan.groups) {
        if (fg.kind != dsl::GroupKind::MatmulEpilogue) {
            tune_group_kind(g, fg, requested, o, target, model, measurer.get(), db, params, results, workloads, failures, out);
            continue;
        }
        auto dims = group_dims(g, fg);
        if (!dims) {
            out << "group " << fg.name << ": not a 2-D matmul+epilogue group; skipped\n";
            continue;
        }
        const int64_t rhs_panel_width = lower::lower_group(g, fg).rhs_panel_width;  // once per group
        // Shapes: given, else the graph's own (all static), else the suite's that fit.
        std::vector<std::pair<std::string, Workload>> shapes = requested;
        if (shapes.empty() && dims->M.is_static() && dims->K.is_static() && dims->N.is_static())
            shapes.push_back({"graph", Workload{dims->M.size, dims->K.size, dims->N.size}});
        const bool from_suite = shapes.empty();
        if (from_suite)
            for (const auto &s : autosched::load_shape_suite(o.suite.empty() ? TESSEL_SHAPE_SUITE : o.suite))
                shapes.push_back({s.name, s.workload});

        for (auto [name, w] : shapes) {
            add_group_facts(g, fg, rhs_panel_width, w);
            std::map<std::string, int64_t> symbols = o.dims;
            std::string why;
            if (!bind_symbols(*dims, w, symbols, &why)) {
                if (from_suite) continue;  // the suite covers graphs of every width; skip what does not fit
                throw std::invalid_argument("shape " + w.to_string() + ": " + why);
            }
            tune_one(g, fg, name, symbols, w, o, target, model, measurer.get(), db, params, results, workloads, failures, out);
        }
    }
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

std::optional<autosched::TuneResult> autoschedule_group(const dsl::Graph &g, const dsl::FusionGroup &fg,
                                                        const std::string &db_path, const Halide::Target &target,
                                                        const std::map<std::string, int64_t> &symbols, bool measure,
                                                        std::ostream *log, const lower::LoweredGroup *lowered) {
    auto w = group_workload(g, fg, symbols, lowered);
    if (!w) return std::nullopt;
    // Lookups need only reading: a read-only database (or none) still serves, and then the
    // pick is not stored; said once per process on stderr.
    std::string note;
    std::unique_ptr<autosched::TuningDatabase> db = autosched::TuningDatabase::open_for_reading(db_path, &note);
    static bool noted = false;
    if (!note.empty() && !noted) {
        std::cerr << "tessel: " << note << "\n";
        noted = true;
    }
    // This machine's numbers when stored (`tessel db probe`, `tessel tune`); nominal otherwise.
    std::optional<autosched::MachineNumbers> numbers;
    if (db && !target.has_gpu_feature()) numbers = db->machine_numbers(autosched::machine_identity(), autosched::probe_isa(target));
    const autosched::TargetModel tm = autosched::TargetModel::for_target(target).with_numbers(numbers);
    autosched::AnalyticalCostModel model(tm);
    LookupOnlyCache lookup_only(db.get());
    autosched::TuningCache *cache = db && db->writable() ? static_cast<autosched::TuningCache *>(db.get()) : &lookup_only;
    autosched::TunerParams params;
    params.machine = numbers;
    params.measure = measure && tm.device == sched::Device::Cpu;
    std::unique_ptr<autosched::IsolatedMeasurer> measurer;
    if (params.measure) measurer = std::make_unique<autosched::IsolatedMeasurer>();
    autosched::Tuner tuner(model, measurer.get(), cache, params);
    auto r = tuner.tune(make_request(g, fg, symbols, *w, target), measure ? log : nullptr);
    if (log) *log << "autoscheduler for " << fg.name << " at " << w->to_string() << ": " << r.decision << " ("
                  << r.params.to_string() << ")\n";
    return r;
}

}  // namespace tessel
