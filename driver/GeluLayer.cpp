#include "driver/GeluLayer.h"

#include "algorithms/GeluMlp.h"
#include "compiler/Plan.h"
#include "dsl/Simplify.h"

#include <algorithm>
#include <stdexcept>

namespace tessel {

dsl::FusionGroup gelu_layer_group(const dsl::Graph &g, const Halide::Target &target) {
    PlanOptions o;
    o.simplify = false;  // the caller's graph is the layer's simplified graph
    o.schedules.autoschedule = false;
    const PlannedProgram p = plan(g, target, o);
    if (p.fusion.groups.size() != 1 || p.fusion.groups[0].kind != dsl::GroupKind::MatmulEpilogue)
        throw std::logic_error("the GELU layer did not plan as one matmul+epilogue group:\n" + p.fusion.to_string(p.graph));
    return p.fusion.groups[0];
}

GeluLayer::GeluLayer(GeluForm form, dsl::NumericMode mode, const sched::ScheduleSpec &schedule, const Halide::Target &target,
                     KernelBackend backend)
    : graph_(std::make_unique<dsl::Graph>(dsl::simplify_graph(gelu_mlp_layer(form == GeluForm::Tanh, mode)).graph)) {
    // Planned like every graph (compiler/Plan.h); the caller's schedule is compiled as given, so
    // one that does not apply throws ScheduleError rather than falling back.
    kernel_ = std::make_unique<CompiledKernel>(*graph_, gelu_layer_group(*graph_, target), schedule, target, backend);
    const std::vector<size_t> slots = kernel_->argument_positions({"x", "w", "bias", "y"});
    std::copy(slots.begin(), slots.end(), slot_.begin());
}

void GeluLayer::run(Halide::Runtime::Buffer<float> &x, Halide::Runtime::Buffer<float> &w, Halide::Runtime::Buffer<float> &bias,
                    Halide::Runtime::Buffer<float> &y) const {
    std::vector<halide_buffer_t *> buffers(4);
    buffers[slot_[0]] = x.raw_buffer();
    buffers[slot_[1]] = w.raw_buffer();
    buffers[slot_[2]] = bias.raw_buffer();
    buffers[slot_[3]] = y.raw_buffer();
    kernel_->run(buffers);
}

}  // namespace tessel
