// A small decoder-only model on the kernel library `block` (algorithms/transformer_block_kv.tsl:
// hidden 256, 4 query heads over 2 KV heads of 64, a SiLU MLP of 688): kBlocks blocks between a
// tied embedding table (input layer and LM head), a prompt run as one prefill call per block, then
// a greedy decode loop of one token per call.
//
// The program owns every buffer. Each block's K and V caches are allocated once for the longest
// sequence, positions outermost, so the S positions of a call are a dense prefix of them; a call
// passes the same buffer as k_cache and k_cache_out, and the library writes the new positions in
// place (nothing is copied). Each block's weights are prepared once (block_prepare) into a block
// of memory every call reads.
//
// Checked against a plain C++ reference of the same model in double precision that keeps no
// cache: every position recomputed from the whole sequence. Exits 0 when every hidden state the
// library produced agrees within float32 accumulation error.
#include "block.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kHidden = 256, kHeads = 4, kKvHeads = 2, kHeadDim = 64, kFfn = 688;
constexpr int kVocab = 97, kBlocks = 2, kPrompt = 11, kNewTokens = 8, kMaxPositions = kPrompt + kNewTokens;
constexpr double kEps = 1e-5;

/** A dense f32 descriptor of `data` with these extents, outermost first. */
struct Tensor {
    std::vector<halide_dimension_t> dims;
    halide_buffer_t buffer{};

    Tensor(float *data, std::vector<int> extents_outer_first) {
        dims.resize(extents_outer_first.size());
        int stride = 1;
        for (size_t d = 0; d < dims.size(); d++) {
            dims[d] = {0, extents_outer_first[dims.size() - 1 - d], stride, 0};
            stride *= dims[d].extent;
        }
        buffer.type = {halide_type_float, 32, 1};
        buffer.host = reinterpret_cast<uint8_t *>(data);
        buffer.dimensions = (int)dims.size();
        buffer.dim = dims.data();
    }
    halide_buffer_t *raw() { return &buffer; }
};

/** Deterministic uniform numbers in [-1, 1). */
struct Random {
    uint64_t state;
    float next() {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return (float)((state >> 40) / (double)(1 << 24) * 2 - 1);
    }
};

struct Block {
    // Matrices in the [in, out] order the graph's matmuls read; uniform +-sqrt(3 / fan_in).
    std::vector<float> attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down;
    std::vector<float> k_cache, v_cache;  // [kMaxPositions, kKvHeads, kHeadDim]
    void *prepared = nullptr;

    explicit Block(uint64_t seed) {
        Random r{seed};
        auto matrix = [&](int rows, int cols) {
            std::vector<float> m((size_t)rows * cols);
            const float scale = std::sqrt(3.0f / rows);
            for (float &x : m) x = r.next() * scale;
            return m;
        };
        auto gain = [&] {
            std::vector<float> g(kHidden);
            for (float &x : g) x = 1 + 0.1f * r.next();
            return g;
        };
        attn_norm = gain();
        wq = matrix(kHidden, kHeads * kHeadDim);
        wk = matrix(kHidden, kKvHeads * kHeadDim);
        wv = matrix(kHidden, kKvHeads * kHeadDim);
        wo = matrix(kHeads * kHeadDim, kHidden);
        mlp_norm = gain();
        w_gate = matrix(kHidden, kFfn);
        w_up = matrix(kHidden, kFfn);
        w_down = matrix(kFfn, kHidden);
        k_cache.assign((size_t)kMaxPositions * kKvHeads * kHeadDim, 0);
        v_cache = k_cache;
    }
};

/** The weights' descriptors, in the library's argument order. */
struct Weights {
    Tensor attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down;
    explicit Weights(Block &b)
        : attn_norm(b.attn_norm.data(), {kHidden}),
          wq(b.wq.data(), {kHidden, kHeads * kHeadDim}),
          wk(b.wk.data(), {kHidden, kKvHeads * kHeadDim}),
          wv(b.wv.data(), {kHidden, kKvHeads * kHeadDim}),
          wo(b.wo.data(), {kHeads * kHeadDim, kHidden}),
          mlp_norm(b.mlp_norm.data(), {kHidden}),
          w_gate(b.w_gate.data(), {kHidden, kFfn}),
          w_up(b.w_up.data(), {kHidden, kFfn}),
          w_down(b.w_down.data(), {kFfn, kHidden}) {}
};

double rotary_angle(int position, int j) { return position * std::pow(10000.0, -2.0 * (j % (kHeadDim / 2)) / kHeadDim); }

void fail(const char *what, int rc) {
    std::printf("%s failed (%d): %s\n", what, rc, block_error());
    std::exit(1);
}

/** Tokens [first, first + count) through every block; x [count, kHidden] is replaced by the last
 * block's output. The caches hold the first `first` positions and receive the new ones. */
