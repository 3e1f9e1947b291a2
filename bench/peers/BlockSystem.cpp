#include "bench/peers/BlockSystem.h"

#include "dsl/analysis/MemoryTraffic.h"
#include "dsl/passes/Rematerialize.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace tessel::bench {

namespace {

std::vector<float> read_floats(const std::string &path, size_t count) {
    std::vector<float> raw(count);
    std::ifstream in(path, std::ios::binary);
    if (!in.read(reinterpret_cast<char *>(raw.data()), (std::streamsize)(count * sizeof(float))))
        throw std::runtime_error("cannot read " + std::to_string(count) + " floats from " + path);
    return raw;
}

}  // namespace

BlockSystem::BlockSystem(const TransformerBlockShape &shape, int64_t tokens, int64_t past, const std::string &dir)
    : shape_(shape), tokens_(tokens), past_(past) {
    shape_.kv_cache = true;
    const dsl::Graph g = transformer_block_graph(shape_);
    for (dsl::ValueId v : g.order()) {
        const dsl::Node &n = g.node(v);
        if (n.op != dsl::Op::Input) continue;
        std::vector<int64_t> dims;
        for (const dsl::Dim &d : n.type.dims) dims.push_back(d.is_static() ? d.size : d.symbol == "T" ? tokens : past + tokens);
        const std::string name = g.display_name(v);
        int64_t count = 1;
        for (int64_t d : dims) count *= d;
        std::vector<float> raw = read_floats(dir + "/" + name + ".f32", (size_t)count);
        if (n.attrs.weight) {
            dsl::Tensor t = dsl::Tensor::filled(dsl::DType::F32, dims, 0);
            t.data.assign(raw.begin(), raw.end());
            weights_[name] = std::move(t);
        } else {
            Halide::Buffer<float> b(std::vector<int>(dims.rbegin(), dims.rend()));
            std::copy(raw.begin(), raw.end(), b.data());
            buffers_[name] = b;
        }
    }
    buffers_["y"] = Halide::Buffer<float>((int)shape_.hidden, (int)tokens);
    buffers_["k_cache_out"] = buffers_.at("k_cache");  // updated in place
    buffers_["v_cache_out"] = buffers_.at("v_cache");
}

void BlockSystem::prepare(const Halide::Target &target) {
    PlanOptions o;
    o.symbols = {{"T", tokens_}, {"S", past_ + tokens_}};
    program_ = std::make_unique<PlannedProgram>(plan(transformer_block_graph(shape_), target, o));
    compiled_ = std::make_unique<CompiledGraph>(program_->graph, program_->fusion, target, program_->chooser());
    run();
}

void BlockSystem::run() {
    ArenaOptions o;
    o.donated_inputs = {"k_cache", "v_cache"};
    compiled_->run_buffers(weights_, buffers_, o);
}

std::vector<BlockSystem::GroupTime> BlockSystem::group_times(int calls) {
    ArenaOptions o;
    o.donated_inputs = {"k_cache", "v_cache"};
    o.time_groups = true;
    const dsl::FusionPlan &plan = compiled_->plan();
    std::vector<std::vector<double>> samples(plan.groups.size());
    for (int c = 0; c < calls; c++) {
        RunStats stats;
        compiled_->run_buffers(weights_, buffers_, o, &stats);
        for (size_t g = 0; g < samples.size(); g++) samples[g].push_back(stats.group_seconds[g]);
    }
    const std::map<std::string, int64_t> sizes{{"T", tokens_}, {"S", past_ + tokens_}};
    std::vector<GroupTime> out;
    for (size_t g = 0; g < plan.groups.size(); g++) {
        const dsl::FusionGroup &fg = plan.groups[g];
        if (fg.prepared) continue;
        GroupTime t{fg.name, dsl::to_string(fg.kind)};
        std::sort(samples[g].begin(), samples[g].end());
        t.seconds = samples[g][samples[g].size() / 2];
        for (dsl::ValueId v : fg.nodes) t.flops += dsl::op_flops(program_->graph, v, sizes);
        const dsl::TrafficEstimate traffic = dsl::estimate_traffic_grouped(program_->graph, {fg}, sizes);
        t.bytes = (double)(traffic.bytes_read + traffic.bytes_written);
        out.push_back(std::move(t));
    }
    return out;
}

std::vector<float> BlockSystem::output() const {
    const Halide::Buffer<> &y = buffers_.at("y");
    const float *p = static_cast<const float *>(y.data());
    return std::vector<float>(p, p + y.number_of_elements());
}

}  // namespace tessel::bench
