#include "bench/peers/AttentionTrainSystem.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace tessel::bench {

AttentionTrainSystem::AttentionTrainSystem(const AttentionShape &shape, const std::string &dir) : shape_(shape) {
    if (shape.queries != shape.keys) throw std::invalid_argument("attention training shapes need S == L");
    const int b = (int)shape.batch, s = (int)shape.queries, d = (int)shape.depth;
    for (const char *name : {"q", "k", "v", "do"}) {
        Halide::Buffer<float> t(d, s, b);
        std::ifstream in(dir + "/" + name + ".f32", std::ios::binary);
        if (!in.read(reinterpret_cast<char *>(t.data()), (std::streamsize)(t.number_of_elements() * sizeof(float))))
            throw std::runtime_error("cannot read " + dir + "/" + name + ".f32");
        buffers_[name] = t;
    }
    out_ = Halide::Buffer<float>(d, s, b, 4);
    const char *outputs[] = {"o", "dq", "dk", "dv"};
    for (int i = 0; i < 4; i++) {
        Halide::Buffer<float> slice = out_.sliced(3, i);
        buffers_[outputs[i]] = slice;
    }
}

void AttentionTrainSystem::prepare(const Halide::Target &target) {
    program_ = std::make_unique<PlannedProgram>(plan(attention_train_graph(shape_), target, PlanOptions{}));
    compiled_ = std::make_unique<CompiledGraph>(program_->graph, program_->fusion, target, program_->chooser());
    run();
}

void AttentionTrainSystem::run() { compiled_->run_buffers({}, buffers_); }

std::vector<AttentionTrainSystem::GroupTime> AttentionTrainSystem::group_times(int calls) {
    ArenaOptions o;
    o.time_groups = true;
    const dsl::FusionPlan &plan = compiled_->plan();
    std::vector<std::vector<double>> samples(plan.groups.size());
    for (int c = 0; c < calls; c++) {
        RunStats stats;
        compiled_->run_buffers({}, buffers_, o, &stats);
        for (size_t g = 0; g < samples.size(); g++) samples[g].push_back(stats.group_seconds[g]);
    }
    std::vector<GroupTime> out;
    for (size_t g = 0; g < plan.groups.size(); g++) {
        std::sort(samples[g].begin(), samples[g].end());
        out.push_back({plan.groups[g].name, dsl::to_string(plan.groups[g].kind), samples[g][samples[g].size() / 2]});
    }
    return out;
}

}  // namespace tessel::bench
