// Map: plan (simplify -> rematerialize -> fusion -> layouts, as tessel compile) -> refusals ->
// kernels ahead of time without a runtime, one Halide runtime object -> the generated entry
// (LibraryTables: tables over the C runtime) and the runtime's sources -> cc/c++ -c -> ar.
#include "driver/KernelLibrary.h"

#include "codegen/Compile.h"
#include "codegen/RuntimeSourcesText.h"
#include "compiler/KernelReuse.h"
#include "compiler/Plan.h"
#include "driver/LibrarySpecialization.h"
#include "driver/LibraryTables.h"
#include "driver/LibraryTargets.h"
#include "driver/ParallelLoopText.h"
#include "driver/TextFile.h"
#include "dsl/analysis/BufferAssignment.h"
#include "dsl/analysis/MemoryTraffic.h"
#include "dsl/ir/Printer.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/Library.h"
#include "support/Subprocess.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace tessel {

namespace fs = std::filesystem;
using dsl::ValueId;

namespace {

void run_or_throw(const std::vector<std::string> &argv, const std::string &what) {
    if (const SubprocessResult r = run_subprocess(argv); !r.ok())
        throw std::runtime_error(what + " failed: " + format_command(argv) + "\n" + r.output);
}

/** Writes the C runtime's sources into `work` and compiles each (C11) into an object there. */
std::vector<fs::path> compile_runtime(const fs::path &work, const fs::path &dir) {
    std::vector<fs::path> objects;
    for (const auto &f : kRuntimeSources) std::ofstream(work / f.name) << f.text;
    for (const auto &f : kRuntimeSources) {
        const fs::path source = work / f.name;
        if (source.extension() != ".c") continue;
        objects.push_back(work / (source.stem().string() + ".o"));
        run_or_throw({TESSEL_CC, "-std=c11", "-O2", "-fPIC", "-c", source.string(), "-I" + dir.string(), "-I" + work.string(),
                      "-o", objects.back().string()},
                     "compiling the library runtime");
    }
    return objects;
}

}  // namespace

