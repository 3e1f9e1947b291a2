#include "lowering/GraphProgram.h"

#include "codegen/ParallelRuntime.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "schedules/ApplySchedule.h"

#include <chrono>

namespace tessel::lower {

using dsl::ValueId;

namespace {

bool is_output_func(const LoweredGroup &group, const std::string &name) {
    for (const auto &y : group.output_names)
        if (y == name) return true;
    return false;
}

}  // namespace

sched::ScheduleSpec default_group_schedule(const LoweredGroup &group, const Halide::Target &target) {
    const int lanes = std::max(4, target.natural_vector_size<float>());
    sched::ScheduleSpec s("default_" + group.kind, sched::Device::Cpu);
    s.description = "outputs vectorized along n, parallel over the outermost loop";
    std::string first_outer;
    for (size_t i = 0; i < group.outputs.size(); i++) {
        const int rank = group.outputs[i].dimensions();
        const sched::StageRef st{group.output_names[i]};
        s.split(st, "n", "no", "ni", lanes, sched::Tail::GuardWithIf).vectorize(st, "ni");
        const std::string outer = rank >= 2 ? axis_name(0, rank) : "no";
        s.parallel(st, outer);
        if (first_outer.empty()) first_outer = outer;
    }
    for (const auto &[name, f] : group.funcs) {
        if (is_output_func(group, name) || !f.has_update_definition()) continue;
        if (group.outputs.size() == 1) s.compute_at(name, group.output_names[0], first_outer);
        else s.compute_root(name);
    }
    return s;
}

sched::ScheduleSpec default_gpu_group_schedule(const LoweredGroup &group, const Halide::Target &) {
    sched::ScheduleSpec s("default_gpu_" + group.kind, sched::Device::Cuda);
    s.description = "outputs tiled over GPU blocks and threads, reductions per thread";
    std::string thread_var;
    for (size_t i = 0; i < group.outputs.size(); i++) {
        const sched::StageRef st{group.output_names[i]};
        if (group.outputs[i].dimensions() >= 2) {
            s.split(st, "n", "no", "ni", 32, sched::Tail::GuardWithIf)
                .split(st, "m", "mo", "mi", 8, sched::Tail::GuardWithIf)
                .reorder(st, {"ni", "mi", "no", "mo"})
                .gpu_blocks(st, {"no", "mo"})
                .gpu_threads(st, {"ni", "mi"});
        } else {
            s.split(st, "n", "no", "ni", 256, sched::Tail::GuardWithIf).gpu_blocks(st, {"no"}).gpu_threads(st, {"ni"});
        }
        if (thread_var.empty()) thread_var = "ni";
    }
    for (const auto &[name, f] : group.funcs) {
        if (is_output_func(group, name) || !f.has_update_definition()) continue;
        if (group.outputs.size() == 1) {
            s.compute_at(name, group.output_names[0], thread_var).store_in(name, sched::MemoryLevel::Register);
        } else {
            // A root Func on the GPU needs its own kernel launch.
            s.compute_root(name);
            const sched::StageRef st{name};
            s.split(st, "n", "no", "ni", 256, sched::Tail::GuardWithIf).gpu_blocks(st, {"no"}).gpu_threads(st, {"ni"});
        }
    }
    return s;
}

void apply_to_group(const std::vector<sched::Directive> &steps, LoweredGroup &group, const Halide::Target &target,
                    const std::string &schedule_name) {
    sched::ScheduleTarget st{group.funcs, {}, target};
    for (const auto &p : group.inputs) st.inputs[p.name()] = p;
    for (const auto &[role, p] : group.input_roles) st.inputs[role] = p;  // roles win over names
    sched::apply_schedule(steps, st, schedule_name);
}

std::vector<int64_t> concrete_shape(const dsl::Graph &g, ValueId v, const std::map<std::string, int64_t> &symbols) {
    std::vector<int64_t> shape;
    for (const auto &d0 : g.node(v).type.dims) {
        const dsl::Dim d = dsl::resolve_dim(g, d0);
        if (d.is_static()) shape.push_back(d.size);
        else if (d.kind == dsl::Dim::Kind::Symbol && symbols.count(d.symbol)) shape.push_back(symbols.at(d.symbol));
        else throw LoweringError("the size of " + dsl::print_dim(g, d0) + " in " + dsl::print_node(g, v) + " is unknown");
    }
    return shape;
}

namespace {

Halide::Buffer<float> to_buffer(const dsl::Tensor &t, const std::string &name) {
    std::vector<int> sizes;
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) sizes.push_back((int)*it);
    if (sizes.empty()) sizes.push_back(1);
    Halide::Buffer<float> b(sizes, name);
    for (int64_t i = 0; i < t.numel(); i++) b.data()[i] = (float)t.data[i];
    return b;
}

dsl::Tensor to_tensor(const Halide::Buffer<float> &b, const std::vector<int64_t> &shape) {
    dsl::Tensor t;
    t.dtype = dsl::DType::F32;
    t.shape = shape;
    t.data.assign(b.data(), b.data() + t.numel());
    return t;
}

}  // namespace

