#include "lowering/GraphProgram.h"

#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "schedules/ApplySchedule.h"

#include <chrono>

namespace tessel::lower {

using dsl::ValueId;

sched::ScheduleSpec default_group_schedule(const LoweredGroup &group, const Halide::Target &target) {
    const int lanes = std::max(4, target.natural_vector_size<float>());
    sched::ScheduleSpec s("default_" + group.kind, sched::Device::Cpu);
    s.description = "outputs vectorized along n, parallel over the outermost loop";
    std::string first_outer;
    for (const auto &y : group.outputs) {
        const int rank = y.dimensions();
        const sched::StageRef st{y.name()};
        s.split(st, "n", "no", "ni", lanes, sched::Tail::GuardWithIf).vectorize(st, "ni");
        const std::string outer = rank >= 2 ? axis_name(0, rank) : "no";
        s.parallel(st, outer);
        if (first_outer.empty()) first_outer = outer;
    }
    for (const auto &[name, f] : group.funcs) {
        bool is_output = false;
        for (const auto &y : group.outputs) is_output |= y.name() == name;
        if (is_output || !f.has_update_definition()) continue;
        if (group.outputs.size() == 1) s.compute_at(name, group.outputs[0].name(), first_outer);
        else s.compute_root(name);
    }
    return s;
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
                           const ScheduleChooser &choose)
    : graph_(g), target_(target) {
    for (const auto &spec : groups) {
        auto t0 = std::chrono::steady_clock::now();
        CompiledGroup cg{spec, lower_group(g, spec), {}, "", {}, 0};
        std::optional<sched::ScheduleSpec> chosen = choose ? choose(cg.lowered) : std::nullopt;
        auto apply = [&](const sched::ScheduleSpec &s) {
            sched::ScheduleTarget st{cg.lowered.funcs, {}, target};
            for (size_t i = 0; i < cg.lowered.inputs.size(); i++) st.inputs[cg.lowered.inputs[i].name()] = cg.lowered.inputs[i];
            sched::apply_schedule(s.steps, st, s.name);
        };
        if (chosen) {
            try {
                apply(*chosen);
                cg.schedule = *chosen;
                cg.schedule_note = "schedule '" + chosen->name + "'";
            } catch (const sched::ScheduleError &e) {
                // The failed attempt left the Funcs partially scheduled: lower afresh.
                cg.lowered = lower_group(g, spec);
                cg.schedule_note = "fell back to the default schedule: " + std::string(e.what());
                chosen.reset();
            }
        }
        if (!chosen) {
            cg.schedule = default_group_schedule(cg.lowered, target);
            apply(cg.schedule);
            if (cg.schedule_note.empty()) cg.schedule_note = "default schedule";
        }
        cg.pipeline = cg.lowered.pipeline();
        try {
            cg.pipeline.compile_jit(target);
        } catch (const Halide::Error &e) {
            throw LoweringError("Halide failed to compile group '" + spec.name + "': " + e.what());
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
        const LoweredGroup &lg = cg.lowered;
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
            Halide::Pipeline p = cg.pipeline;
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
