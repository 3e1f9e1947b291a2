#include "driver/GraphCompiler.h"

#include "codegen/Compile.h"
#include "codegen/KernelCache.h"
#include "codegen/Ptxas.h"
#include "driver/MemoryPlanReport.h"
#include "driver/PlannedGraph.h"
#include "driver/TextFile.h"
#include "driver/Tune.h"
#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Diagnostics.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "dsl/passes/Fusion.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/Library.h"
#include "schedules/ScheduleJson.h"
#include "support/ErrorStats.h"
#include "support/ProcessClock.h"
#include "support/Interleaved.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>

namespace tessel {

namespace fs = std::filesystem;

const std::set<std::string> &graph_emit_kinds() {
    static const std::set<std::string> kinds = {"dot", "stmt", "html", "asm", "lib", "obj", "ptx", "ptx-report", "memplan"};
    return kinds;
}

namespace {

/** The graph's shape symbols (M, K, ...), sorted. */
std::set<std::string> graph_symbols(const dsl::Graph &g) {
    std::set<std::string> out;
    for (dsl::ValueId v : g.order())
        for (const dsl::Dim &d : g.node(v).type.dims)
            if (d.kind == dsl::Dim::Kind::Symbol) out.insert(d.symbol);
    return out;
}

/** Every --dim must name a symbol of the graph: `--dim m=512` for a graph of M is a typo, not
 * a size to ignore. */
void check_dims(const dsl::Graph &g, const std::map<std::string, int64_t> &dims) {
    const std::set<std::string> symbols = graph_symbols(g);
    for (const auto &[name, size] : dims) {
        if (symbols.count(name)) continue;
        std::string list;
        for (const auto &s : symbols) list += (list.empty() ? "" : ", ") + s;
        throw std::invalid_argument("--dim " + name + "=" + std::to_string(size) + ": graph '" + g.name +
                                    "' has no symbol '" + name + "' (" +
                                    (symbols.empty() ? std::string("it has no symbols: every extent is static")
                                                     : "its symbols: " + list) + ")");
    }
}

/** A --schedule that did not apply to a group it was chosen for is an error unless the user
 * asked for the fallback. */
void check_schedule_applied(const CompiledGraph &program, const std::string &schedule, const Halide::Target &target,
                            bool fallback) {
    if (schedule.empty() || fallback) return;
    const dsl::GroupKind kind = sched::resolve_group_schedule(schedule, target).group;
    for (const auto &cg : program.groups())
        if (!cg.refused.empty() && cg.kernel->group().kind == kind)
            throw std::invalid_argument("--schedule " + schedule + " does not apply to group " + cg.kernel->group().name +
                                        " [" + dsl::to_string(cg.kernel->group().kind) + "]: " + cg.refused +
                                        " (pass --schedule-fallback to use the default schedule for such groups)");
}

/** Where a group's schedule comes from when none is named: the tuning database or the
 * autoscheduler when every size is known, else the library default for the device. */
struct AutoSchedule {
    const dsl::Graph *graph;
    std::string db;
    std::map<std::string, int64_t> symbols;
    bool tune = false;
    std::ostream *log = nullptr;
};

/** --schedule NAME|FILE.json for groups of the kind it is for, the library default for every
 * other group; without it, `autos` (when given) for every group whose sizes are known, else the
 * library default. */
ScheduleChooser make_chooser(const std::string &schedule, const Halide::Target &target,
                                    std::optional<AutoSchedule> autos = std::nullopt) {
    const sched::Device device = target.has_gpu_feature() ? sched::Device::Cuda : sched::Device::Cpu;
    std::optional<sched::GroupScheduleChoice> user;
    if (!schedule.empty()) {
        try {
            user = sched::resolve_group_schedule(schedule, target);
        } catch (const sched::ScheduleJsonError &e) {
            throw std::invalid_argument("--schedule " + schedule + ": " + e.what());
        }
        if (user->device != device)
            throw std::invalid_argument("schedule '" + schedule + "' is for " + sched::to_string(user->device) +
                                        " but target " + target.to_string() + " is " + sched::to_string(device));
    }
    return [user, device, target, autos](const dsl::FusionGroup &fg,
                                         const lower::LoweredGroup &g) -> std::optional<sched::ScheduleSpec> {
        if (user && g.kind == user->group) return user->for_group(lower::group_shape(g), target);
        if (!user && autos) {
            auto r = autoschedule_group(*autos->graph, fg, autos->db, target, autos->symbols, autos->tune, autos->log, &g);
            if (r) {
                sched::ScheduleSpec s = r->schedule;
                s.name += " [" + r->source + "]";
                return s;
            }
        }
        const std::string name = sched::default_library_schedule(g.kind, device);
        if (name.empty()) return std::nullopt;
        return lower::library_schedule_for(name, g, target);
    };
}

void print_groups(const CompiledGraph &program, std::ostream &out) {
    for (const auto &cg : program.groups()) {
        const CompiledKernel &k = *cg.kernel;
        out << "group " << k.group().name << " [" << dsl::to_string(k.group().kind) << "]: " << cg.schedule_note;
        if (!k.schedule().variants.empty()) out << " (" << k.schedule().variants.size() << " guarded variants + fallback)";
        out << "\n";
        // What the nest is (e.g. panels read in place), so the choice can be seen, not guessed.
        if (!k.schedule().description.empty()) out << "  nest: " << k.schedule().description << "\n";
        for (const auto &note : k.notes()) out << "  note: " << note << "\n";
    }
}

}  // namespace

int compile_graph(const GraphCompileOptions &o, std::ostream &out) {
    for (const auto &e : o.emit)
        if (!graph_emit_kinds().count(e)) throw std::invalid_argument("unknown --emit kind '" + e + "'");
    const Halide::Target target = parse_target(o.target);
    const bool cuda = target.has_feature(Halide::Target::CUDA);
    check_dims(dsl::parse_file(o.file), o.symbols);
    PlannedGraph p = plan_graph(o.file, target, o.symbols, o.remat, o.memory_budget);
    out << p.plan.to_string(p.graph) << "\n";
    if (p.remat && (p.remat->changed || o.memory_budget || !p.remat->skipped.empty())) out << p.remat->to_string();
    if (!p.layouts.regions.empty()) out << p.layouts.to_string(p.graph) << "\n";
    out << "values with a layout:";
    bool any_layout = false;
    for (dsl::ValueId v : p.graph.order())
        if (!p.graph.node(v).layout.empty()) {
            out << "\n  %" << p.graph.display_name(v) << " : " << dsl::print_type(p.graph, p.graph.node(v).type) << " layout "
                << dsl::to_string(p.graph.node(v).layout);
            any_layout = true;
        }
    out << (any_layout ? "\n" : " none (every value row-major)\n");

    fs::create_directories(o.out_dir);
    const std::string base = p.graph.name;
    if (o.emit.count("dot")) {
        const fs::path dot = fs::path(o.out_dir) / (base + ".dot");
        std::ofstream(dot) << dsl::fusion_plan_to_dot(p.graph, p.plan);
        out << "wrote " << dot.string() << "\n";
        if (std::system("command -v dot >/dev/null 2>&1") == 0) {
            const fs::path svg = fs::path(o.out_dir) / (base + ".svg");
            const std::string cmd = "dot -Tsvg '" + dot.string() + "' -o '" + svg.string() + "'";
            if (std::system(cmd.c_str()) == 0) out << "wrote " << svg.string() << "\n";
            else out << "dot failed; no SVG written\n";
        } else {
            out << "Graphviz 'dot' not found: SVG skipped\n";
        }
    }

    const AutoSchedule autos{&p.graph, o.db, o.symbols, o.tune, &out};
    const CompiledGraph program(p.graph, p.plan, target, make_chooser(o.schedule, target, autos),
                                KernelBackend::AheadOfTime);
    check_schedule_applied(program, o.schedule, target, o.schedule_fallback);
    print_groups(program, out);
    std::set<AotOutput> outs;
    if (o.emit.count("lib")) outs.insert({AotOutput::StaticLibrary, AotOutput::Header});
    if (o.emit.count("obj")) outs.insert(AotOutput::Object);
    if (o.emit.count("asm")) outs.insert(AotOutput::Assembly);
    if (o.emit.count("stmt")) outs.insert(AotOutput::Stmt);
    if (o.emit.count("html")) outs.insert(AotOutput::StmtHtml);
    if (cuda && o.emit.count("ptx")) outs.insert(AotOutput::Ptx);
    if (o.emit.count("ptx-report") && !cuda)
        throw std::invalid_argument("--emit ptx-report needs a CUDA target (e.g. --target host-cuda)");
    if (o.emit.count("memplan") || o.emit.count("lib")) {
        const MemoryPlanReport report = memory_plan_report(program, p.sizes, p.remat);
        out << report.summary() << "\n";
        if (o.emit.count("memplan")) out << report.serial.to_string(p.graph);
        for (const auto &f : write_memory_plan(p.graph, report, o.out_dir, base))
            if (o.emit.count("memplan") || f.extension() == ".json") out << "wrote " << f.string() << "\n";
    }
    bool ptx_ok = true;
    for (const auto &cg : program.groups()) {
        const CompiledKernel &k = *cg.kernel;
        for (const auto &f : k.write_files(o.out_dir, k.group().name, outs)) out << "wrote " << f.string() << "\n";
        if (k.variants().size() > 1 && o.emit.count("lib")) {
            out << "note: " << k.group().name << " dispatches by guard; a caller picks the first that holds:\n";
            for (size_t v = 0; v + 1 < k.variants().size(); v++)
                out << "  " << k.group().name << "_v" << v + 1 << ": " << k.variants()[v].label << "\n";
            out << "  " << k.group().name << ": fallback (any shape)\n";
        }
        if (o.emit.count("ptx-report")) {
            if (find_ptxas().empty()) {
                out << "ptx-report: skipped (ptxas not found)\n";
                continue;
            }
            const PtxScheduleReport r = k.ptx_report("sm_90");
            out << k.group().name << ": " << r.to_string();
            for (const auto &v : r.violations()) out << "  violation: " << v << "\n";
            ptx_ok = ptx_ok && r.within_limits();
        }
    }
    return ptx_ok ? 0 : 1;
}

int run_graph(const GraphRunOptions &o, std::ostream &out) {
    const Halide::Target target = parse_target(o.target);
    if (target.has_gpu_feature()) throw std::invalid_argument("tessel run executes on the CPU; use a CPU target");
    // The reference is the graph as the user wrote it, before any pass: a wrong rewrite shows.
    const dsl::Graph original = dsl::parse_file(o.file);
    check_dims(original, o.symbols);
    dsl::RunOptions ro;
    ro.random_missing_inputs = true;
    ro.input_seed = o.seed;
    ro.symbol_sizes = o.symbols;
    ro.default_symbol_size = 64;
    const dsl::RunResult ref = dsl::interpret(original, {}, ro);

    PlannedGraph p = plan_graph(o.file, target, ref.symbols, o.remat, o.memory_budget);
    if (p.remat && (p.remat->changed || o.memory_budget || !p.remat->skipped.empty())) out << p.remat->to_string();
    if (!p.layouts.regions.empty()) out << p.layouts.to_string(p.graph);
    if (const std::string note = use_kernel_cache(o.kernel_cache, o.db); !note.empty()) out << note << "\n";
    const AutoSchedule autos{&p.graph, o.db, ref.symbols, o.tune, &out};
    const CompiledGraph program(p.graph, p.plan, target, make_chooser(o.schedule, target, autos));
    check_schedule_applied(program, o.schedule, target, o.schedule_fallback);
    out << "graph " << p.graph.name << ": " << program.groups().size() << " fused group(s)";
    if (!p.plan.outside_kernels.empty())
        out << ", " << p.plan.outside_kernels.size() << " op(s) outside kernels (effects, shape code) run by the interpreter";
    out << "; symbols";
    for (const auto &[s, v] : ref.symbols) out << " " << s << "=" << v;
    out << "\n";
    print_groups(program, out);

    // The simplified graph: intermediates at their memory-plan offsets when every op is in a
    // kernel, else the interpreter runs the other ops (print, assert, state, random draws, shape
    // code) around the compiled groups.
    RunStats stats;
    auto run_compiled = [&] { return program.run(ref.inputs, ref.symbols, {}, &stats); };
    dsl::RunResult got;
    got.outputs = run_compiled();
    const double first_result_at = seconds_since_process_start();
    got.printed = stats.printed;
    if (stats.planned) out << memory_plan_report(program, ref.symbols).summary() << "; " << stats.kernels_run
                           << " kernels ran (" << stats.in_place << " in place), " << stats.views << " views\n";
    else out << "memory plan not used: " << stats.interpreted_because << "\n";
    if (got.outputs.size() != ref.outputs.size())
        throw std::logic_error("the simplified graph has " + std::to_string(got.outputs.size()) + " outputs, the original " +
                               std::to_string(ref.outputs.size()));
    bool ok = true;
    for (size_t i = 0; i < got.outputs.size(); i++) {
        const dsl::Tensor &a = got.outputs[i], &b = ref.outputs[i];
        const double worst = a.shape == b.shape ? compare(a.data.data(), b.data.data(), (size_t)a.numel()).max_rel : INFINITY;
        const bool match = worst <= o.tolerance;
        ok = ok && match;
        const dsl::ValueId v = original.outputs[i];
        out << "output " << original.display_name(v) << " " << dsl::print_type(original, original.node(v).type)
            << ": max rel error vs interpreter on the graph as written " << std::scientific << std::setprecision(2) << worst
            << (match ? "  MATCH" : "  MISMATCH") << "\n"
            << std::defaultfloat;
    }
    if (!ref.printed.empty() || !got.printed.empty()) {
        out << "print output of the compiled run" << (got.printed == ref.printed ? " (identical to the interpreter's)" : "")
            << ":\n" << got.printed;
        if (got.printed != ref.printed) out << "the interpreter printed:\n" << ref.printed;
    }
    const double t = median_seconds([&] { run_compiled(); }, 3);
    int variants = 0, cached = 0;
    double compile = 0;
    for (const auto &cg : program.groups()) {
        compile += cg.kernel->compile_seconds();
        for (const auto &v : cg.kernel->variants()) variants++, cached += v.from_cache;
    }
    out << "cold start: first result " << std::fixed << std::setprecision(1) << first_result_at * 1e3
        << " ms after program start (the reference interpreter's run included; " << program.groups().size()
        << " group(s), " << variants << " kernel(s): " << cached << " loaded from the kernel cache, " << variants - cached
        << " compiled; " << compile * 1e3 << " ms)\n" << std::defaultfloat;
    out << "time per run (median of 3, warm, including host<->buffer copies and interpreted ops): " << std::fixed
        << std::setprecision(3) << t * 1e3 << " ms\n" << std::defaultfloat;
    return ok ? 0 : 1;
}

}  // namespace tessel
