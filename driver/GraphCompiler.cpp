#include "driver/GraphCompiler.h"

#include <chrono>
#include <set>

#include "autoscheduler/PostgresKernelStore.h"
#include "codegen/Compile.h"
#include "codegen/KernelCache.h"
#include "codegen/Ptxas.h"
#include "compiler/KernelReuse.h"
#include "compiler/Plan.h"
#include "support/Clock.h"
#include "driver/MemoryPlanReport.h"
#include "driver/TextFile.h"
#include "driver/Tune.h"
#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/interp/StorageReference.h"
#include "dsl/ir/Diagnostics.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "dsl/passes/Fusion.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/Library.h"
#include "schedules/ScheduleJson.h"
#include "support/ErrorStats.h"
#include "support/Interleaved.h"
#include "support/Statistics.h"
#include "support/ProcessClock.h"
#include "support/Subprocess.h"

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

/** Where schedules come from for `compile` and `run`: the user's, else the database or the
 * autoscheduler (groups whose sizes are all given), else the library default. */
ScheduleSelectionOptions selection_options(const std::string &schedule, bool fallback, const std::string &db, bool tune,
                                           std::ostream *log) {
    ScheduleSelectionOptions s;
    s.user_schedule = schedule;
    s.user_fallback = fallback;
    s.db = db;
    s.measure = tune;
    s.log = log;
    return s;
}

/** What a group computes in and which narrow values it reads or writes (f16, bf16, i8 storage:
 * arithmetic stays f32, docs/TSL.md). Empty when everything is f32. */
std::string precision_line(const dsl::Graph &g, const dsl::FusionGroup &group) {
    const std::set<dsl::ValueId> members(group.nodes.begin(), group.nodes.end());
    std::set<dsl::ValueId> reads, int4;  // int4: i8 values holding packed pairs
    for (dsl::ValueId v : group.nodes)
        for (dsl::ValueId in : g.node(v).inputs) {
            if (!members.count(in) && dsl::is_narrow_storage(g.node(in).type.dtype)) reads.insert(in);
            if (g.node(v).op == dsl::Op::UnpackInt4) int4.insert(in);
        }
    for (dsl::ValueId v : group.nodes)
        if (g.node(v).op == dsl::Op::PackInt4) int4.insert(v);
    auto stored = [&](dsl::ValueId v) {
        return int4.count(v) ? std::string("int4 pairs") : dsl::to_string(g.node(v).type.dtype);
    };
    std::string writes;
    for (dsl::ValueId v : group.outputs)
        if (dsl::is_narrow_storage(g.node(v).type.dtype))
            writes += (writes.empty() ? "" : ", ") + ("%" + g.display_name(v)) + " as " + stored(v);
    if (reads.empty() && writes.empty() && !group.prepared) return "";
    std::string line = "f32 arithmetic";
    if (group.prepared) line += ", strict (prepared once per weight version)";
    for (dsl::ValueId v : reads) line += "; reads %" + g.display_name(v) + " as " + stored(v);
    if (!writes.empty()) line += "; writes " + writes;
    return line;
}

void print_groups(const PlannedProgram &p, const CompiledGraph &program, std::ostream &out) {
    for (size_t i = 0; i < program.groups().size(); i++) {
        const CompiledGraph::Group &cg = program.groups()[i];
        const CompiledKernel &k = *cg.kernel;
        const ScheduleChoice &choice = p.schedules.at(i);
        out << "group " << k.group().name << " [" << dsl::to_string(k.group().kind)
            << "]: " << (choice.refused.empty() ? "" : "fell back to the default ") << choice.label();
        if (!k.schedule().variants.empty()) out << " (" << k.schedule().variants.size() << " guarded variants + fallback)";
        if (!choice.refused.empty()) out << ": " << choice.refused;
        out << "\n  why: " << choice.reason << "\n";
        // What the nest is (e.g. panels read in place), so the choice can be seen, not guessed.
        if (const lower::ElementwiseProgram *program = k.program())
            out << "  program: " << program->steps.size() << " steps over " << program->register_count
                << " registers, interpreted by the runtime (--emit stmt prints them)\n";
        else if (!k.schedule().description.empty())
            out << "  nest: " << k.schedule().description << "\n";
        if (const std::string precision = precision_line(p.graph, k.group()); !precision.empty())
            out << "  precision: " << precision << "\n";
        for (const auto &note : k.notes()) out << "  note: " << note << "\n";
    }
}