int write_kernel_library(const KernelLibraryOptions &o, std::ostream &out) {
    const std::vector<Halide::Target> targets = library_targets(o.target);
    const Halide::Target target = targets.front();
    for (const auto &t : targets)
        if (t.has_gpu_feature() || t.arch != Halide::Target::X86)
            throw std::invalid_argument("tessel lib builds x86 CPU libraries; " + t.to_string() + " is not one");
    // The same phases as tessel compile and run (layout conversions included), for the first target.
    PlanOptions plan_options;
    plan_options.symbols = o.symbols;
    plan_options.remat = o.remat;
    plan_options.max_compiled_kernels = o.max_compiled_kernels;
    plan_options.schedules.user_schedule = o.schedule;
    plan_options.schedules.db = o.db;
    const PlannedProgram planned_graph = plan_file(o.file, target, plan_options);
    const dsl::Graph &g = planned_graph.graph;
    const dsl::FusionPlan &plan = planned_graph.fusion;
    const std::map<std::string, int64_t> &sizes = planned_graph.sizes;
    const std::string name = library_identifier(o.name.empty() ? g.name : o.name);
    if (planned_graph.remat && planned_graph.remat->changed) out << planned_graph.remat->to_string();
    if (planned_graph.layouts.conversions > 0) out << planned_graph.layouts.to_string(g);
    out << planned_graph.budget.summary;
    if (!plan.outside_kernels.empty())
        throw std::invalid_argument("tessel lib: " + dsl::print_node(g, plan.outside_kernels.front()) +
                                    " runs outside kernels; a library holds graphs whose every op is in a kernel");
    std::set<ValueId> seen;
    for (ValueId v : g.outputs)
        if (!seen.insert(v).second || g.node(v).op == dsl::Op::Input)
            throw std::invalid_argument("tessel lib: output %" + g.display_name(v) +
                                        " is bound twice or is a graph input (the library would need a copy)");
    // The entry's buffers are row-major: inputs and weights f32 or i8 (weights loaded already
    // quantized), outputs f32; values inside (prepared ones included) may have any layout and
    // storage type: the entry describes them itself.
    for (ValueId v : g.order()) {
        const dsl::Node &n = g.node(v);
        if (!n.has_result() || !dsl::is_tensor_data(n.type.dtype) || (n.op != dsl::Op::Input && !g.is_output(v))) continue;
        const bool input = n.op == dsl::Op::Input;
        if (!n.layout.empty() || !(n.type.dtype == dsl::DType::F32 || (input && n.type.dtype == dsl::DType::I8)))
            throw std::invalid_argument("tessel lib: " + dsl::print_node(g, v) +
                                        ": a library's input and weight buffers are f32 or i8 row-major and its outputs f32 "
                                        "row-major (layouts, f16/bf16 arguments and other outputs are compiled by the JIT only, "
                                        "tessel run)");
    }

    // The same plan compiled for every target, each with that target's schedules; with a
    // profile, each group keeps the variants the planner chose (by index: a library schedule
    // has the same variants, guards included, on every x86 target).
    const std::map<std::string, std::vector<size_t>> *kept = nullptr;
    // One plan; each target's schedules by the same policy (user, database, library).
    std::vector<std::vector<ScheduleChoice>> choices = {planned_graph.schedules};
    for (size_t ti = 1; ti < targets.size(); ti++)
        choices.push_back(select_schedules(planned_graph, targets[ti], plan_options.schedules));
    auto build_programs = [&] {
        std::vector<std::unique_ptr<CompiledGraph>> built;
        for (size_t ti = 0; ti < targets.size(); ti++) {
            const Halide::Target &t = targets[ti];
            const ScheduleChooser choose = [&, ti](const dsl::FusionGroup &fg,
                                                   const lower::LoweredGroup &) -> std::optional<sched::ScheduleSpec> {
                for (size_t i = 0; i < plan.groups.size(); i++) {
                    if (plan.groups[i].name != fg.name) continue;
                    sched::ScheduleSpec s = choices[ti][i].spec;
                    if (kept) s = s.keeping_variants(kept->count(fg.name) ? kept->at(fg.name) : std::vector<size_t>{});
                    return s;
                }
                return std::nullopt;
            };
            built.push_back(std::make_unique<CompiledGraph>(g, plan, t.with_feature(Halide::Target::NoRuntime), choose,
                                                            KernelBackend::AheadOfTime));
        }
        return built;
    };
    std::vector<std::unique_ptr<CompiledGraph>> programs = build_programs();
    std::map<std::string, std::vector<size_t>> planned;
    autosched::ShapeProfile profile;
    std::ostringstream plan_report;  // also written to <name>.plan.txt
    if (!o.profile_file.empty()) {
        profile = autosched::parse_shape_profile(read_text_file(o.profile_file), o.profile_file);
        if (profile.empty()) throw std::invalid_argument(o.profile_file + ": the profile has no shapes");
        check_profile_symbols(profile, graph_symbols(g), o.profile_file);
        size_t measure = 0;
        while (measure < targets.size() && !host_runs(targets[measure])) measure++;
        if (measure == targets.size())
            throw std::invalid_argument("tessel lib --profile: this machine runs none of the targets, so it cannot measure them");
        auto chosen = plan_library_variants(g, *programs[measure], profile, targets[measure], targets, o, plan_report);
        if (!chosen) {  // --enqueue: the workers measure first
            out << plan_report.str() << "no library written yet: rerun when `tessel jobs --db URL` shows the jobs done\n";
            return 0;
        }
        planned = std::move(*chosen);
        kept = &planned;
        programs = build_programs();
    }
    std::vector<LibraryTarget> kernels;
    std::set<std::string> suffixes;
    for (size_t i = 0; i < targets.size(); i++) {
        CpuRequirements needs = cpu_requirements(targets[i]);
        while (!suffixes.insert(needs.suffix).second) needs.suffix += "_";
        kernels.push_back({needs.suffix, needs.features, targets[i].to_string(), programs[i].get()});
    }
    const CompiledGraph &program = *programs.front();
    // The whole-graph entry computes the prepared values every call (they take arena space); the
    // prepare-weights entries keep them in the caller's prepared block.
    ArenaOptions every_call;
    every_call.keep_prepared = false;
    const dsl::BufferAssignment memory = program.memory_plan(sizes, every_call);
    std::optional<dsl::BufferAssignment> kept_prepared;
    if (std::any_of(plan.groups.begin(), plan.groups.end(), [](const dsl::FusionGroup &fg) { return fg.prepared; }))
        kept_prepared = program.memory_plan(sizes);
    // What the generated dispatcher will report for each profiled shape (its _variants()).
    for (const auto &e : profile) {
        plan_report << "dispatch at " << autosched::format_extents(e.shape) << ":";
        const std::map<std::string, int64_t> symbols(e.shape.begin(), e.shape.end());
        for (const auto &cg : program.groups()) {
            const CompiledKernel &k = *cg.kernel;
            if (is_view_group(k, memory)) continue;
            const auto ext = k.extents().concrete(symbols);
            plan_report << " " << k.group().name << "=" << k.variants()[k.pick_variant({ext->begin(), ext->end()})].label << ";";
        }
        plan_report << "\n";
    }
    out << plan_report.str();

    const fs::path dir = o.out_dir, work = dir / (name + ".objects");
    fs::create_directories(work);
    if (!profile.empty()) std::ofstream(dir / (name + ".plan.txt")) << plan_report.str();
    std::vector<fs::path> objects;
    for (size_t ti = 0; ti < kernels.size(); ti++) {
        // Each target's kernels as one set of functions: chunked modules compiled in parallel,
        // each distinct kernel once (compiler/KernelReuse.h); headers beside the generated entry.
        const auto &t = kernels[ti];
        const std::vector<const CompiledKernel *> group_kernels = t.program->kernels();
        for (size_t gi = 0; gi < group_kernels.size(); gi++) {
            const CompiledKernel &k = *group_kernels[gi];
            out << "group " << k.group().name << " [" << dsl::to_string(k.group().kind) << "] for " << t.suffix << ": "
                << choices[ti][gi].label() << ", " << k.variants().size() << " variant(s)\n";
        }
        const std::vector<AotFunction> functions = library_functions(g, group_kernels, targets[ti], "_" + t.suffix, out);
        const AotLibrary compiled = compile_aot_objects(functions, targets[ti], work, work, "kernels_" + t.suffix + "_");
        objects.insert(objects.end(), compiled.objects.begin(), compiled.objects.end());
    }
    // One runtime, for the least capable target, so that it runs wherever any target does.
    objects.push_back(work / "halide_runtime.o");
    Halide::compile_standalone_runtime(objects.back().string(), targets.back().without_feature(Halide::Target::NoRuntime));

    LibraryTables tables(g, kernels, memory, kept_prepared ? &*kept_prepared : nullptr, name);
    // A caller may pass one buffer as a cache and its update: legal where the plan would write
    // the cache in place were it donated.
    ArenaOptions caches_donated = every_call;
    for (dsl::ValueId v : g.order())
        if (const dsl::Node &n = g.node(v); n.op == dsl::Op::UpdateTail && g.node(n.inputs[0]).op == dsl::Op::Input)
            caches_donated.donated_inputs.insert(g.display_name(n.inputs[0]));
    if (!caches_donated.donated_inputs.empty())
        for (const auto &d : program.memory_plan(sizes, caches_donated).decisions)
            if (d.rule == "cache-write" && !d.applied) tables.cache_write_refusals[d.result] = d.reason;
    std::ofstream(dir / (name + ".h")) << tables.header();
    std::ofstream(work / (name + "_entry.cpp")) << tables.source();
    std::ofstream(work / "tessel_parallel_loop.h") << kParallelLoopHeader;
    fs::copy_file(fs::path(TESSEL_HALIDE_INCLUDE_DIR) / "HalideRuntime.h", dir / "HalideRuntime.h",
                  fs::copy_options::overwrite_existing);
    for (const fs::path &f : compile_runtime(work, dir)) objects.push_back(f);
    objects.push_back(work / (name + "_entry.o"));
    run_or_throw(
        {TESSEL_CXX, "-std=c++17", "-O2", "-fPIC", "-fopenmp", "-fno-exceptions", "-fno-rtti", "-c",
         (work / (name + "_entry.cpp")).string(), "-I" + dir.string(), "-I" + work.string(), "-o", objects.back().string()},
        "compiling the generated entry");
    const fs::path lib = dir / ("lib" + name + ".a");
    fs::remove(lib);
    std::vector<std::string> ar = {"ar", "rcs", lib.string()};
    for (const auto &f : objects) ar.push_back(f.string());
    run_or_throw(ar, "archiving the library");
    out << "memory plan: " << memory.allocations.size() << " allocation(s), arena packed per call by the runtime's packer ("
        << dsl::format_bytes(memory.planned_peak) << " at the planning sizes)\n";
    out << "wrote " << lib.string() << "\nwrote " << (dir / (name + ".h")).string() << "\nwrote "
        << (dir / "HalideRuntime.h").string() << "\n"
        << (profile.empty() ? "" : "wrote " + (dir / (name + ".plan.txt")).string() + "\n") << "link: c++ app.cpp -I"
        << dir.string() << " " << lib.string() << " -lgomp -lpthread -ldl -lm\n";
    return 0;
}

}  // namespace tessel
