#include "bench/GroupVariants.h"

#include "dsl/Simplify.h"
#include "dsl/ir/Builder.h"
#include "lowering/ScheduleGroup.h"

#include <stdexcept>

namespace tessel::bench {

namespace {

GroupVariant compile(const std::string &label, dsl::Graph g, const sched::ScheduleSpec &schedule,
                     const Halide::Target &target) {
    GroupVariant v;
    v.label = label;
    v.graph = std::make_unique<dsl::Graph>(dsl::simplify_graph(std::move(g)).graph);
    const dsl::FusionPlan plan = dsl::plan_fusion(*v.graph, lower::fusion_options(target));
    if (plan.groups.size() != 1) throw std::logic_error(label + ": expected one fused group:\n" + plan.to_string(*v.graph));
    v.kernel = std::make_unique<CompiledKernel>(*v.graph, plan.groups[0], schedule, target);
    return v;
}

}  // namespace

void GroupVariant::run(std::map<std::string, Halide::Runtime::Buffer<float> *> &buffers) const {
    std::vector<halide_buffer_t *> args;
    for (const auto &a : kernel->arguments()) args.push_back(buffers.at(a.name)->raw_buffer());
    kernel->run(args);
}

std::vector<GroupVariant> make_group_variants(const sched::ScheduleSpec &schedule, const Halide::Target &target) {
    using namespace dsl;
    std::vector<GroupVariant> out;
    {
        GraphBuilder b("two_outputs", NumericMode::Fast);
        Dim M = b.symbol("M"), K = b.symbol("K"), N = b.symbol("N");
        Value x = b.input("x", DType::F32, {M, K}), w = b.input("w", DType::F32, {K, N});
        Value bias = b.input("bias", DType::F32, {N});
        Value t = matmul(x, w);
        b.output("t", t);
        b.output("y", gelu_tanh(t + bias));
        out.push_back(compile("two_outputs", std::move(b).build(), schedule, target));
    }
    {
        GraphBuilder b("x_wT", NumericMode::Fast);
        Dim M = b.symbol("M"), K = b.symbol("K"), N = b.symbol("N");
        Value x = b.input("x", DType::F32, {M, K}), wt = b.input("wt", DType::F32, {N, K});
        Value bias = b.input("bias", DType::F32, {N});
        b.output("y", gelu_tanh(matmul(x, transpose(wt)) + bias));
        out.push_back(compile("x_wT", std::move(b).build(), schedule, target));
    }
    return out;
}

}  // namespace tessel::bench