/** Every --donate name is a per-call input of g (weights are kept between calls). */
void check_donated(const dsl::Graph &g, const std::set<std::string> &donated) {
    for (const std::string &name : donated) {
        const dsl::ValueId v = g.find(name);
        if (v != dsl::kNoValue && g.node(v).op == dsl::Op::Input && !g.node(v).attrs.weight) continue;
        std::string inputs;
        for (dsl::ValueId u : g.order())
            if (g.node(u).op == dsl::Op::Input && !g.node(u).attrs.weight)
                inputs += (inputs.empty() ? "%" : ", %") + g.display_name(u);
        throw std::invalid_argument("--donate " + name + ": graph " + g.name + " has no per-call input %" + name +
                                    " (its inputs: " + (inputs.empty() ? "none" : inputs) + ")");
    }
}

}  // namespace

int compile_graph(const GraphCompileOptions &o, std::ostream &out) {
    const std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (o.compile_budget_seconds) {
        if (!(*o.compile_budget_seconds > 0))
            throw std::invalid_argument("--compile-budget must be a positive number of seconds, got " +
                                        std::to_string(*o.compile_budget_seconds));
        deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(*o.compile_budget_seconds));
    }
    for (const auto &e : o.emit)
        if (!graph_emit_kinds().count(e)) throw std::invalid_argument("unknown --emit kind '" + e + "'");
    const Halide::Target target = parse_target(o.target);
    const bool cuda = target.has_feature(Halide::Target::CUDA);
    PlanOptions po;
    po.symbols = o.symbols;
    po.remat = o.remat;
    po.memory_budget = o.memory_budget;
    po.max_compiled_kernels = o.max_compiled_kernels;
    po.schedules = selection_options(o.schedule, o.schedule_fallback, o.db, o.tune, &out);
    const PlannedProgram p = plan_file(o.file, target, po);
    PhaseTimes times = p.times;
    check_donated(p.graph, o.donated);
    times.time("reports", [&] { out << p.fusion.to_string(p.graph) << "\n"; });
    if (p.remat && (p.remat->changed || o.memory_budget || !p.remat->skipped.empty())) out << p.remat->to_string();
    if (!p.layouts.regions.empty()) out << p.layouts.to_string(p.graph) << "\n";
    out << p.budget.summary;
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
        std::ofstream(dot) << dsl::fusion_plan_to_dot(p.graph, p.fusion);
        out << "wrote " << dot.string() << "\n";
        if (const std::string graphviz = find_program("dot"); !graphviz.empty()) {
            const fs::path svg = fs::path(o.out_dir) / (base + ".svg");
            const SubprocessResult drawn = run_subprocess({graphviz, "-Tsvg", dot.string(), "-o", svg.string()}, {60});
            if (drawn.ok())
                out << "wrote " << svg.string() << "\n";
            else
                out << "dot failed; no SVG written\n" << drawn.output;
        } else {
            out << "Graphviz 'dot' not found: SVG skipped\n";
        }
    }

    const CompiledGraph program = times.time(
        "lowering and scheduling", [&] { return CompiledGraph(p.graph, p.fusion, target, p.chooser(), KernelBackend::AheadOfTime); });
    times.time("reports", [&] { print_groups(p, program, out); });
    std::set<AotOutput> outs;
    if (o.emit.count("obj")) outs.insert(AotOutput::Object);
    if (o.emit.count("asm")) outs.insert(AotOutput::Assembly);
    if (o.emit.count("stmt")) outs.insert(AotOutput::Stmt);
    if (o.emit.count("html")) outs.insert(AotOutput::StmtHtml);
    if (cuda && o.emit.count("ptx")) outs.insert(AotOutput::Ptx);
    if (o.emit.count("ptx-report") && !cuda)
        throw std::invalid_argument("--emit ptx-report needs a CUDA target (e.g. --target host-cuda)");
    if (o.emit.count("memplan") || o.emit.count("lib")) {
        const MemoryPlanReport report =
            times.time("memory plan report", [&] { return memory_plan_report(program, p.sizes, p.remat, o.donated); });
        out << report.summary() << "\n";
        if (o.emit.count("memplan")) out << report.serial.to_string(p.graph);
        for (const auto &f : write_memory_plan(p.graph, report, o.out_dir, base))
            if (o.emit.count("memplan") || f.extension() == ".json") out << "wrote " << f.string() << "\n";
    }
    std::vector<std::string> not_compiled;  // what the budget left out
    if (o.emit.count("lib")) {
        const std::vector<AotFunction> functions =
            times.time("kernel reuse", [&] { return library_functions(p.graph, program.kernels(), target, "", out); });
        const AotLibrary lib =
            times.time("library (Halide + LLVM)", [&] { return compile_aot_library(functions, target, base, o.out_dir, deadline); });
        for (const auto &f : lib.written) out << "wrote " << f.string() << "\n";
        for (size_t i : lib.not_compiled)  // the groups' functions; internal code is not one
            if (!functions[i].internal) not_compiled.push_back(functions[i].name);
    }
    bool ptx_ok = true;
    const SteadyClock::time_point files_start = SteadyClock::now();
    for (const auto &cg : program.groups()) {
        const CompiledKernel &k = *cg.kernel;
        if (deadline && std::chrono::steady_clock::now() > *deadline) {
            if (!outs.empty() || o.emit.count("ptx-report")) not_compiled.push_back(k.group().name + " (its other files)");
            continue;
        }
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
            const PtxScheduleReport r = k.ptx_report();
            out << k.group().name << ": " << r.to_string();
            for (const auto &v : r.violations(k.ptx_limits())) out << "  violation: " << v << "\n";
            ptx_ok = ptx_ok && r.within_limits(k.ptx_limits());
        }
    }
    times.add("other files (--emit stmt, asm, obj, ptx)", seconds_since(files_start));
    if (o.time_report) out << "where the time went:\n" << times.to_string();
    if (!not_compiled.empty()) {
        out << "compile budget of " << *o.compile_budget_seconds << " s spent after "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << " s: what is written above is complete; not compiled (" << not_compiled.size() << "):";
        for (size_t i = 0; i < not_compiled.size() && i < 20; i++) out << " " << not_compiled[i];
        if (not_compiled.size() > 20) out << " ... and " << not_compiled.size() - 20 << " more";
        out << "\n";
        return kCompileBudgetSpent;
    }
    return ptx_ok ? 0 : 1;
}

