#include "bench/peers/BlockSystem.h"

#include <fstream>
#include <stdexcept>

namespace tessel::bench {

BlockSystem::BlockSystem(const TransformerBlockShape &shape, int64_t tokens, const std::string &dir)
    : shape_(shape), tokens_(tokens) {
    const dsl::Graph g = transformer_block_graph(shape);
    for (dsl::ValueId v : g.order()) {
        const dsl::Node &n = g.node(v);
        if (n.op != dsl::Op::Input) continue;
        std::vector<int64_t> dims;
        for (const dsl::Dim &d : n.type.dims) dims.push_back(d.is_static() ? d.size : tokens);
        dsl::Tensor t = dsl::Tensor::filled(dsl::DType::F32, dims, 0);
        std::vector<float> raw((size_t)t.numel());
        const std::string path = dir + "/" + g.display_name(v) + ".f32";
        std::ifstream in(path, std::ios::binary);
        if (!in.read(reinterpret_cast<char *>(raw.data()), (std::streamsize)(raw.size() * sizeof(float))))
            throw std::runtime_error("cannot read " + std::to_string(raw.size()) + " floats from " + path);
        for (size_t i = 0; i < raw.size(); i++) t.data[i] = raw[i];
        inputs_[g.display_name(v)] = std::move(t);
    }
}

void BlockSystem::prepare(const Halide::Target &target) {
    PlanOptions o;
    o.symbols = {{"T", tokens_}};
    program_ = std::make_unique<PlannedProgram>(plan(transformer_block_graph(shape_), target, o));
    compiled_ = std::make_unique<CompiledGraph>(program_->graph, program_->fusion, target, program_->chooser());
    run();
}

void BlockSystem::run() { outputs_ = compiled_->run(inputs_, {{"T", tokens_}}); }

std::vector<float> BlockSystem::output() const {
    if (outputs_.empty()) throw std::runtime_error("the block has not run");
    return std::vector<float>(outputs_[0].data.begin(), outputs_[0].data.end());
}

}  // namespace tessel::bench
