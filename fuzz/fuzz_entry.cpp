// Fuzz target: a generated library's C entry points, driven through the header `tessel lib`
// writes (fuzz/entry.tsl; the entry and the C runtime are compiled here with ASan and UBSan, the
// kernels are Halide's object code), called as a careless caller would call them: buffers of any
// rank, type, extent, stride and min, null buffers and null host memory, workspaces and prepared
// blocks that are short, misaligned or null. Bugs:
//   - a return code outside 0..3, a refusal without a message or with a raw control byte;
//   - a refusal of a call that is valid (an accepted call that is not shows as one of the next two);
//   - an access outside the memory the caller described: every buffer, workspace and prepared
//     block is allocated to exactly its size, so ASan reports any byte past it;
//   - a wrong result: every accepted call's y is checked against a double reference of
//     relu(x @ w + b) @ transpose(w);
//   - run_prepared writing the prepared block (its bytes are compared before and after).
#include "fuzz_entry.h"
#include "fuzz/FuzzTarget.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int kK = 24;                              // the graph's static extent
constexpr int64_t kMaxElements = int64_t(1) << 18;  // larger buffers are only sized, never called

/** Memory of exactly `bytes` bytes at an address `offset` bytes past a 64-byte boundary. */
struct Block {
    void *base = nullptr;
    uint8_t *data = nullptr;
    Block(int64_t bytes, int offset) {
        if (posix_memalign(&base, 64, size_t(bytes + offset) + (bytes + offset == 0)) != 0) std::abort();
        data = static_cast<uint8_t *>(base) + offset;
    }
    Block(const Block &) = delete;
    Block &operator=(const Block &) = delete;
    ~Block() { std::free(base); }
};

/** A caller's buffer: its descriptor and exactly the memory the descriptor spans. */
struct Tensor {
    halide_buffer_t buffer{};
    halide_dimension_t dim[4]{};
    std::vector<float> memory;
    int64_t lowest = 0;      // offset (in elements) of the lowest addressed element from host
    bool present = true;     // false: the caller passes a null buffer pointer
    bool valid = true;       // exactly what the graph declares, dense, f32, non-null
    bool huge = false;       // spans more than kMaxElements: sized only
    bool host_null = false;  // the caller forgets the host pointer

    /** The declared value: `extents` innermost first, dense, min 0. */
    Tensor(std::initializer_list<int32_t> extents) {
        int32_t stride = 1;
        for (int32_t e : extents) {
            dim[buffer.dimensions++] = {0, e, stride, 0};
            stride *= e;
        }
        buffer.type = {halide_type_float, 32, 1};
        buffer.dim = dim;
    }

    /** One careless change, or none. */
    void mutate(tessel::fuzz::ByteReader &r) {
        if (r.small(6) != 0) return;
        const int d = r.small(4);
        switch (r.small(8)) {
        case 0: present = false; break;
        case 1: buffer.dimensions = r.small(5); break;
        case 2:
            buffer.type = halide_type_t(halide_type_code_t(r.small(4)), uint8_t(8 << r.small(4)), uint16_t(1 + r.small(2)));
            break;
        case 3: dim[d].extent = int32_t(r.u(2)) - 2; break;
        case 4: dim[d].extent = int32_t(1) << (16 + r.small(15)); break;
        case 5: dim[d].stride = int32_t(r.u(1)) - 8; break;
        case 6: dim[d].min = int32_t(r.u(1)) - 128; break;
        case 7: host_null = true; break;
        }
        valid = false;
    }

    /** Allocates the span and fills it (host stays null when the caller forgot it). */
    void allocate(uint32_t &seed) {
        int64_t lo = 0, hi = 0;
        for (int d = 0; d < buffer.dimensions; d++) {
            if (dim[d].extent <= 0) continue;
            const int64_t reach = int64_t(dim[d].extent - 1) * dim[d].stride;
            (reach < 0 ? lo : hi) += reach;
        }
        huge = hi - lo + 1 > kMaxElements;
        memory.assign(huge ? 1 : size_t(hi - lo + 1), 0.0f);
        for (float &v : memory) {
            seed = seed * 1664525u + 1013904223u;
            v = float(int32_t(seed >> 8) % 2001) / 1000.0f - 1.0f;
        }
        lowest = huge ? 0 : lo;
        buffer.host = host_null ? nullptr : reinterpret_cast<uint8_t *>(memory.data() - lowest);
    }

    halide_buffer_t *arg() { return present ? &buffer : nullptr; }
    /** Element (i0, i1): i0 along dimension 0, from the min. */
    float at(int64_t i0, int64_t i1 = 0) const {
        const float *host = reinterpret_cast<const float *>(buffer.host);
        return host[i0 * dim[0].stride + (buffer.dimensions > 1 ? i1 * dim[1].stride : 0)];
    }
};

/** A broken invariant: says which (and the entry's last message) before libFuzzer saves the input. */
[[noreturn]] void fail(const char *invariant, int rc = 0) {
    std::fprintf(stderr, "fuzz_entry: %s (rc %d; fuzz_entry_error: \"%s\")\n", invariant, rc, fuzz_entry_error());
    std::abort();
}

void check_refusal(int rc) {
    if (rc < 0 || rc > 3) fail("a return code outside 0..3", rc);
    const char *why = fuzz_entry_error();
    if (rc == 0) {
        if (why[0] != '\0') fail("a success left a message", rc);
        return;
    }
    if (why[0] == '\0') fail("a refusal without a message", rc);
    for (const char *c = why; *c; c++)
        if ((unsigned char)*c < 0x20 && *c != '\n') fail("a raw control byte in the message", rc);
}

