#include "algorithms/Attention.h"

#include "dsl/ir/Builder.h"

#include <cmath>

namespace tessel {

using dsl::DType;
using dsl::GraphBuilder;
using dsl::Value;

dsl::Graph attention_graph(const AttentionShape &s) {
    GraphBuilder b("attention", s.mode);
    Value q = b.input("q", DType::F32, {s.batch, s.queries, s.depth});
    Value k = b.input("k", DType::F32, {s.batch, s.keys, s.depth});
    Value v = b.input("v", DType::F32, {s.batch, s.keys, s.depth});
    Value scores = matmul(q, transpose(k, {0, 2, 1})) * (1.0 / std::sqrt((double)s.depth));
    if (s.causal) scores = scores + b.causal_mask(DType::F32, {s.queries, s.keys});
    b.output("o", matmul(softmax(scores, 2), v));
    return std::move(b).build();
}

dsl::Graph attention_train_graph(const AttentionShape &s) {
    GraphBuilder b("attention_train", s.mode);
    Value q = b.input("q", DType::F32, {s.batch, s.queries, s.depth});
    Value k = b.input("k", DType::F32, {s.batch, s.keys, s.depth});
    Value v = b.input("v", DType::F32, {s.batch, s.keys, s.depth});
    Value d_out = b.input("do", DType::F32, {s.batch, s.queries, s.depth});
    const double scale = 1.0 / std::sqrt((double)s.depth);
    Value scores = matmul(q, transpose(k, {0, 2, 1})) * scale;
    if (s.causal) scores = scores + b.causal_mask(DType::F32, {s.queries, s.keys});
    Value p = softmax(scores, 2);
    Value o = matmul(p, v);
    // dS = P ∘ (dP − rowsum(dO ∘ O)): the softmax's backward, with dP = dO Vᵀ.
    Value ds = p * (matmul(d_out, transpose(v, {0, 2, 1})) - reduce_sum(d_out * o, {2}, true));
    b.output("o", o);
    b.output("dq", matmul(ds, k) * scale);
    b.output("dk", matmul(transpose(ds, {0, 2, 1}), q) * scale);
    b.output("dv", matmul(transpose(p, {0, 2, 1}), d_out));
    return std::move(b).build();
}

}  // namespace tessel
