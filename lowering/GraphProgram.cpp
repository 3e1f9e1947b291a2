#include "lowering/GraphProgram.h"

#include "codegen/ParallelRuntime.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "schedules/ApplySchedule.h"
#include "schedules/Library.h"

#include <chrono>

namespace tessel::lower {

using dsl::ValueId;

namespace {

/** "r$x" -> "r", "k$x.ko" -> "ko": the name ApplySchedule resolves a loop by. */
std::string loop_name(const std::string &dim_var) {
    std::string s = dim_var.substr(dim_var.rfind('.') == std::string::npos ? 0 : dim_var.rfind('.') + 1);
    if (s.size() > 2 && s.compare(s.size() - 2, 2, "$x") == 0) s.resize(s.size() - 2);
    return s;
}

}  // namespace

sched::GroupShape group_shape(const LoweredGroup &group) {
    sched::GroupShape g;
    g.kind = group.kind;
    for (size_t i = 0; i < group.outputs.size(); i++) g.outputs.push_back({group.output_names[i], group.outputs[i].dimensions()});
    for (const auto &[name, f] : group.funcs) {
        if (!f.has_update_definition()) continue;
        sched::GroupReduction r;
        r.name = name;
        r.rank = f.dimensions();
        for (const auto &d : f.function().update(0).schedule().dims())
            if (d.is_rvar()) r.rvars.push_back(loop_name(d.var));
        if (auto it = group.reduction_axes.find(name); it != group.reduction_axes.end()) {
            r.along_n = it->second.along_n;
            r.n_is_data = it->second.n_is_data;
            r.row_local = it->second.row_local;
        }
        g.reductions.push_back(std::move(r));
    }
    return g;
}

sched::ScheduleSpec library_schedule_for(const std::string &name, const LoweredGroup &group,
                                         const Halide::Target &target) {
    return sched::library_schedule(name, group_shape(group), target);
}

sched::ScheduleSpec default_group_schedule(const LoweredGroup &group, const Halide::Target &target) {
    return sched::fallback_group_schedule(group_shape(group), target);
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
                cg.schedule_note = std::string(e.what());
                chosen.reset();
            }
        }
        if (!chosen) {
            const sched::ScheduleSpec fallback = default_group_schedule(probe, target);
            lower_all(fallback);
            const std::string what = "default schedule '" + fallback.name + "'";
            cg.schedule_note = cg.schedule_note.empty() ? what : "fell back to the " + what + ": " + cg.schedule_note;
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