void run_blocks(std::vector<Block> &blocks, std::vector<float> &x, int first, int count) {
    std::vector<float> cos((size_t)count * kHeadDim), sin(cos.size()), y(x.size());
    for (int t = 0; t < count; t++)
        for (int j = 0; j < kHeadDim; j++) {
            cos[(size_t)t * kHeadDim + j] = (float)std::cos(rotary_angle(first + t, j));
            sin[(size_t)t * kHeadDim + j] = (float)std::sin(rotary_angle(first + t, j));
        }
    const int positions = first + count;
    for (Block &b : blocks) {
        Weights w(b);
        Tensor tx(x.data(), {count, kHidden}), tcos(cos.data(), {count, kHeadDim}), tsin(sin.data(), {count, kHeadDim}),
            ty(y.data(), {count, kHidden});
        // The caches' first `positions` positions: one descriptor for the cache and its update.
        Tensor k(b.k_cache.data(), {positions, kKvHeads, kHeadDim}), v(b.v_cache.data(), {positions, kKvHeads, kHeadDim});
        if (int rc = block_run_prepared(tx.raw(), tcos.raw(), tsin.raw(), k.raw(), v.raw(), w.attn_norm.raw(), w.wq.raw(),
                                        w.wk.raw(), w.wv.raw(), w.wo.raw(), w.mlp_norm.raw(), w.w_gate.raw(), w.w_up.raw(),
                                        w.w_down.raw(), ty.raw(), k.raw(), v.raw(), b.prepared, nullptr, 0))
            fail("block_run_prepared", rc);
        x.swap(y);
    }
}

int argmax_logit(const std::vector<float> &embedding, const float *h) {
    int best = 0;
    double best_logit = -INFINITY;
    for (int v = 0; v < kVocab; v++) {
        double logit = 0;
        for (int i = 0; i < kHidden; i++) logit += (double)embedding[(size_t)v * kHidden + i] * h[i];
        if (logit > best_logit) best_logit = logit, best = v;
    }
    return best;
}

// ---- The reference: the same model in double, no cache. ----

using Matrix = std::vector<double>;  // row-major

Matrix matmul(const Matrix &a, const std::vector<float> &w, int rows, int inner, int cols) {
    Matrix c((size_t)rows * cols, 0);
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < inner; k++)
            for (int n = 0; n < cols; n++) c[(size_t)r * cols + n] += a[(size_t)r * inner + k] * w[(size_t)k * cols + n];
    return c;
}

Matrix rms_norm(const Matrix &x, const std::vector<float> &gain, int rows) {
    Matrix h(x.size());
    for (int r = 0; r < rows; r++) {
        double ms = 0;
        for (int i = 0; i < kHidden; i++) ms += x[(size_t)r * kHidden + i] * x[(size_t)r * kHidden + i];
        const double scale = 1 / std::sqrt(ms / kHidden + kEps);
        for (int i = 0; i < kHidden; i++) h[(size_t)r * kHidden + i] = x[(size_t)r * kHidden + i] * scale * gain[i];
    }
    return h;
}

/** Rotary embedding of `heads` heads per row, position = row. */
void rotate(Matrix &m, int rows, int heads) {
    const int half = kHeadDim / 2;
    for (int r = 0; r < rows; r++)
        for (int h = 0; h < heads; h++) {
            double *x = &m[((size_t)r * heads + h) * kHeadDim];
            std::vector<double> out(kHeadDim);
            for (int j = 0; j < kHeadDim; j++) {
                const double rotated = j < half ? -x[j + half] : x[j - half];
                out[j] = x[j] * std::cos(rotary_angle(r, j)) + rotated * std::sin(rotary_angle(r, j));
            }
            std::copy(out.begin(), out.end(), x);
        }
}

Matrix reference_block(const Block &b, const Matrix &x, int rows) {
    const Matrix h = rms_norm(x, b.attn_norm, rows);
    Matrix q = matmul(h, b.wq, rows, kHidden, kHeads * kHeadDim), k = matmul(h, b.wk, rows, kHidden, kKvHeads * kHeadDim);
    const Matrix v = matmul(h, b.wv, rows, kHidden, kKvHeads * kHeadDim);
    rotate(q, rows, kHeads);
    rotate(k, rows, kKvHeads);
    Matrix merged((size_t)rows * kHeads * kHeadDim, 0);
    for (int head = 0; head < kHeads; head++) {
        const int kv = head / (kHeads / kKvHeads);
        for (int i = 0; i < rows; i++) {
            std::vector<double> p(i + 1);
            double top = -INFINITY, sum = 0;
            for (int j = 0; j <= i; j++) {
                double s = 0;
                for (int d = 0; d < kHeadDim; d++)
                    s += q[((size_t)i * kHeads + head) * kHeadDim + d] * k[((size_t)j * kKvHeads + kv) * kHeadDim + d];
                p[j] = s / std::sqrt((double)kHeadDim);
                top = std::max(top, p[j]);
            }
            for (double &s : p) sum += s = std::exp(s - top);
            for (int j = 0; j <= i; j++)
                for (int d = 0; d < kHeadDim; d++)
                    merged[((size_t)i * kHeads + head) * kHeadDim + d] +=
                        p[j] / sum * v[((size_t)j * kKvHeads + kv) * kHeadDim + d];
        }
    }
    Matrix x1 = matmul(merged, b.wo, rows, kHeads * kHeadDim, kHidden);
    for (size_t i = 0; i < x1.size(); i++) x1[i] += x[i];
    const Matrix h2 = rms_norm(x1, b.mlp_norm, rows);
    Matrix gate = matmul(h2, b.w_gate, rows, kHidden, kFfn);
    const Matrix up = matmul(h2, b.w_up, rows, kHidden, kFfn);
    for (size_t i = 0; i < gate.size(); i++) gate[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
    Matrix y = matmul(gate, b.w_down, rows, kFfn, kHidden);
    for (size_t i = 0; i < y.size(); i++) y[i] += x1[i];
    return y;
}

}  // namespace

