// The soak driver test_soak compiles against a generated library of graph `soak`
// (tests/soak/soak.tsl): CALLS calls from THREADS threads with random valid and invalid shapes
// and workspaces. Every invalid call must return its error code with a message; every 97th valid
// call is checked against a double-precision reference; resident memory is read after the first
// tenth of the calls and at the end. Prints one line of counts for the test to check.
//   soak_driver CALLS THREADS SEED
#include "ResidentMemory.h"
#include "soak.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace {

constexpr int K = 24, H = 40, N = 16;

struct Tensor {
    std::vector<float> data;
    std::vector<halide_dimension_t> dims;
    halide_buffer_t buf{};
    /** A dense f32 buffer of extents (outermost first). */
    explicit Tensor(std::vector<int> extents) {
        int64_t n = 1;
        for (int e : extents) n *= e;
        data.resize((size_t)n);
        dims.resize(extents.size());
        int stride = 1;
        for (size_t d = 0; d < extents.size(); d++) {
            dims[d] = {0, extents[extents.size() - 1 - d], stride, 0};
            stride *= extents[extents.size() - 1 - d];
        }
        buf.type = {halide_type_float, 32, 1};
        buf.dimensions = (int32_t)extents.size();
        buf.dim = dims.data();
        buf.host = reinterpret_cast<uint8_t *>(data.data());
    }
};

/** y = relu(x @ w + b) @ w2 in double, the graph's meaning. */
bool matches(const Tensor &x, const Tensor &w, const Tensor &b, const Tensor &w2, const Tensor &y, int M) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double acc = 0;
            for (int h = 0; h < H; h++) {
                double s = b.data[h];
                for (int k = 0; k < K; k++) s += double(x.data[m * K + k]) * w.data[k * H + h];
                acc += (s > 0 ? s : 0) * w2.data[h * N + n];
            }
            if (std::fabs(acc - y.data[m * N + n]) > 1e-3 * (1 + std::fabs(acc))) return false;
        }
    return true;
}

}  // namespace

int main(int argc, char **argv) {
    const long calls = argc > 1 ? std::atol(argv[1]) : 10000;
    const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
    const unsigned seed = argc > 3 ? (unsigned)std::atoi(argv[3]) : 1;
    std::atomic<long> next{0}, valid{0}, invalid{0}, refused{0}, wrong_code{0}, checked{0}, mismatched{0}, failed{0};
    std::atomic<long> rss_after_warmup{0}, rss_half{0}, rss_late{0};
    auto work = [&](int t) {
        std::mt19937 rng(seed * 7919 + t);
        std::uniform_real_distribution<float> value(-1, 1);
        Tensor w({K, H}), b({H}), w2({H, N});
        for (auto *p : {&w, &b, &w2})
            for (float &v : p->data) v = value(rng);
        const size_t workspace_size = 1 << 16;
        unsigned char *workspace = static_cast<unsigned char *>(std::aligned_alloc(64, workspace_size));
        for (long i; (i = next++) < calls;) {
            if (i == calls / 10) rss_after_warmup = resident_kib();
            if (i == calls / 2) rss_half = resident_kib();
            if (i == calls - calls / 10) rss_late = resident_kib();
            const int M = 1 + int(rng() % 67);
            Tensor x({M, K}), y({M, N});
            for (float &v : x.data) v = value(rng);
            const int64_t need = soak_workspace_bytes(&x.buf, &w.buf, &b.buf, &w2.buf, &y.buf);
            const int kind = int(rng() % 9);  // 0-4 valid, 5-8 invalid
            int rc, want;
            if (kind == 5) {  // a wrong extent
                x.dims[0].extent += 1 + int(rng() % 3);
                rc = soak(&x.buf, &w.buf, &b.buf, &w2.buf, &y.buf, nullptr, 0), want = 1;
            } else if (kind == 6) {  // a null buffer
                rc = soak(&x.buf, nullptr, &b.buf, &w2.buf, &y.buf, nullptr, 0), want = 1;
            } else if (kind == 7 && need > 64) {  // a workspace too small
                rc = soak(&x.buf, &w.buf, &b.buf, &w2.buf, &y.buf, workspace, need - 64), want = 2;
            } else if (kind == 8 && need > 0) {  // a workspace not 64-byte aligned
                rc = soak(&x.buf, &w.buf, &b.buf, &w2.buf, &y.buf, workspace + 8, need), want = 2;
            } else {
                const bool own = need > 0 && need <= (int64_t)workspace_size && (rng() & 1);
                rc = soak(&x.buf, &w.buf, &b.buf, &w2.buf, &y.buf, own ? workspace : nullptr, own ? need : 0);
                want = 0;
            }
            if (want) {
                invalid++;
                if (rc == want && std::strlen(soak_error()) > 0)
                    refused++;
                else
                    wrong_code++;
                continue;
            }
            valid++;
            if (rc != 0) {
                if (failed++ == 0)
                    std::fprintf(stderr, "a valid call failed (rc %d, M %d, workspace %lld): %s\n", rc, M, (long long)need,
                                 soak_error());
                continue;
            }
            if (i % 97 == 0) {
                checked++;
                if (!matches(x, w, b, w2, y, M)) mismatched++;
            }
        }
        std::free(workspace);
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; t++) pool.emplace_back(work, t);
    for (auto &p : pool) p.join();
    std::printf(
        "calls %ld valid %ld invalid %ld refused %ld wrong_code %ld failed %ld checked %ld mismatched %ld "
        "rss_kib_at_10%% %ld at_50%% %ld at_90%% %ld\n",
        calls, valid.load(), invalid.load(), refused.load(), wrong_code.load(), failed.load(), checked.load(), mismatched.load(),
        rss_after_warmup.load(), rss_half.load(), rss_late.load());
    return 0;
}
