#include "bench/GroupVariants.h"
#include "support/Clock.h"

#include "compiler/Plan.h"
#include "dsl/ir/Builder.h"
#include "dsl/ir/Numerics.h"
#include "lowering/ScheduleGroup.h"
#include "lowering/TensorBuffers.h"
#include "schedules/MatmulCpuSchedules.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>

#include <stdexcept>

namespace tessel::bench {

namespace {

GroupVariant compile(const std::string &label, dsl::Graph g, const sched::GroupScheduleChoice &schedule,
                     const Halide::Target &target) {
    GroupVariant v;
    v.label = label;
    // Planned as every command plans it (compiler/Plan.h): layouts included, so a variant runs
    // the nest `tessel run` ships for it.
    PlanOptions po;
    po.schedules.autoschedule = false;
    PlannedProgram planned = plan(g, target, po);
    v.graph = std::make_unique<dsl::Graph>(std::move(planned.graph));
    const dsl::FusionPlan &plan = planned.fusion;
    for (const dsl::FusionGroup &fg : plan.groups) {
        if (fg.prepared) {
            const lower::LoweredGroup probe = lower::lower_group(*v.graph, fg);
            v.prepare.push_back(
                std::make_unique<CompiledKernel>(*v.graph, fg, lower::default_group_schedule(probe, target), target));
        } else if (!v.kernel) {
            // Fitted to the group as the compiler fits it (a panel-stored w gets the panel nests).
            const lower::LoweredGroup probe = lower::lower_group(*v.graph, fg);
            v.kernel =
                std::make_unique<CompiledKernel>(*v.graph, fg, schedule.for_group(lower::group_shape(probe), target), target);
        } else {
            throw std::logic_error(label + ": expected one per-call group:\n" + plan.to_string(*v.graph));
        }
    }
    return v;
}

}  // namespace

GroupVariant::Prepared GroupVariant::prepare_weights(std::map<std::string, Halide::Runtime::Buffer<float> *> &buffers) const {
    const tessel::SteadyClock::time_point t0 = tessel::SteadyClock::now();
    const dsl::Graph &g = *graph;
    std::map<dsl::ValueId, Halide::Buffer<>> values;
    std::map<std::string, Halide::Buffer<>> loaded;  // weights loaded already quantized, made from w
    if (const int group = int4_group(label)) {
        const Halide::Runtime::Buffer<float> &w = *buffers.at("w");
        const int K = w.dim(1).extent(), N = w.dim(0).extent();
        Halide::Buffer<int8_t> p(N, (K + 1) / 2);
        Halide::Buffer<float> s(N, (K + group - 1) / group);
        quantize_int4(w.data(), K, N, group, p.data(), s.data());
        loaded = {{"p", p}, {"s", s}};
    }
    for (dsl::ValueId v : g.order()) {
        if (!(g.node(v).op == dsl::Op::Input && g.node(v).attrs.weight)) continue;
        if (auto it = loaded.find(g.display_name(v)); it != loaded.end()) {
            values[v] = it->second;
            continue;
        }
        Halide::Runtime::Buffer<float> &b = *buffers.at(g.display_name(v));
        if (g.node(v).layout.empty()) {
            std::vector<int64_t> shape;
            for (int d = b.dimensions() - 1; d >= 0; d--) shape.push_back(b.dim(d).extent());
            values[v] = value_buffer_over(g, v, b.data(), shape);  // f32 row-major: read in place
        } else {
            dsl::Tensor t;
            for (int d = b.dimensions() - 1; d >= 0; d--) t.shape.push_back(b.dim(d).extent());
            t.data.assign(b.data(), b.data() + b.number_of_elements());
            values[v] = to_value_buffer(g, v, t, g.display_name(v));
        }
    }
    for (const auto &k : prepare) {
        std::vector<halide_buffer_t *> raw;
        for (const auto &a : k->arguments()) {
            if (a.is_output) {
                std::vector<int64_t> shape;
                for (const auto &d : g.node(a.value).type.dims) shape.push_back(d.is_static() ? d.size : 0);
                // Symbolic extents of a weight-derived value come from the weights it is computed from.
                for (size_t i = 0; i < shape.size(); i++)
                    if (!shape[i]) {
                        const dsl::Dim d = g.node(a.value).type.dims[i];
                        for (const auto &[wv, wb] : values)
                            for (size_t j = 0; j < g.node(wv).type.dims.size(); j++)
                                if (g.node(wv).type.dims[j] == d && g.node(wv).layout.empty())
                                    shape[i] = wb.dim(wb.dimensions() - 1 - (int)j).extent();
                    }
                values[a.value] = make_value_buffer(g, a.value, shape, a.name);
            }
            raw.push_back(values.at(a.value).raw_buffer());
        }
        k->run(raw);
    }
    Prepared p;
    for (const auto &a : kernel->arguments())
        if (auto it = values.find(a.value); it != values.end()) p.buffers[a.name] = it->second;
    for (const auto &[name, b] : p.buffers) p.read_bytes = std::max<int64_t>(p.read_bytes, (int64_t)b.size_in_bytes());
    p.seconds = tessel::seconds_since(t0);
    return p;
}

void GroupVariant::run(std::map<std::string, Halide::Runtime::Buffer<float> *> &buffers, const Prepared &prepared) const {
    std::vector<halide_buffer_t *> args;
    std::vector<Halide::Buffer<>> held;  // descriptors of the prepared buffers (shared storage)
    held.reserve(kernel->arguments().size());
    for (const auto &a : kernel->arguments()) {
        auto it = prepared.buffers.find(a.name);
        if (it == prepared.buffers.end()) {
            args.push_back(buffers.at(a.name)->raw_buffer());
        } else {
            held.push_back(it->second);
            args.push_back(held.back().raw_buffer());
        }
    }
    kernel->run(args);
}

namespace {

/** The graph of variant `label` (see the header), or nullopt for an unknown label. */
std::optional<dsl::Graph> variant_graph(const std::string &label, const Halide::Target &target) {
    using namespace dsl;
    if (label == "two_outputs") {
        GraphBuilder b("two_outputs", NumericMode::Fast);
        Dim M = b.symbol("M"), K = b.symbol("K"), N = b.symbol("N");
        Value x = b.input("x", DType::F32, {M, K}), w = b.input("w", DType::F32, {K, N});
        Value bias = b.input("bias", DType::F32, {N});
        Value t = matmul(x, w);
        b.output("t", t);
        b.output("y", gelu_tanh(t + bias));
        return std::move(b).build();
    }
    // gelu_tanh(x @ rhs + bias), the right operand declared and read as `rhs` says.
    using Rhs = std::function<Value(GraphBuilder &, Dim K, Dim N)>;
    auto linear = [&](const Rhs &rhs) {
        GraphBuilder b(label, NumericMode::Fast);
        Dim M = b.symbol("M"), K = b.symbol("K"), N = b.symbol("N");
        Value x = b.input("x", DType::F32, {M, K});
        Value w = rhs(b, K, N);
        Value bias = b.input("bias", DType::F32, {N});
        b.output("y", gelu_tanh(matmul(x, w) + bias));
        return std::move(b).build();
    };
    const int nr = sched::CpuBlocking::for_target(target).nr;
    if (label == "x_wT")
        return linear([](GraphBuilder &b, Dim K, Dim N) { return transpose(b.input("wt", DType::F32, {N, K})); });
    if (label == "x_wT_prepared")
        return linear([](GraphBuilder &b, Dim K, Dim N) { return transpose(b.weight("wt", DType::F32, {N, K})); });
    if (label == "w_bf16")
        return linear([](GraphBuilder &b, Dim K, Dim N) {
            return cast(cast(b.weight("w", DType::F32, {K, N}), DType::BF16), DType::F32);
        });
    if (label == "w_int8")
        return linear([](GraphBuilder &b, Dim K, Dim N) { return quantized_int8(b.weight("w", DType::F32, {K, N})); });
    if (const int group = int4_group(label))
        return linear([group](GraphBuilder &b, Dim K, Dim N) {
            const Value p = b.weight("p", DType::I8, {b.symbol("KP"), N}), s = b.weight("s", DType::F32, {b.symbol("G"), N});
            return cast(unpack_int4(p, 0, K), DType::F32) * repeat_interleave(s, 0, group, K);
        });
    if (label == "w_panels")
        return linear([nr](GraphBuilder &b, Dim K, Dim N) { return b.weight("w", DType::F32, {K, N}, Layout::panels(1, nr)); });
    // Both: narrowed to bf16 and packed in panels when prepared (what the layout pass chooses
    // for a bf16 weight read by a matmul).
    if (label == "w_bf16_panels")
        return linear([nr](GraphBuilder &b, Dim K, Dim N) {
            return cast(b.weight("w", DType::BF16, {K, N}, Layout::panels(1, nr)), DType::F32);
        });
    return std::nullopt;
}

}  // namespace

double weight_element_bytes(const std::string &label) {
    if (const int group = int4_group(label)) return 0.5 + 4.0 / group;
    return label.rfind("w_bf16", 0) == 0 ? 2 : label == "w_int8" ? 1 : 4;
}

int int4_group(const std::string &label) { return label == "w_int4" ? 32 : label == "w_int4_g128" ? 128 : 0; }

void quantize_int4(const float *w, int K, int N, int group, int8_t *p, float *s, float *dequantized) {
    const int groups = (K + group - 1) / group;
    std::fill(p, p + (size_t)(K + 1) / 2 * N, 0);
    for (int g = 0; g < groups; g++)
        for (int n = 0; n < N; n++) {
            float m = 0;
            for (int k = g * group; k < std::min(K, (g + 1) * group); k++) m = std::max(m, std::fabs(w[(size_t)k * N + n]));
            const float scale = m / 7.0f;
            s[(size_t)g * N + n] = scale;
            for (int k = g * group; k < std::min(K, (g + 1) * group); k++) {
                const int q = (int)std::clamp(dsl::round_to(dsl::DType::I8, w[(size_t)k * N + n] / scale), -8.0, 7.0);
                p[(size_t)(k / 2) * N + n] |= (int8_t)((q & 15) << (k % 2 ? 4 : 0));
                if (dequantized) dequantized[(size_t)k * N + n] = (float)q * scale;
            }
        }
}

const std::vector<std::string> &group_variant_labels() {
    static const std::vector<std::string> labels = {"two_outputs", "x_wT",          "x_wT_prepared", "w_bf16",     "w_int8",
                                                    "w_panels",    "w_bf16_panels", "w_int4",        "w_int4_g128"};
    return labels;
}

GroupVariant make_group_variant(const std::string &label, const sched::GroupScheduleChoice &schedule,
                                const Halide::Target &target) {
    std::optional<dsl::Graph> g = variant_graph(label, target);
    if (!g) throw std::invalid_argument("unknown group variant '" + label + "'");
    return compile(label, std::move(*g), schedule, target);
}

std::vector<GroupVariant> make_group_variants(const sched::GroupScheduleChoice &schedule, const Halide::Target &target) {
    std::vector<GroupVariant> out;
    for (const auto &label : group_variant_labels()) out.push_back(make_group_variant(label, schedule, target));
    return out;
}

}  // namespace tessel::bench
