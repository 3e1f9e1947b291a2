// CompiledKernel: lower + schedule + compile per variant (constructor), dispatch by guard
// (call_extents, pick_variant, run), ahead-of-time files and PTX (write_files, ptx, ptx_report).
#include "lowering/CompiledKernel.h"
#include "support/Clock.h"

#include "codegen/KernelCache.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/ScheduleJson.h"
#include "schedules/TargetFacts.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

namespace tessel {

namespace fs = std::filesystem;

namespace {

std::string guards_text(const std::vector<sched::Guard> &guards) {
    std::string s;
    for (const auto &g : guards) s += (s.empty() ? "" : " && ") + g.to_string();
    return s;
}

/** "float32", "uint8", "int16x4". */
std::string type_name(const halide_type_t &t) {
    static const char *codes[] = {"int", "uint", "float", "handle", "bfloat"};
    std::string s = (t.code < 5 ? codes[t.code] : "code" + std::to_string((int)t.code)) + std::to_string((int)t.bits);
    return t.lanes == 1 ? s : s + "x" + std::to_string((int)t.lanes);
}

}  // namespace

CompiledKernel::CompiledKernel(const dsl::Graph &g, dsl::FusionGroup group, sched::ScheduleSpec schedule,
                               const Halide::Target &target, KernelBackend backend,
                               std::optional<std::map<std::string, int64_t>> only_for,
                               std::vector<dsl::ValueId> constant_arguments)
    : graph_(&g),
      group_(std::move(group)),
      schedule_(std::move(schedule)),
      target_(target),
      backend_(backend),
      extents_(dsl::group_extents(g, group_)),
      constant_arguments_(std::move(constant_arguments)) {
    const tessel::SteadyClock::time_point t0 = tessel::SteadyClock::now();

    // Exact mode: variants that split a reduction are left out before anything else looks at
    // the schedule, so dispatch, only_for and reports all see the schedule that runs.
    if (!dsl::allows_split_reductions(g.mode)) {
        std::vector<sched::ScheduleSpec::Variant> kept;
        for (size_t i = 0; i < schedule_.variants.size(); i++) {
            const auto &steps = schedule_.variants[i].steps;
            const bool splits = std::any_of(steps.begin(), steps.end(),
                                            [](const sched::Directive &d) { return std::holds_alternative<sched::RFactor>(d); });
            if (!splits)
                kept.push_back(schedule_.variants[i]);
            else
                notes_.push_back("variant " + std::to_string(i + 1) + " (" + guards_text(schedule_.variants[i].guards) +
                                 ") of '" + schedule_.name +
                                 "' left out: it splits the reduction into partial sums, "
                                 "and numeric mode 'exact' keeps every reduction in program order");
        }
        schedule_.variants = std::move(kept);
    }

    // Which schedule variants to build: all, or the one the dispatcher picks for `only_for`.
    std::vector<size_t> wanted;
    if (only_for) {
        std::map<std::string, long> e(only_for->begin(), only_for->end());
        wanted.push_back(schedule_.pick_variant(e));
    } else {
        for (size_t i = 0; i <= schedule_.variants.size(); i++) wanted.push_back(i);
    }
    if (schedule_.program && (!schedule_.steps.empty() || !schedule_.variants.empty() || !constant_arguments_.empty()))
        throw sched::ScheduleError("schedule '" + schedule_.name + "' for " + group_.name +
                                   ": an elementwise program has no steps, no variants and its constants in the program");
    if (schedule_.program) {  // interpreted: lowered only for its arguments, nothing scheduled or compiled
        Variant v;
        v.label = "elementwise program";
        v.lowered = lower::lower_group(g, group_);
        v.compiled = true;
        std::vector<std::string> names;
        for (const auto &in : v.lowered.inputs) names.push_back(in.name());
        for (dsl::ValueId out : v.lowered.output_values) names.push_back(g.display_name(out));
        program_ = std::make_shared<const lower::ElementwiseProgram>(
            lower::build_program(g, group_, v.lowered.input_values, v.lowered.output_values, std::move(names)));
        variants_.push_back(std::move(v));
        schedule_variant_.push_back(0);
        wanted.clear();
    }
    for (size_t i : wanted) {
        const bool fallback = i == schedule_.variants.size();
        Variant v;
        v.guards = fallback ? std::vector<sched::Guard>{} : schedule_.variants[i].guards;
        v.label = fallback ? "fallback" : "variant " + std::to_string(i + 1) + " (" + guards_text(v.guards) + ")";
        v.lowered = lower::lower_group(g, group_, {constant_arguments_});
        v.resources =
            lower::apply_to_group(fallback ? schedule_.steps : schedule_.variants[i].steps, v.lowered, target, schedule_.name);
        variants_.push_back(std::move(v));
        schedule_variant_.push_back(i);
    }
    compile_once_ = std::make_unique<std::once_flag[]>(variants_.size());
    if (backend == KernelBackend::Jit)
        for (size_t i = 0; i < variants_.size(); i++) std::call_once(compile_once_[i], [&] { compile_variant(i); });

    // Call order: inputs, then outputs, as the lowering bound them.
    const lower::LoweredGroup &lg = variants_.back().lowered;
    for (size_t i = 0; i < lg.inputs.size(); i++)
        arguments_.push_back({lg.inputs[i].name(), lg.input_values[i], false, lg.inputs[i].dimensions()});
    // An output that is a graph output is named by the graph's interface (`output %y = %x`
    // names it y), so generated code binds to the names callers use.
    auto interface_name = [&](dsl::ValueId v) {
        for (size_t o = 0; o < g.outputs.size(); o++)
            if (g.outputs[o] == v) return g.output_name(o);
        return g.display_name(v);
    };
    for (size_t i = 0; i < lg.output_values.size(); i++)
        arguments_.push_back(
            {interface_name(lg.output_values[i]), lg.output_values[i], true, lg.outputs[lg.output_func[i]].dimensions()});

    // Each extent a guard may name comes from a constant or from a dimension of a buffer
    // whose dim resolves to the same symbol.
    for (const auto &[name, e] : extents_.extents) {
        ExtentSource src{name};
        if (e.dim.is_static()) {
            src.constant = (long)e.dim.size;
        } else {
            bool found = false;
            for (size_t a = 0; a < arguments_.size() && !found; a++) {
                const dsl::Node &n = g.node(arguments_[a].value);
                const std::vector<dsl::PhysicalDim> phys = dsl::physical_dims(n.layout, n.type.rank());
                for (size_t pd = 0; pd < phys.size() && !found; pd++) {
                    if (phys[pd].part != dsl::PhysicalDim::Part::Whole || !dsl::same_dim(g, n.type.dims[phys[pd].axis], e.dim))
                        continue;
                    src.argument = a;
                    src.dimension = (int)(phys.size() - 1 - pd);
                    found = true;
                }
            }
            if (!found)
                throw lower::LoweringError("kernel '" + group_.name + "': extent " + name + " (" + extents_.to_string(g) +
                                           ") is not a dimension of any argument");
        }
        extent_sources_.push_back(src);
    }
    compile_seconds_ = tessel::seconds_since(t0);
    for (const Variant &v : variants_) compile_seconds_ -= v.compile_seconds;  // counted per variant
}

double CompiledKernel::compile_seconds() const {
    double s = compile_seconds_;
    for (const Variant &v : variants_) s += v.compile_seconds;
    return s;
}

void CompiledKernel::compile_variant(size_t i) const {
    const tessel::SteadyClock::time_point t0 = tessel::SteadyClock::now();
    Variant &v = variants_[i];
    const size_t sv = schedule_variant_[i];
    const bool fallback = sv == schedule_.variants.size();
    const std::string name = group_.name + (fallback ? "" : "_v" + std::to_string(sv + 1));
    // What decides this variant's code, for the kernel cache (codegen/KernelCache.h); only built
    // when the cache is on (it prints the whole graph).
    std::string description;
    if (KernelCache::active()) {
        description = dsl::print(*graph_) + "\ngroup " + group_.name + ":";
        for (dsl::ValueId n : group_.nodes) description += " " + graph_->display_name(n);
        // The schedule's steps decide the code; its name and description (which say where it
        // came from: "[model]", "[database]") do not.
        nlohmann::json steps = sched::to_json(fallback ? schedule_.keeping_variants({}) : schedule_.variant_alone(sv));
        steps.erase("name");
        steps.erase("description");
        description += "\nschedule " + steps.dump();
        if (!constant_arguments_.empty()) {
            description += "\nconstants argument:";
            for (dsl::ValueId c : constant_arguments_) description += " " + graph_->display_name(c);
        }
    }
    JitKernel k = compile_jit(v.lowered.pipeline(), v.lowered.arguments(), target_, name, description);
    v.callable = std::move(k.callable);
    v.loaded = std::move(k.loaded);
    v.from_cache = k.from_cache;
    v.cache_note = std::move(k.cache_note);
    v.compile_seconds = tessel::seconds_since(t0);
    v.compiled = true;
}

std::map<std::string, long> CompiledKernel::call_extents(const std::vector<halide_buffer_t *> &buffers) const {
    std::map<std::string, long> e;
    for (const auto &s : extent_sources_) {
        if (s.constant >= 0) {
            e[s.name] = s.constant;
        } else {
            const halide_buffer_t *b = buffers[s.argument];
            e[s.name] = b && s.dimension < b->dimensions ? (long)b->dim[s.dimension].extent : 0;
        }
    }
    return e;
}

size_t CompiledKernel::pick_variant(const std::map<std::string, long> &extents) const {
    // The schedule's own rule (ScheduleSpec::pick_variant), mapped to the variants compiled here.
    const size_t want = schedule_.pick_variant(extents);
    for (size_t i = 0; i < variants_.size(); i++)
        if (schedule_variant_[i] == want) return i;
    return variants_.size();  // only_for excluded the variant these extents need
}

std::string CompiledKernel::describe_call(const std::vector<halide_buffer_t *> &buffers) const {
    std::string s;
    for (size_t i = 0; i < arguments_.size(); i++) {
        s += (s.empty() ? "" : ", ") + arguments_[i].name + "[";
        const halide_buffer_t *b = i < buffers.size() ? buffers[i] : nullptr;
        if (!b) {
            s += "null]";
            continue;
        }
        for (int d = b->dimensions - 1; d >= 0; d--) s += std::to_string(b->dim[d].extent) + (d ? "," : "");
        s += "]";
    }
    return s;
}

std::vector<size_t> CompiledKernel::argument_positions(const std::vector<std::string> &names) const {
    std::vector<size_t> out;
    for (const std::string &name : names) {
        size_t i = 0;
        while (i < arguments_.size() && arguments_[i].name != name) i++;
        if (i == arguments_.size()) throw std::logic_error("kernel '" + group_.name + "' has no argument '" + name + "'");
        out.push_back(i);
    }
    if (out.size() != arguments_.size())
        throw std::logic_error("kernel '" + group_.name + "' has " + std::to_string(arguments_.size()) + " arguments, not " +
                               std::to_string(names.size()));
    return out;
}

std::string CompiledKernel::check_buffers(const std::vector<halide_buffer_t *> &buffers) const {
    if (buffers.size() != arguments_.size())
        return "takes " + std::to_string(arguments_.size()) + " buffers (" + describe_call({}) + "), got " +
               std::to_string(buffers.size());
    auto shape_of = [](const halide_buffer_t *b) {
        std::string s = "[";
        for (int d = b->dimensions - 1; d >= 0; d--) s += std::to_string(b->dim[d].extent) + (d ? "," : "");
        return s + "]";
    };
    // Symbolic sizes are bound by the first buffer that has them; every other use must agree.
    struct Binding {
        dsl::Dim dim;
        long extent;
        std::string from;
    };
    std::vector<Binding> bound;
    auto binding = [&](const dsl::Dim &d) {
        return std::find_if(bound.begin(), bound.end(), [&](const Binding &x) { return dsl::same_dim(*graph_, x.dim, d); });
    };
    // Two passes: the dims that hold a whole axis bind the symbols; a panel-blocked axis's
    // extent (ceil(size / width) panels) is checked once every symbol is bound.
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < buffers.size(); i++) {
            const KernelArgument &a = arguments_[i];
            const halide_buffer_t *b = buffers[i];
            const std::string arg = "argument '" + a.name + "' (" + (a.is_output ? "output" : "input") + ")";
            const dsl::Node &n = graph_->node(a.value);
            if (pass == 0) {
                if (!b) return arg + " is a null buffer";
                const Halide::Type want_type = *lower::storage_type(n.type.dtype);
                if (b->type.code != (halide_type_code_t)want_type.code() || b->type.bits != want_type.bits() ||
                    b->type.lanes != 1)
                    return arg + " has element type " + type_name(b->type) + "; the kernel takes " + type_name(want_type);
                if (!b->host && !b->device) return arg + " has no memory (host pointer null)";
                if (b->dimensions != a.dimensions)
                    return arg + " has " + std::to_string(b->dimensions) + " dimensions " + shape_of(b) +
                           "; the kernel expects " + std::to_string(a.dimensions);
            }
            // Expected physical shape, outermost first, with the binding of each symbolic size. A
            // cache write's output is its tail window: the values' shape.
            const auto &dims = n.op == dsl::Op::UpdateTail && a.is_output ? graph_->node(n.inputs[1]).type.dims : n.type.dims;
            const std::vector<dsl::PhysicalDim> phys = dsl::physical_dims(n.layout, n.type.rank());
            std::string want = "[", why;
            bool match = true;
            for (size_t pd = 0; pd < phys.size(); pd++) {
                const int hd = (int)(phys.size() - 1 - pd), axis = phys[pd].axis;
                const long got = b->dim[hd].extent;
                const dsl::Dim d = dsl::resolve_dim(*graph_, dims[axis]);
                const bool whole = phys[pd].part == dsl::PhysicalDim::Part::Whole;
                long logical = whole ? got : -1;
                if (d.is_static()) {
                    logical = (long)d.size;
                } else if (auto it = binding(d); it != bound.end()) {
                    if (whole && got != it->extent)
                        why =
                            dsl::print_dim(*graph_, dims[axis]) + " = " + std::to_string(it->extent) + " from '" + it->from + "'";
                    logical = it->extent;
                } else if (whole) {
                    bound.push_back({d, got, a.name});
                }
                const long expect = logical < 0 ? got : (long)dsl::physical_extent(phys[pd], logical);
                if (pass == 1 || whole) match = match && got == expect;
                want += std::to_string(expect) + (pd + 1 < phys.size() ? "," : "");
            }
            if (dims.empty() && b->dim[0].extent != 1) match = false, want += "1";
            want += "]";
            if (!n.layout.empty())
                want += " (layout " + dsl::to_string(n.layout) + " of " + dsl::print_type(*graph_, n.type) + ")";
            if (!match)
                return arg + " has shape " + shape_of(b) + "; the kernel expects " + want + (why.empty() ? "" : " (" + why + ")");
        }
    }
    return "";
}