int run_graph(const GraphRunOptions &o, std::ostream &out) {
    const Halide::Target target = parse_target(o.target);
    if (target.has_gpu_feature()) throw std::invalid_argument("tessel run executes on the CPU; use a CPU target");
    // The reference is the graph as the user wrote it, before any pass: a wrong rewrite shows.
    const dsl::Graph original = dsl::parse_file(o.file);
    check_symbols(original, o.symbols);
    check_donated(original, o.donated);
    dsl::RunOptions ro;
    ro.random_missing_inputs = true;
    ro.input_seed = o.seed;
    ro.symbol_sizes = o.symbols;
    ro.default_symbol_size = 64;
    const dsl::RunResult ref = dsl::interpret(original, {}, ro);

    PlanOptions po;
    po.symbols = ref.symbols;
    po.remat = o.remat;
    po.memory_budget = o.memory_budget;
    po.max_compiled_kernels = o.max_compiled_kernels;
    po.schedules = selection_options(o.schedule, o.schedule_fallback, o.db, o.tune, &out);
    const PlannedProgram p = plan(original, target, po);
    if (p.remat && (p.remat->changed || o.memory_budget || !p.remat->skipped.empty())) out << p.remat->to_string();
    if (!p.layouts.regions.empty()) out << p.layouts.to_string(p.graph);
    out << p.budget.summary;
    if (const std::string note =
            use_kernel_cache(o.kernel_cache, o.db, o.kernel_cache == "off" ? nullptr : autosched::shared_kernel_store_for(o.db));
        !note.empty())
        out << note << "\n";
    // Each kernel variant compiled when a group first needs it: the first result waits only
    // for the variants its shapes use, and groups that are the same code share one kernel.
    CompiledGraph program(p.graph, p.fusion, target, p.chooser(), KernelBackend::JitOnFirstUse);
    out << "graph " << p.graph.name << ": " << program.groups().size() << " fused group(s)";
    if (!p.fusion.outside_kernels.empty())
        out << ", " << p.fusion.outside_kernels.size() << " op(s) outside kernels (effects, shape code) run by the interpreter";
    out << "; symbols";
    for (const auto &[s, v] : ref.symbols) out << " " << s << "=" << v;
    out << "\n";
    print_groups(p, program, out);
    share_kernels(p.graph, program, out);

    // The simplified graph: intermediates at their memory-plan offsets when every op is in a
    // kernel, else the interpreter runs the other ops (print, assert, state, random draws, shape
    // code) around the compiled groups.
    RunStats stats;
    ArenaOptions arena;
    arena.donated_inputs = o.donated;
    auto run_compiled = [&] { return program.run(ref.inputs, ref.symbols, arena, &stats); };
    dsl::RunResult got;
    got.outputs = run_compiled();
    const double first_result_at = seconds_since_process_start();
    got.printed = stats.printed;
    if (stats.planned)
        out << memory_plan_report(program, ref.symbols, std::nullopt, o.donated).summary() << "; " << stats.kernels_run
            << " kernels ran (" << stats.in_place << " in place), " << stats.views << " views\n";
    else
        out << "memory plan not used: " << stats.interpreted_because << "\n";
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
    if (dsl::has_narrow_storage(original)) {
        // What storing narrow costs, apart from the kernels: the same inputs through the graph
        // with its f16/bf16/i8 values in f32.
        std::optional<dsl::Graph> widened;
        try {
            widened = dsl::widen_storage(original);
        } catch (const dsl::UserError &e) {
            out << "narrow storage (f16/bf16/i8) vs the same graph in f32: not compared (" << e.what() << ")\n";
        }
        const dsl::RunResult wide = widened ? dsl::interpret(*widened, ref.inputs, ro) : dsl::RunResult{};
        for (size_t i = 0; i < wide.outputs.size(); i++) {
            const dsl::Tensor &a = ref.outputs[i], &b = wide.outputs[i];
            const ErrorStats e = compare(a.data.data(), b.data.data(), (size_t)a.numel());
            out << "output " << original.display_name(original.outputs[i])
                << ": narrow storage (f16/bf16/i8) vs the same graph in f32, interpreted: max rel " << std::scientific
                << std::setprecision(2) << e.max_rel << ", max abs " << e.max_abs << std::defaultfloat << "\n";
        }
    }
    if (!ref.printed.empty() || !got.printed.empty()) {
        out << "print output of the compiled run" << (got.printed == ref.printed ? " (identical to the interpreter's)" : "")
            << ":\n"
            << got.printed;
        if (got.printed != ref.printed) out << "the interpreter printed:\n" << ref.printed;
    }
    std::vector<double> kernel_seconds;  // the kernels' share of each timed run (planned runs)
    const double t = median_seconds(
        [&] {
            run_compiled();
            if (stats.planned) kernel_seconds.push_back(stats.kernel_seconds);
        },
        3);
    int variants = 0, used = 0, cached = 0, programs = 0;
    double compile = 0;
    for (size_t i = 0; i < program.groups().size(); i++) {
        if (program.groups()[i].runs_on != i) continue;  // compiled nothing: it runs an earlier group's kernel
        const CompiledKernel &k = program.runner(i);     // its own kernel, or its code with constants as an argument
        compile += k.compile_seconds();
        if (k.program()) {  // interpreted: nothing compiled
            programs++;
            continue;
        }
        for (const auto &v : k.variants()) {
            variants++, used += v.compiled, cached += v.from_cache;
            if (!v.cache_note.empty()) out << v.cache_note << "\n";
        }
    }
    out << "cold start: first result " << std::fixed << std::setprecision(1) << first_result_at * 1e3
        << " ms after program start (the reference interpreter's run included; " << program.groups().size() << " group(s), "
        << used << " of " << variants << " kernel(s) used: " << cached << " loaded from the kernel cache, " << used - cached
        << " compiled; " << compile * 1e3 << " ms"
        << (programs ? "; " + std::to_string(programs) + " elementwise program(s), nothing compiled" : std::string()) << ")\n"
        << std::defaultfloat;
    out << "time per run (median of 3, warm, including host<->buffer copies and interpreted ops): " << std::fixed
        << std::setprecision(3) << t * 1e3 << " ms";
    if (!kernel_seconds.empty()) out << " (the kernels alone: " << median(kernel_seconds) * 1e3 << " ms)";
    out << "\n" << std::defaultfloat;
    out << store_deferred_kernels();
    return ok ? 0 : 1;
}

}  // namespace tessel