int main() {
    std::vector<Block> blocks;
    for (int i = 0; i < kBlocks; i++) blocks.emplace_back(1000 + i);
    std::vector<float> embedding((size_t)kVocab * kHidden);
    Random r{7};
    for (float &e : embedding) e = r.next();
    for (Block &b : blocks) {
        Weights w(b);
        const int64_t bytes = block_prepared_bytes(w.attn_norm.raw(), w.wq.raw(), w.wk.raw(), w.wv.raw(), w.wo.raw(),
                                                   w.mlp_norm.raw(), w.w_gate.raw(), w.w_up.raw(), w.w_down.raw());
        if (bytes < 0) fail("block_prepared_bytes", -1);
        b.prepared = std::aligned_alloc(64, (size_t)((bytes + 63) / 64 * 64));
        if (int rc = block_prepare(w.attn_norm.raw(), w.wq.raw(), w.wk.raw(), w.wv.raw(), w.wo.raw(), w.mlp_norm.raw(),
                                   w.w_gate.raw(), w.w_up.raw(), w.w_down.raw(), b.prepared, bytes))
            fail("block_prepare", rc);
    }

    // The prompt, one prefill call per block; then one token per call.
    std::vector<int> tokens;
    for (int t = 0; t < kPrompt; t++) tokens.push_back((t * 31 + 5) % kVocab);
    std::vector<float> states((size_t)kMaxPositions * kHidden);  // the last block's output per position
    std::vector<float> x((size_t)kPrompt * kHidden);
    for (int t = 0; t < kPrompt; t++) std::copy_n(&embedding[(size_t)tokens[t] * kHidden], kHidden, &x[(size_t)t * kHidden]);
    const auto t0 = std::chrono::steady_clock::now();
    run_blocks(blocks, x, 0, kPrompt);
    const auto t1 = std::chrono::steady_clock::now();
    std::copy(x.begin(), x.end(), states.begin());
    for (int step = 0; step < kNewTokens; step++) {
        const int position = kPrompt + step;
        tokens.push_back(argmax_logit(embedding, &states[(size_t)(position - 1) * kHidden]));
        x.assign(&embedding[(size_t)tokens.back() * kHidden], &embedding[(size_t)(tokens.back() + 1) * kHidden]);
        run_blocks(blocks, x, position, 1);
        std::copy(x.begin(), x.end(), &states[(size_t)position * kHidden]);
    }
    const auto t2 = std::chrono::steady_clock::now();

    // The reference over the whole sequence the model produced.
    const int n = (int)tokens.size();
    Matrix ref((size_t)n * kHidden);
    for (int t = 0; t < n; t++)
        for (int i = 0; i < kHidden; i++) ref[(size_t)t * kHidden + i] = embedding[(size_t)tokens[t] * kHidden + i];
    for (const Block &b : blocks) ref = reference_block(b, ref, n);
    double worst = 0;
    for (size_t i = 0; i < ref.size(); i++) worst = std::max(worst, std::fabs(states[i] - ref[i]) / (1 + std::fabs(ref[i])));

    std::printf("small_model: %d blocks, prompt of %d tokens, %d generated:", kBlocks, kPrompt, kNewTokens);
    for (int t = kPrompt; t < n; t++) std::printf(" %d", tokens[t]);
    std::printf("\n  prefill %.2f ms, decode %.3f ms per token; max relative error against the reference %.2e\n",
                std::chrono::duration<double, std::milli>(t1 - t0).count(),
                std::chrono::duration<double, std::milli>(t2 - t1).count() / kNewTokens, worst);
    std::printf("  last call's variants: %s\n", block_variants());
    for (Block &b : blocks) std::free(b.prepared);
    return worst < 1e-3 ? 0 : 1;
}