/** y against the double reference, reading every tensor through its descriptor. */
void check_result(const Tensor &x, const Tensor &w, const Tensor &b, const Tensor &y, int M, int N) {
    std::vector<double> h(static_cast<size_t>(N));
    for (int m = 0; m < M; m++) {
        for (int n = 0; n < N; n++) {
            double s = b.at(n);
            for (int k = 0; k < kK; k++) s += double(x.at(k, m)) * w.at(n, k);
            h[n] = s > 0 ? s : 0;
        }
        for (int j = 0; j < kK; j++) {
            double ref = 0;
            for (int n = 0; n < N; n++) ref += h[n] * w.at(n, j);
            const double got = y.at(j, m);
            if (!(std::fabs(got - ref) <= 1e-3 * (1 + std::fabs(ref)))) fail("y differs from the reference");
        }
    }
}

/** How a caller hands over a block of `needed` bytes (a workspace, or a prepared block, which
 * the library never allocates itself); whether that must be accepted. */
struct Workspace {
    int64_t bytes = 0;
    int offset = 0;
    bool null = false;
    bool enough = true;
    Workspace(tessel::fuzz::ByteReader &r, int64_t needed, bool null_allocates) {
        bytes = needed < 0 ? 64 : needed;
        switch (r.small(8)) {
        case 0: bytes -= 1 + r.small(64); break;
        case 1: offset = 1 + r.small(63); break;
        case 2: null = true; break;
        case 3: bytes += r.small(256); break;
        default: break;
        }
        if (bytes < 0) bytes = 0;
        // Nothing needed: any pointer will do; null: the library allocates a workspace itself.
        enough = needed == 0 || (needed > 0 && ((null && null_allocates) || (!null && bytes >= needed && offset == 0)));
    }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    setenv("HL_NUM_THREADS", "1", 1);  // one thread: the same input behaves the same way
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tessel::fuzz::ByteReader r{data, data + size};
    const int M = 1 + r.small(33), N = 1 + r.small(40);
    Tensor x{kK, M}, w{N, kK}, b{N}, y{kK, M};
    Tensor *all[] = {&x, &w, &b, &y};
    uint32_t seed = uint32_t(r.u(4));
    for (Tensor *t : all) t->mutate(r);
    for (Tensor *t : all) t->allocate(seed);
    bool valid = true, huge = false;
    for (Tensor *t : all) valid &= t->valid, huge |= t->huge;

    const int64_t needed = fuzz_entry_workspace_bytes(x.arg(), w.arg(), b.arg(), y.arg());
    if (needed < -1 || (valid && needed < 0)) fail("workspace_bytes of valid arguments is not a size");
    if (huge) return 0;  // a span this large is sized, never run: its memory does not exist
    {
        const Workspace ws(r, needed, true);
        Block block(ws.bytes, ws.offset);
        const int rc = fuzz_entry(x.arg(), w.arg(), b.arg(), y.arg(), ws.null ? nullptr : block.data, ws.bytes);
        check_refusal(rc);
        if (needed < 0 && rc != 1) fail("arguments workspace_bytes refused were not refused", rc);
        if (valid && ws.enough && rc != 0) fail("a valid call was refused", rc);
        if (valid && !ws.enough && rc != 2) fail("a bad workspace was not refused as one", rc);
        if (rc == 0) check_result(x, w, b, y, M, N);
    }

    // Prepared once: the block may be short or misaligned; run_prepared must not write it.
    const int64_t prepared = fuzz_entry_prepared_bytes(w.arg());
    if (prepared < -1 || (w.valid && prepared < 0)) fail("prepared_bytes of a valid w is not a size");
    if (prepared < 0) return 0;
    const Workspace pw(r, prepared, false);
    Block block(pw.bytes, pw.offset);
    const int prc = fuzz_entry_prepare(w.arg(), pw.null ? nullptr : block.data, pw.bytes);
    check_refusal(prc);
    if (w.valid && pw.enough && prc != 0) fail("a valid prepare was refused", prc);
    if (prc != 0) return 0;
    const std::vector<uint8_t> before(block.data, block.data + pw.bytes);
    const int64_t run_needed = fuzz_entry_run_prepared_workspace_bytes(x.arg(), w.arg(), b.arg(), y.arg());
    if (run_needed < -1 || (valid && run_needed < 0)) fail("run_prepared_workspace_bytes of valid arguments is not a size");
    const Workspace ws(r, run_needed, true);
    Block scratch(ws.bytes, ws.offset);
    const int rc =
        fuzz_entry_run_prepared(x.arg(), w.arg(), b.arg(), y.arg(), block.data, ws.null ? nullptr : scratch.data, ws.bytes);
    check_refusal(rc);
    if (run_needed < 0 && rc != 1) fail("run_prepared: unsized arguments were not refused", rc);
    if (valid && ws.enough && rc != 0) fail("a valid run_prepared was refused", rc);
    if (valid && !ws.enough && rc != 2) fail("run_prepared: a bad workspace was not refused as one", rc);
    if (rc == 0) check_result(x, w, b, y, M, N);
    if (std::memcmp(before.data(), block.data, before.size()) != 0) fail("run_prepared wrote the prepared block");
    return 0;
}
