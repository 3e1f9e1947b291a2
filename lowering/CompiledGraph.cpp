#include "lowering/CompiledGraph.h"

#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "lowering/ScheduleGroup.h"

namespace tessel {

using dsl::ValueId;

std::vector<int64_t> concrete_shape(const dsl::Graph &g, ValueId v, const std::map<std::string, int64_t> &symbols) {
    std::vector<int64_t> shape;
    for (const auto &d0 : g.node(v).type.dims) {
        const dsl::Dim d = dsl::resolve_dim(g, d0);
        if (d.is_static()) shape.push_back(d.size);
        else if (d.kind == dsl::Dim::Kind::Symbol && symbols.count(d.symbol)) shape.push_back(symbols.at(d.symbol));
        else throw lower::LoweringError("the size of " + dsl::print_dim(g, d0) + " in " + dsl::print_node(g, v) + " is unknown");
    }
    return shape;
}

namespace {

Halide::Buffer<float> make_buffer(const std::vector<int64_t> &shape, const std::string &name) {
    std::vector<int> sizes(shape.rbegin(), shape.rend());  // Halide dimension 0 is the last axis
    if (sizes.empty()) sizes.push_back(1);
    return Halide::Buffer<float>(sizes, name);
}

Halide::Buffer<float> to_buffer(const dsl::Tensor &t, const std::string &name) {
    Halide::Buffer<float> b = make_buffer(t.shape, name);
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

CompiledGraph::CompiledGraph(const dsl::Graph &g, const dsl::FusionPlan &plan, const Halide::Target &target,
                             const ScheduleChooser &choose, KernelBackend backend)
    : graph_(g) {
    for (const auto &fg : plan.groups) {
        Group cg;
        const lower::LoweredGroup probe = lower::lower_group(g, fg);
        std::optional<sched::ScheduleSpec> chosen = choose ? choose(fg, probe) : std::nullopt;
        if (chosen) {
            try {
                cg.kernel = std::make_unique<CompiledKernel>(g, fg, *chosen, target, backend);
                cg.schedule_note = "schedule '" + chosen->name + "'";
            } catch (const sched::ScheduleError &e) {
                cg.schedule_note = std::string(e.what());
            }
        }
        if (!cg.kernel) {
            const sched::ScheduleSpec fallback = lower::default_group_schedule(probe, target);
            cg.kernel = std::make_unique<CompiledKernel>(g, fg, fallback, target, backend);
            const std::string what = "default schedule '" + fallback.name + "'";
            cg.schedule_note = cg.schedule_note.empty() ? what : "fell back to the " + what + ": " + cg.schedule_note;
        }
        groups_.push_back(std::move(cg));
    }
}

std::vector<dsl::ExternalGroup> CompiledGraph::as_external_groups() const {
    std::vector<dsl::ExternalGroup> out;
    for (const auto &cg : groups_) {
        const CompiledKernel *k = cg.kernel.get();
        dsl::ExternalGroup eg;
        eg.members = k->group().nodes;
        for (const auto &a : k->arguments())
            if (a.is_output) eg.outputs.push_back(a.value);
        const dsl::Graph *g = &graph_;
        eg.run = [k, g](const std::map<ValueId, dsl::Tensor> &values, const std::map<std::string, int64_t> &symbols) {
            std::vector<Halide::Buffer<float>> buffers;
            std::vector<halide_buffer_t *> raw;
            for (const auto &a : k->arguments()) {
                if (a.is_output) {
                    buffers.push_back(make_buffer(concrete_shape(*g, a.value, symbols), a.name));
                } else {
                    auto it = values.find(a.value);
                    if (it == values.end())
                        throw lower::LoweringError("group '" + k->group().name + "' reads " + a.name + " before it is computed");
                    buffers.push_back(to_buffer(it->second, a.name));
                }
                raw.push_back(buffers.back().raw_buffer());
            }
            k->run(raw);
            std::vector<dsl::Tensor> results;
            for (size_t i = 0; i < k->arguments().size(); i++)
                if (k->arguments()[i].is_output)
                    results.push_back(to_tensor(buffers[i], concrete_shape(*g, k->arguments()[i].value, symbols)));
            return results;
        };
        out.push_back(std::move(eg));
    }
    return out;
}

std::vector<dsl::Tensor> CompiledGraph::run(const std::map<std::string, dsl::Tensor> &inputs,
                                            const std::map<std::string, int64_t> &symbols) const {
    dsl::RunOptions o;
    o.symbol_sizes = symbols;
    o.external_groups = as_external_groups();
    return dsl::interpret(graph_, inputs, o).outputs;
}

}  // namespace tessel