void CompiledKernel::run(const std::vector<halide_buffer_t *> &buffers) const { run(buffers, nullptr); }

void CompiledKernel::run(const std::vector<halide_buffer_t *> &buffers, const halide_buffer_t *constants) const {
    if (backend_ == KernelBackend::AheadOfTime)
        throw CompileError("kernel '" + group_.name + "' was compiled ahead of time; it cannot be run here");
    // Checked before Halide sees them: a null host pointer would make the call a bounds query,
    // and shapes are the graph's, which Halide's own checks know only in part.
    if (const std::string bad = check_buffers(buffers); !bad.empty())
        throw CompileError("kernel '" + group_.name + "': " + bad + " (buffers: " + describe_call(buffers) + ")");
    const size_t n = constant_arguments_.size();
    if (n && (!constants || !constants->host || constants->dimensions != 1 || constants->dim[0].extent != (int32_t)n ||
              constants->type.code != halide_type_float || constants->type.bits != 32 || constants->type.lanes != 1))
        throw CompileError("kernel '" + group_.name + "' reads " + std::to_string(n) +
                           " constants from its constants argument: it takes a 1-D float32 buffer of " + std::to_string(n));
    if (!n && constants)
        throw CompileError("kernel '" + group_.name + "' has its constants compiled in; it takes no constants buffer");
    const size_t pick = pick_variant(call_extents(buffers));
    if (pick == variants_.size())
        throw CompileError("kernel '" + group_.name + "' was compiled only for the " + variants_.front().label +
                           " of schedule '" + schedule_.name + "', whose guards these buffers do not meet (" +
                           describe_call(buffers) + ")");
    if (program_) {
        try {
            lower::run_program(*program_, buffers);
        } catch (const std::exception &e) {
            throw CompileError("running kernel '" + group_.name + "' (elementwise program) failed: " + e.what() +
                               " (buffers: " + describe_call(buffers) + ")");
        }
        return;
    }
    std::call_once(compile_once_[pick], [&] { compile_variant(pick); });  // JitOnFirstUse: here
    // The code's argument order: the inputs, the constants (LoweredGroup::arguments), the outputs.
    std::vector<void *> args(buffers.begin(), buffers.end());
    if (n) {
        const size_t inputs =
            (size_t)std::count_if(arguments_.begin(), arguments_.end(), [](const KernelArgument &a) { return !a.is_output; });
        args.insert(args.begin() + (std::ptrdiff_t)inputs, const_cast<halide_buffer_t *>(constants));
    }
    int status = 0;
    if (variants_[pick].loaded) {
        status = variants_[pick].loaded->call(args.data());
    } else {
        Halide::JITUserContext context;
        Halide::JITUserContext *context_ptr = &context;
        std::vector<const void *> argv{&context_ptr};
        argv.insert(argv.end(), args.begin(), args.end());
        status = variants_[pick].callable.call_argv_fast((int)argv.size(), argv.data());
    }
    if (status != 0)
        throw CompileError("running kernel '" + group_.name + "' (schedule '" + schedule_.name + "', " + variants_[pick].label +
                           ") failed: " + last_halide_error() + " (buffers: " + describe_call(buffers) + ")");
}

