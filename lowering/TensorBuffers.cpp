#include "lowering/TensorBuffers.h"

#include "dsl/ir/Numerics.h"
#include "lowering/LowerToHalide.h"

#include <cstring>

namespace tessel {

namespace {

std::vector<int> halide_sizes(const dsl::Graph &g, dsl::ValueId v, const std::vector<int64_t> &shape) {
    const std::vector<int64_t> phys = dsl::physical_shape(g.node(v).layout, shape);
    std::vector<int> sizes(phys.rbegin(), phys.rend());  // Halide dimension 0 is the innermost
    if (sizes.empty()) sizes.push_back(1);
    return sizes;
}

Halide::Type type_of(const dsl::Graph &g, dsl::ValueId v) {
    const auto t = lower::storage_type(g.node(v).type.dtype);
    if (!t)
        throw lower::LoweringError("value %" + g.display_name(v) + " has no kernel storage type (" +
                                   dsl::to_string(g.node(v).type.dtype) + ")");
    return *t;
}

/** Calls f(physical linear index, logical linear index or -1 for padding) for every element. */
template <typename F>
void for_each_element(const dsl::Graph &g, dsl::ValueId v, const std::vector<int64_t> &shape, F f) {
    const dsl::Layout &layout = g.node(v).layout;
    const std::vector<dsl::PhysicalDim> dims = dsl::physical_dims(layout, (int)shape.size());
    const std::vector<int64_t> phys = dsl::physical_shape(layout, shape);
    int64_t total = 1;
    for (int64_t e : phys) total *= e;
    std::vector<int64_t> at(phys.size(), 0);
    for (int64_t p = 0; p < total; p++) {
        const std::vector<int64_t> idx = dsl::logical_index(dims, at, (int)shape.size());
        int64_t linear = 0;
        bool inside = true;
        for (size_t a = 0; a < shape.size(); a++) {
            inside = inside && idx[a] < shape[a];
            linear = linear * shape[a] + idx[a];
        }
        f(p, inside ? linear : -1);
        for (int d = (int)phys.size() - 1; d >= 0; d--) {  // odometer, innermost fastest
            if (++at[d] < phys[d]) break;
            at[d] = 0;
        }
    }
}

}  // namespace

Halide::Buffer<> make_value_buffer(const dsl::Graph &g, dsl::ValueId v, const std::vector<int64_t> &shape,
                                   const std::string &name) {
    return Halide::Buffer<>(type_of(g, v), halide_sizes(g, v, shape), name);
}

Halide::Buffer<> value_buffer_over(const dsl::Graph &g, dsl::ValueId v, void *data, const std::vector<int64_t> &shape) {
    return Halide::Buffer<>(type_of(g, v), data, halide_sizes(g, v, shape));
}

int64_t value_bytes(const dsl::Graph &g, dsl::ValueId v, const std::vector<int64_t> &shape) {
    int64_t n = type_of(g, v).bytes();
    for (int64_t e : dsl::physical_shape(g.node(v).layout, shape)) n *= e;
    return n;
}

Halide::Buffer<> to_value_buffer(const dsl::Graph &g, dsl::ValueId v, const dsl::Tensor &t, const std::string &name) {
    Halide::Buffer<> b = make_value_buffer(g, v, t.shape, name);
    const dsl::DType dtype = g.node(v).type.dtype;
    const bool row_major = g.node(v).layout.empty();
    if (dtype == dsl::DType::F32 && row_major) {  // the common case, without the index walk
        float *out = static_cast<float *>(b.data());
        for (int64_t i = 0; i < t.numel(); i++) out[i] = (float)t.data[i];
        return b;
    }
    auto store = [&](int64_t p, double x) {
        const float f = (float)x;
        if (dtype == dsl::DType::F32)
            static_cast<float *>(b.data())[p] = f;
        else if (dtype == dsl::DType::I8)
            static_cast<int8_t *>(b.data())[p] = (int8_t)dsl::round_to(dsl::DType::I8, x);
        else if (dtype == dsl::DType::BF16)
            static_cast<uint16_t *>(b.data())[p] = dsl::float_to_bf16_bits(f);
        else
            static_cast<uint16_t *>(b.data())[p] = dsl::float_to_half_bits(f);
    };
    for_each_element(g, v, t.shape, [&](int64_t p, int64_t l) { store(p, l < 0 ? 0.0 : t.data[l]); });
    return b;
}

dsl::Tensor from_value_buffer(const dsl::Graph &g, dsl::ValueId v, const Halide::Buffer<> &b, const std::vector<int64_t> &shape) {
    dsl::Tensor t;
    t.dtype = g.node(v).type.dtype;
    t.shape = shape;
    t.data.resize(t.numel());
    const dsl::DType dtype = t.dtype;
    auto load = [&](int64_t p) -> double {
        if (dtype == dsl::DType::F32) return static_cast<const float *>(b.data())[p];
        if (dtype == dsl::DType::I8) return static_cast<const int8_t *>(b.data())[p];
        const uint16_t bits = static_cast<const uint16_t *>(b.data())[p];
        return dtype == dsl::DType::BF16 ? dsl::bf16_bits_to_float(bits) : dsl::half_bits_to_float(bits);
    };
    for_each_element(g, v, shape, [&](int64_t p, int64_t l) {
        if (l >= 0) t.data[l] = load(p);
    });
    return t;
}

}  // namespace tessel
