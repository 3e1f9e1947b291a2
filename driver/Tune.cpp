#include "driver/Tune.h"

#include "driver/TextFile.h"

#include "autoscheduler/Coverage.h"
#include "autoscheduler/TuningKey.h"
#include "codegen/Compile.h"
#include "dsl/Simplify.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "dsl/passes/Fusion.h"
#include "schedules/ScheduleJson.h"

#include <fstream>
#include <iomanip>
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

/** The symbol names a group's M, K, N come from (empty when the dim is static). */
struct GroupDims {
    dsl::Dim M, K, N;
};

std::optional<GroupDims> group_dims(const dsl::Graph &g, const lower::GroupSpec &group) {
    for (dsl::ValueId v : group.nodes) {
        const dsl::Node &n = g.node(v);
        if (n.op != dsl::Op::MatMul || n.type.rank() != 2) continue;
        const dsl::Node &y = g.node(group.outputs.at(0));
        if (y.type.rank() != 2) return std::nullopt;
        return GroupDims{dsl::resolve_dim(g, y.type.dims[0]), dsl::resolve_dim(g, g.node(n.inputs[0]).type.dims[1]),
                         dsl::resolve_dim(g, y.type.dims[1])};
    }
    return std::nullopt;
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

autosched::TuneRequest make_request(const dsl::Graph &g, const dsl::FusionGroup &fg, const std::string &graph_text,
                                    const std::string &graph_name, const std::map<std::string, int64_t> &symbols,
                                    const Workload &w, const std::string &target) {
    autosched::TuneRequest r;
    r.graph = &g;
    r.group = {fg.name, fg.nodes, fg.outputs};
    r.graph_text = graph_text;
    r.graph_name = graph_name;
    r.group_hash = autosched::structural_hash(g, fg);
    r.symbols = symbols;
    r.workload = w;
    r.target = target;
    r.numeric_mode = g.mode == dsl::NumericMode::Fast ? "fast" : "strict";
    return r;
}

void print_result(const autosched::TuneResult &r, const TuneOptions &o, std::ostream &out) {
    out << "  " << r.decision << "\n  winner: " << r.params.to_string() << " -> " << std::fixed << std::setprecision(3)
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

}  // namespace

std::optional<Workload> group_workload(const dsl::Graph &g, const lower::GroupSpec &group,
                                       const std::map<std::string, int64_t> &symbols) {
    auto d = group_dims(g, group);
    if (!d) return std::nullopt;
    auto size = [&](const dsl::Dim &dim) -> std::optional<int64_t> {
        if (dim.is_static()) return dim.size;
        if (dim.kind == dsl::Dim::Kind::Symbol && symbols.count(dim.symbol)) return symbols.at(dim.symbol);
        return std::nullopt;
    };
    auto M = size(d->M), K = size(d->K), N = size(d->N);
    if (!M || !K || !N) return std::nullopt;
    Workload w{*M, *K, *N};
    autosched::add_epilogue_cost(g, group.nodes, w);
    return w;
}

int run_tune(const TuneOptions &o, std::ostream &out) {
    // Validate every argument before anything is created on disk (the database).
    std::vector<std::pair<std::string, Workload>> requested;
    for (const auto &s : o.shapes) requested.push_back({s, parse_shape(s)});
    const std::string text = read_text_file(o.file);
    const dsl::Graph g = dsl::simplify_text(text, o.file).graph;
    const Halide::Target target = parse_target(o.target);
    dsl::FusionOptions fo;
    fo.target = target.has_gpu_feature() ? dsl::TargetResources::cuda_sm90() : dsl::TargetResources::host();
    const dsl::FusionPlan plan = dsl::plan_fusion(g, fo);

    const autosched::TargetModel tm = autosched::TargetModel::for_target(target);
    autosched::AnalyticalCostModel model(tm);
    autosched::TuningDatabase db(o.db);
    std::unique_ptr<autosched::IsolatedMeasurer> measurer;
    autosched::TunerParams params = o.params;
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
        if (fg.kind != "matmul+epilogue") continue;
        const lower::GroupSpec spec{fg.name, fg.nodes, fg.outputs};
        auto dims = group_dims(g, spec);
        if (!dims) {
            out << "group " << fg.name << ": not a 2-D matmul+epilogue group; skipped\n";
            continue;
        }
        // Shapes: given, else the graph's own (all static), else the suite's that fit.
        std::vector<std::pair<std::string, Workload>> shapes = requested;
        if (shapes.empty() && dims->M.is_static() && dims->K.is_static() && dims->N.is_static())
            shapes.push_back({"graph", Workload{dims->M.size, dims->K.size, dims->N.size}});
        const bool from_suite = shapes.empty();
        if (from_suite)
            for (const auto &s : autosched::load_shape_suite(o.suite.empty() ? TESSEL_SHAPE_SUITE : o.suite))
                shapes.push_back({s.name, s.workload});

        for (auto [name, w] : shapes) {
            autosched::add_epilogue_cost(g, fg.nodes, w);
            std::map<std::string, int64_t> symbols;
            std::string why;
            if (!bind_symbols(*dims, w, symbols, &why)) {
                if (from_suite) continue;  // the suite covers graphs of every width; skip what does not fit
                throw std::invalid_argument("shape " + w.to_string() + ": " + why);
            }
            // Calibrations fitted so far steer the model and the budget for the next shapes.
            for (const auto &[cls, c] : autosched::fit_calibrations(tm, results, workloads)) model.set_calibration(cls, c);
            for (const auto &row : autosched::coverage_by_class(results))
                params.class_rank_correlation[row.shape_class] = row.rank_correlation;
            autosched::Tuner tuner(model, measurer.get(), &db, params);
            out << "\ngroup " << fg.name << " shape " << name << " (" << w.to_string() << ", " << w.shape_class() << ")\n";
            autosched::TuneResult r = tuner.tune(make_request(g, fg, text, o.file, symbols, w, o.target), &out);
            out << "\n";
            print_result(r, o, out);
            if (o.after_each) o.after_each(w, r, g, out);
            if (r.schedule.steps.empty()) failures++;
            results.push_back(std::move(r));
            workloads.push_back(w);
        }
    }
    if (results.empty()) {
        out << "no matmul+epilogue group of " << o.file << " fits the requested shapes\n";
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

std::optional<autosched::TuneResult> autoschedule_group(const dsl::Graph &g, const std::string &graph_text,
                                                        const std::string &graph_name, const std::string &group_name,
                                                        const std::string &db_path, const std::string &target,
                                                        const std::map<std::string, int64_t> &symbols, bool measure,
                                                        std::ostream *log) {
    const Halide::Target t = parse_target(target);
    dsl::FusionOptions fo;
    fo.target = t.has_gpu_feature() ? dsl::TargetResources::cuda_sm90() : dsl::TargetResources::host();
    for (const auto &fg : dsl::plan_fusion(g, fo).groups) {
        if (fg.name != group_name || fg.kind != "matmul+epilogue") continue;
        auto w = group_workload(g, {fg.name, fg.nodes, fg.outputs}, symbols);
        if (!w) return std::nullopt;
        const autosched::TargetModel tm = autosched::TargetModel::for_target(t);
        autosched::AnalyticalCostModel model(tm);
        autosched::TuningDatabase db(db_path);
        autosched::TunerParams params;
        params.measure = measure && tm.device == sched::Device::Cpu;
        std::unique_ptr<autosched::IsolatedMeasurer> measurer;
        if (params.measure) measurer = std::make_unique<autosched::IsolatedMeasurer>();
        autosched::Tuner tuner(model, measurer.get(), &db, params);
        auto r = tuner.tune(make_request(g, fg, graph_text, graph_name, symbols, *w, target), measure ? log : nullptr);
        if (log) *log << "autoscheduler for " << fg.name << " at " << w->to_string() << ": " << r.decision << " ("
                      << r.params.to_string() << ")\n";
        return r;
    }
    return std::nullopt;
}

std::string gelu_mlp_graph_text(bool tanh_form, bool fast_mode) {
    return std::string("graph gelu_mlp mode=") + (fast_mode ? "fast" : "strict") +
           " {\n  %x = input : f32[M, K]\n  %w = input : f32[K, N]\n  %bias = input : f32[N]\n  %y = " +
           (tanh_form ? "gelu_tanh" : "gelu") + "(matmul(%x, %w) + %bias)\n  output %y\n}\n";
}

lower::ScheduleChooser autoschedule_chooser(const dsl::Graph &g, const std::string &graph_text,
                                            const std::string &graph_name, const std::string &db_path,
                                            const std::string &target, const std::map<std::string, int64_t> &symbols,
                                            bool measure, std::ostream *log) {
    return [&g, graph_text, graph_name, db_path, target, symbols, measure,
            log](const lower::LoweredGroup &lg) -> std::optional<sched::ScheduleSpec> {
        if (lg.kind != "matmul+epilogue") return std::nullopt;
        auto r = autoschedule_group(g, graph_text, graph_name, lg.name, db_path, target, symbols, measure, log);
        if (!r) return std::nullopt;
        return r->schedule;
    };
}

}  // namespace tessel