GraphProgram::GraphProgram(const dsl::Graph &g, const std::vector<GroupSpec> &groups, const Halide::Target &target,
                           const ScheduleChooser &choose, bool jit)
    : graph_(g), target_(target) {
    const bool gpu = target.has_gpu_feature();
    for (const auto &spec : groups) {
        auto t0 = std::chrono::steady_clock::now();
        CompiledGroup cg;
        cg.spec = spec;
        const LoweredGroup probe = lower_group(g, spec);
        std::optional<sched::ScheduleSpec> chosen = choose ? choose(probe) : std::nullopt;
        // Every variant (and the fallback) gets a fresh lowering: schedules mutate Funcs.
        auto lower_all = [&](const sched::ScheduleSpec &s) {
            cg.variants.clear();
            for (size_t i = 0; i <= s.variants.size(); i++) {
                LoweredGroup lg = lower_group(g, spec);
                const auto &steps = i < s.variants.size() ? s.variants[i].steps : s.steps;
                apply_to_group(steps, lg, target, s.name);
                cg.variants.push_back(std::move(lg));
            }
            cg.schedule = s;
        };
        if (chosen) {
            try {
                lower_all(*chosen);
                cg.schedule_note = "schedule '" + chosen->name + "'";
            } catch (const sched::ScheduleError &e) {
                cg.schedule_note = "fell back to the default schedule: " + std::string(e.what());
                chosen.reset();
            }
        }
        if (!chosen) {
            lower_all(gpu ? default_gpu_group_schedule(probe, target) : default_group_schedule(probe, target));
            if (cg.schedule_note.empty()) cg.schedule_note = "default schedule";
        }
        for (auto &lg : cg.variants) {
            cg.pipelines.push_back(lg.pipeline());
            if (gpu || !jit) continue;  // GPU groups are compiled ahead of time, not run here
            try {
                use_openmp_parallel_runtime(cg.pipelines.back().jit_handlers());
                cg.pipelines.back().compile_jit(target);
            } catch (const Halide::Error &e) {
                throw LoweringError("Halide failed to compile group '" + spec.name + "': " + e.what());
            }
        }
        cg.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        groups_.push_back(std::move(cg));
    }
}

std::vector<dsl::Tensor> GraphProgram::run(const std::map<std::string, dsl::Tensor> &inputs,
                                           const std::map<std::string, int64_t> &symbols) const {
    std::map<ValueId, Halide::Buffer<float>> values;
    for (ValueId v : graph_.order()) {
        if (graph_.node(v).op != dsl::Op::Input) continue;
        auto it = inputs.find(graph_.display_name(v));
        if (it == inputs.end()) throw LoweringError("missing input '" + graph_.display_name(v) + "'");
        values[v] = to_buffer(it->second, graph_.display_name(v));
    }
    for (const auto &cg : groups_) {
        // Pick the schedule variant from the concrete extents its guards name.
        std::map<std::string, long> extents;
        for (const auto &[name, src] : cg.lowered().extent_sources)
            extents[name] = (long)concrete_shape(graph_, src.first, symbols)[src.second];
        const size_t pick = cg.schedule.pick_variant(extents);
        const LoweredGroup &lg = cg.variants[pick];
        for (size_t i = 0; i < lg.inputs.size(); i++) {
            auto it = values.find(lg.input_values[i]);
            if (it == values.end())
                throw LoweringError("group '" + cg.spec.name + "' reads " + graph_.display_name(lg.input_values[i]) +
                                    " before any group produced it");
            Halide::ImageParam p = lg.inputs[i];
            p.set(it->second);
        }
        std::vector<Halide::Buffer<>> outs;
        for (ValueId v : lg.output_values) {
            auto shape = concrete_shape(graph_, v, symbols);
            std::vector<int> sizes(shape.rbegin(), shape.rend());
            Halide::Buffer<float> b(sizes, graph_.display_name(v));
            values[v] = b;
            outs.push_back(b);
        }
        try {
            Halide::Pipeline p = cg.pipelines[pick];
            p.realize(Halide::Realization(outs), target_);
        } catch (const Halide::Error &e) {
            throw LoweringError("running group '" + cg.spec.name + "' failed: " + e.what());
        }
    }
    std::vector<dsl::Tensor> results;
    for (ValueId v : graph_.outputs) {
        auto it = values.find(v);
        if (it == values.end()) throw LoweringError("no group produces output " + graph_.display_name(v));
        results.push_back(to_tensor(it->second, concrete_shape(graph_, v, symbols)));
    }
    return results;
}

}  // namespace tessel::lower