std::string CompiledKernel::variant_function(size_t i, const std::string &base) const {
    const size_t sv = schedule_variant_.at(i);
    return sv == schedule_.variants.size() ? base : base + "_v" + std::to_string(sv + 1);
}

std::vector<fs::path> CompiledKernel::write_files(const fs::path &dir, const std::string &base,
                                                  const std::set<AotOutput> &outputs) const {
    std::vector<fs::path> written;
    if (program_) {  // no code: the statement is the program's text
        if (!outputs.count(AotOutput::Stmt)) return written;
        fs::create_directories(dir);
        written.push_back(dir / (base + ".stmt"));
        std::ofstream(written.back()) << program_->to_string();
        return written;
    }
    for (size_t i = 0; i < variants_.size(); i++) {
        const std::string name = variant_function(i, base);
        const auto &lg = variants_[i].lowered;
        for (auto &f : compile_aot(lg.pipeline(), lg.arguments(), target_, name, dir, outputs)) written.push_back(f);
    }
    return written;
}

std::vector<AotFunction> CompiledKernel::aot_functions(const std::string &base) const {
    std::vector<AotFunction> functions;
    if (program_) {
        AotFunction f{{}, {}, base};
        std::vector<std::string> parameters;
        for (const KernelArgument &a : arguments_) parameters.push_back("_" + lower::halide_name(*graph_, a.value) + "_buffer");
        const lower::ElementwiseProgram &p = *program_;
        f.program = ProgramFunction{p.input_count,      p.output_count,        p.register_count, p.steps,
                                    p.output_registers, std::move(parameters), p.to_string()};
        functions.push_back(std::move(f));
        return functions;
    }
    for (size_t i = 0; i < variants_.size(); i++)
        functions.push_back({variants_[i].lowered.pipeline(), variants_[i].lowered.arguments(), variant_function(i, base)});
    return functions;
}

