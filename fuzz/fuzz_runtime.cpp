// Fuzz target: the C runtime every generated library calls (runtime/tessel_runtime.h), driven
// as a library's entry drives it: a table of values (ranks 0-4, static or symbolic dims, panel
// layouts), caller buffers of any rank, type, extent and stride (or null, or without memory),
// guards, and arena packing of any sizes and lifetimes. Bugs: a crash or UB (ASan, UBSan), an
// argument check that accepts a buffer whose extents differ from the value's, a packing that
// overlaps two allocations alive together or ends past its reported peak.
#include "fuzz/FuzzTarget.h"

#include "runtime/tessel_runtime.h"

#include <HalideRuntime.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int kSymbols = 3;
const char *const kSymbolNames[kSymbols] = {"M", "K", "N"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tessel::fuzz::ByteReader r{data, data + size};
    // The library's table: up to 4 values.
    const int count = 1 + r.small(4);
    std::vector<std::vector<tessel_dim>> dims(count);
    std::vector<std::vector<tessel_physical_dim>> physical(count);
    std::vector<tessel_value> values(count);
    for (int i = 0; i < count; i++) {
        const int rank = r.small(5);
        for (int a = 0; a < rank; a++) {
            const bool symbolic = r.u(1) & 1;
            dims[i].push_back({symbolic ? -1 : int64_t(r.u(2)) - 8, symbolic ? r.small(kSymbols) : -1});
        }
        for (int a = 0; a < rank; a++) physical[i].push_back({a, TESSEL_AXIS_WHOLE, 0});
        if (rank > 0 && (r.u(1) & 1)) {  // the last axis in panels
            const int64_t width = int64_t(r.u(1)) - 2;
            physical[i].back() = {rank - 1, TESSEL_AXIS_PANELS, width};
            physical[i].push_back({rank - 1, TESSEL_AXIS_IN_PANEL, width});
        }
        values[i] = {"v", "f32[...]", 2, 32, 4, rank, dims[i].data(), (int)physical[i].size(), physical[i].data()};
    }
    // The caller's buffers.
    std::vector<std::vector<halide_dimension_t>> shapes(count);
    std::vector<halide_buffer_t> buffers(count);
    std::vector<halide_buffer_t *> pointers(count);
    static float memory[64];
    for (int i = 0; i < count; i++) {
        std::memset(&buffers[i], 0, sizeof buffers[i]);
        const int dimensions = r.small(6);
        for (int a = 0; a < dimensions; a++)
            shapes[i].push_back({int32_t(r.u(1)) - 4, int32_t(r.u(2)) - 16, int32_t(r.u(2)) - 16, 0});
        buffers[i].dimensions = dimensions;
        buffers[i].dim = shapes[i].data();
        buffers[i].type = {r.u(1) & 1 ? halide_type_float : halide_type_int, uint8_t(r.u(1) & 1 ? 32 : 16), 1};
        buffers[i].host = r.u(1) % 8 ? reinterpret_cast<uint8_t *>(memory) : nullptr;
        pointers[i] = r.u(1) % 16 ? &buffers[i] : nullptr;
    }
    int64_t symbols[kSymbols] = {-1, -1, -1};
    char error[256];
    const int refused =
        tessel_check_arguments(values.data(), nullptr, count, pointers.data(), kSymbolNames, symbols, error, sizeof error);
    if (refused && std::strlen(error) == 0) std::abort();  // a refusal says why
    if (!refused)
        for (int i = 0; i < count; i++) {  // accepted: every extent is the value's
            const int rank = values[i].rank;
            for (int a = 0; a < rank; a++) {
                const int64_t want = tessel_dim_extent(values[i].dims[a], symbols);
                if (pointers[i]->dim[rank - 1 - a].extent != want) std::abort();
            }
            int64_t bytes = 0;
            (void)tessel_value_bytes(&values[i], symbols, &bytes);
        }

    // Guards over three extents.
    std::vector<tessel_guard> guards;
    std::vector<int> guard_counts;
    const int variants = r.small(4);
    for (int v = 0; v < variants; v++) {
        guard_counts.push_back(r.small(3));
        for (int k = 0; k < guard_counts.back(); k++) guards.push_back({r.small(4) - 1, r.small(6), int64_t(r.u(8))});
    }
    const int64_t extents[3] = {int64_t(r.u(8)), int64_t(r.u(2)), int64_t(r.u(1)) - 1};
    const int picked = tessel_pick_variant(guards.data(), guard_counts.data(), variants, extents);
    if (picked < -1 || picked > variants) std::abort();

    // The arena: up to 24 allocations with their lifetimes.
    const int n = r.small(25);
    std::vector<int64_t> bytes(n), offsets(n);
    std::vector<int> first(n), last(n);
    for (int i = 0; i < n; i++) {
        bytes[i] = int64_t(r.u(3)) * TESSEL_ALIGNMENT;
        first[i] = r.small(16);
        last[i] = first[i] + r.small(16);
    }
    std::vector<unsigned char> conflicts(size_t(n) * n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) conflicts[size_t(i) * n + j] = i != j && first[i] <= last[j] && first[j] <= last[i];
    std::vector<unsigned char> scratch(TESSEL_PACK_SCRATCH_BYTES(n));
    const int64_t peak =
        tessel_pack(n, bytes.data(), first.data(), last.data(), conflicts.data(), offsets.data(), scratch.data());
    for (int i = 0; i < n; i++) {
        if (offsets[i] < 0 || offsets[i] + bytes[i] > peak || offsets[i] % TESSEL_ALIGNMENT) std::abort();
        for (int j = 0; j < i; j++)
            if (conflicts[size_t(i) * n + j] && bytes[i] && bytes[j] && offsets[i] < offsets[j] + bytes[j] &&
                offsets[j] < offsets[i] + bytes[i])
                std::abort();  // two allocations alive together overlap
    }
    return 0;
}
