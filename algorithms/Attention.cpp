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

}  // namespace tessel