std::vector<AotFunction> CompiledKernel::aot_functions(const std::string &base,
                                                       const std::vector<dsl::ValueId> &constant_arguments) const {
    std::vector<AotFunction> functions;
    for (size_t i = 0; i < variants_.size(); i++) {
        lower::LoweredGroup lg = lower::lower_group(*graph_, group_, {constant_arguments});
        const size_t s = schedule_variant_[i];
        lower::apply_to_group(s == schedule_.variants.size() ? schedule_.steps : schedule_.variants[s].steps, lg, target_,
                              schedule_.name);
        AotFunction f{lg.pipeline(), lg.arguments(), variant_function(i, base)};
        f.internal = true;
        f.constants_argument = lg.constants.name();
        functions.push_back(std::move(f));
    }
    return functions;
}

std::string CompiledKernel::ptx(size_t i) const {
    const auto &lg = variants_.at(i).lowered;
    return generate_ptx(lg.pipeline(), lg.arguments(), target_, group_.name);
}

PtxScheduleReport CompiledKernel::ptx_report() const {
    return ptx_report(sched::TargetFacts::for_target(target_).cuda.ptx_arch());
}

PtxLimits CompiledKernel::ptx_limits() const {
    const sched::CudaFacts cuda = sched::TargetFacts::for_target(target_).cuda;
    PtxLimits l;
    l.max_registers = cuda.max_registers_per_thread;
    l.max_shared_bytes = (long)cuda.shared_per_block;
    l.max_threads_per_block = cuda.max_threads_per_block;
    return l;
}

PtxScheduleReport CompiledKernel::ptx_report(const std::string &arch) const {
    PtxScheduleReport r;
    r.schedule = schedule_.name;
    r.arch = arch;
    for (size_t i = 0; i < variants_.size(); i++) {
        PtxVariantReport v;
        v.label = variants_[i].label;
        v.threads_per_block = variants_[i].resources.max_threads_per_block;
        v.dynamic_shared_bytes = variants_[i].resources.shared_bytes;
        v.shared_complete = variants_[i].resources.shared_complete;
        v.ptxas = assemble_ptx(ptx(i), arch);
        r.variants.push_back(std::move(v));
    }
    return r;
}

}  // namespace tessel
