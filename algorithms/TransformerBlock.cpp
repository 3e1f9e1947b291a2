#include "algorithms/TransformerBlock.h"

#include "dsl/ir/Builder.h"
#include "dsl/ir/Diagnostics.h"

#include <cmath>
#include <string>
#include <vector>

namespace tessel {

using dsl::DType;
using dsl::GraphBuilder;
using dsl::Value;

namespace {

Value rms_norm(const Value &x, const Value &gain, double eps) { return x * rsqrt(reduce_mean(x * x, {1}, true) + eps) * gain; }

/** x [T, H, D] * cos + rotate_half(x) * sin, with rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2]). */
Value rotary(const Value &x, const Value &cos, const Value &sin, int64_t depth) {
    const int64_t half = depth / 2;
    const Value rotated = concat(-slice(x, 2, half, half), slice(x, 2, 0, half), 2);
    const dsl::Dim tokens = x.type().dims[0];
    return x * reshape(cos, {tokens, 1, depth}) + rotated * reshape(sin, {tokens, 1, depth});
}

}  // namespace

dsl::Graph transformer_block_graph(const TransformerBlockShape &s) {
    if (s.kv_heads < 1 || s.heads % s.kv_heads != 0)
        throw dsl::UserError("transformer block: heads (" + std::to_string(s.heads) + ") must be a multiple of kv_heads (" +
                             std::to_string(s.kv_heads) + ")");
    if (s.head_dim % 2 != 0)
        throw dsl::UserError("transformer block: head_dim " + std::to_string(s.head_dim) + " must be even (rotary pairs)");
    const int64_t hd = s.heads * s.head_dim, kvd = s.kv_heads * s.head_dim, group = s.heads / s.kv_heads;
    GraphBuilder b("transformer_block", s.mode);
    const Value x = b.input("x", DType::F32, {"T", s.hidden});
    const Value cos = b.input("cos", DType::F32, {"T", s.head_dim});
    const Value sin = b.input("sin", DType::F32, {"T", s.head_dim});
    Value k_past, v_past;  // the caches' S positions (kv_cache)
    if (s.kv_cache) {
        k_past = b.input("k_cache", DType::F32, {"S", s.kv_heads, s.head_dim});
        v_past = b.input("v_cache", DType::F32, {"S", s.kv_heads, s.head_dim});
    }
    const Value attn_norm = b.weight("attn_norm", DType::F32, {s.hidden});
    auto matrix = [&](const char *name, int64_t rows, int64_t cols) {
        const Value w = b.weight(name, DType::F32, {rows, cols});
        return s.bf16_weights ? cast(cast(w, DType::BF16), DType::F32) : w;
    };
    const Value wq = matrix("wq", s.hidden, hd);
    const Value wk = matrix("wk", s.hidden, kvd);
    const Value wv = matrix("wv", s.hidden, kvd);
    const Value wo = matrix("wo", hd, s.hidden);
    const Value mlp_norm = b.weight("mlp_norm", DType::F32, {s.hidden});
    const Value wg = matrix("w_gate", s.hidden, s.ffn);
    const Value wu = matrix("w_up", s.hidden, s.ffn);
    const Value wd = matrix("w_down", s.ffn, s.hidden);

    const Value h = rms_norm(x, attn_norm, s.eps).named("h");
    const Value q = rotary(reshape(matmul(h, wq), {"T", s.heads, s.head_dim}), cos, sin, s.head_dim).named("q");
    const Value k = rotary(reshape(matmul(h, wk), {"T", s.kv_heads, s.head_dim}), cos, sin, s.head_dim).named("k");
    const Value v = reshape(matmul(h, wv), {"T", s.kv_heads, s.head_dim}).named("v");
    const double scale = 1.0 / std::sqrt((double)s.head_dim);
    Value merged, k_out, v_out;
    if (s.kv_cache) {
        // Keys and values written into the caches' tails (positions outermost, so a cache of S
        // positions is a dense prefix of the caller's allocation); attention reads all S through
        // a transposed view [kv_heads, S, head_dim], broadcast over the groups of query heads:
        // q is [group, kv_heads, T, head_dim], query head j * group + g reading kv head j.
        k_out = update_tail(k_past, k, 0).named("k_cache_out");
        v_out = update_tail(v_past, v, 0).named("v_cache_out");
        const Value qg = transpose(reshape(q, {"T", s.kv_heads, group, s.head_dim}), {2, 1, 0, 3});
        const Value kh = transpose(k_out, {1, 0, 2}), vh = transpose(v_out, {1, 0, 2});
        const Value scores = matmul(qg, transpose(kh, {0, 2, 1})) * scale + b.causal_mask(DType::F32, {"T", "S"});
        const Value o = matmul(softmax(scores, 3), vh).named("attention");
        merged = reshape(transpose(o, {2, 1, 0, 3}), {"T", hd});
    } else {
        // Heads first; a query head's kv head is its index / group (a broadcast batch axis).
        k_out = transpose(k, {1, 0, 2}).named("k_cache");
        v_out = transpose(v, {1, 0, 2}).named("v_cache");
        const Value qh = reshape(transpose(q, {1, 0, 2}), {s.kv_heads, group, "T", s.head_dim});
        const Value kh = reshape(k_out, {s.kv_heads, 1, "T", s.head_dim});
        const Value vh = reshape(v_out, {s.kv_heads, 1, "T", s.head_dim});
        const Value scores = matmul(qh, transpose(kh, {0, 1, 3, 2})) * scale + b.causal_mask(DType::F32, {"T", "T"});
        const Value o = matmul(softmax(scores, 3), vh).named("attention");
        merged = reshape(transpose(reshape(o, {s.heads, "T", s.head_dim}), {1, 0, 2}), {"T", hd});
    }
    const Value x1 = (x + matmul(merged, wo)).named("x1");
    const Value h2 = rms_norm(x1, mlp_norm, s.eps).named("h2");
    const Value y = x1 + matmul(silu(matmul(h2, wg)) * matmul(h2, wu), wd);
    b.output("y", y);
    b.output(s.kv_cache ? "k_cache_out" : "k_cache", k_out);
    b.output(s.kv_cache ? "v_cache_out" : "v_cache", v_out);
    return std::move(b).build();
}

void rotary_tables(int64_t first, int64_t tokens, int64_t head_dim, std::vector<double> *cos, std::vector<double> *sin) {
    cos->assign((size_t)(tokens * head_dim), 0.0);
    sin->assign((size_t)(tokens * head_dim), 0.0);
    const int64_t half = head_dim / 2;
    for (int64_t t = 0; t < tokens; t++)
        for (int64_t j = 0; j < head_dim; j++) {
            const double theta = std::pow(10000.0, -2.0 * (double)(j % half) / (double)head_dim);
            const double angle = (double)(first + t) * theta;
            (*cos)[(size_t)(t * head_dim + j)] = std::cos(angle);
            (*sin)[(size_t)(t * head_dim + j)] = std::sin(angle);
        }
}

}  // namespace tessel
