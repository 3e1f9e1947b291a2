#include "algorithms/MemoryExamples.h"

#include "dsl/ir/Builder.h"

namespace tessel {

using namespace dsl;

Graph attention_fwd_bwd() {
    GraphBuilder b("attention_fwd_bwd");
    const Dim S = b.symbol("S");
    Value q = b.input("q", DType::F32, {S, 64}), k = b.input("k", DType::F32, {S, 64});
    Value v = b.input("v", DType::F32, {S, 64}), dout = b.input("do", DType::F32, {S, 64});
    Value p = b.name(softmax(matmul(q, transpose(k)) * 0.125, 1), "p");
    Value o = b.name(matmul(p, v), "o");
    Value dv = b.name(matmul(transpose(p), dout), "dv");
    Value dp = b.name(matmul(dout, transpose(v)), "dp");
    Value r = b.name(reduce_sum(dout * o, {1}, true), "r");
    Value ds = b.name(p * (dp - r), "ds");
    Value dq = b.name(matmul(ds, k) * 0.125, "dq");
    Value dk = b.name(matmul(transpose(ds), q) * 0.125, "dk");
    b.output(o);
    b.output(dq);
    b.output(dk);
    b.output(dv);
    return std::move(b).build();
}

Graph mlp_residual() {
    GraphBuilder b("mlp_residual");
    const Dim M = b.symbol("M"), K = b.symbol("K"), H = b.symbol("H");
    Value x = b.input("x", DType::F32, {M, K}), g = b.input("g", DType::F32, {K});
    Value w1 = b.input("w1", DType::F32, {K, H}), w2 = b.input("w2", DType::F32, {H, H});
    Value w3 = b.input("w3", DType::F32, {H, K});
    Value xn = b.name(x * g, "xn");
    Value h1 = b.name(gelu(matmul(xn, w1) * 0.125), "h1");
    Value h2 = b.name(gelu(matmul(h1, w2) * 0.125), "h2");
    b.output("y", matmul(h2, w3) * 0.125 + xn);
    return std::move(b).build();
}

}  // namespace tessel
