#include "driver/AttentionLayer.h"

#include "compiler/Plan.h"

#include <algorithm>
#include <stdexcept>

namespace tessel {

AttentionLayer::AttentionLayer(const AttentionShape &shape, const Halide::Target &target) {
    PlanOptions o;
    o.schedules.autoschedule = false;
    PlannedProgram p = plan(attention_graph(shape), target, o);
    if (p.fusion.groups.size() != 1 || p.fusion.groups[0].kind != dsl::GroupKind::Attention)
        throw std::logic_error("attention did not plan as one attention group:\n" + p.fusion.to_string(p.graph));
    graph_ = std::make_unique<dsl::Graph>(std::move(p.graph));
    kernel_ = std::make_unique<CompiledKernel>(*graph_, p.fusion.groups[0], p.schedules[0].spec, target);
    const std::vector<size_t> slots = kernel_->argument_positions({"q", "k", "v", "o"});
    std::copy(slots.begin(), slots.end(), slot_.begin());
}

void AttentionLayer::run(Halide::Runtime::Buffer<float> &q, Halide::Runtime::Buffer<float> &k, Halide::Runtime::Buffer<float> &v,
                         Halide::Runtime::Buffer<float> &o) const {
    std::vector<halide_buffer_t *> buffers(4);
    buffers[slot_[0]] = q.raw_buffer();
    buffers[slot_[1]] = k.raw_buffer();
    buffers[slot_[2]] = v.raw_buffer();
    buffers[slot_[3]] = o.raw_buffer();
    kernel_->run(buffers);
}

std::string AttentionLayer::schedule_summary() const {
    return kernel_->schedule().name + " (" + kernel_->schedule().description + ")";
}

}  // namespace tessel
