// Fuzz target: the C runtime every generated library calls (runtime/tessel_runtime.h), driven
// as a library's entry drives it: a table of values (ranks 0-4, static or symbolic dims, panel
// layouts), caller buffers of any rank, type, extent and stride (or null, or without memory),
// guards, arena packing of any sizes and lifetimes, and elementwise programs of any steps over
// buffers that broadcast or not. Bugs: a crash or UB (ASan, UBSan), an argument check that
// accepts a buffer whose extents differ from the value's, a packing that overlaps two allocations
// alive together or ends past its reported peak, a program run that refuses without a message or
// accepts and leaves an output element unwritten.
#include "fuzz/FuzzTarget.h"

#include "runtime/tessel_runtime.h"

#include <HalideRuntime.h>

#include <algorithm>
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

    // An elementwise program: steps, registers and outputs of any value (a malformed program is
    // refused, never run) over buffers that own their memory, dense, of extents that broadcast
    // to the first output's or not (negative ones too).
    const int inputs = r.small(3), outputs = 1 + r.small(2);
    std::vector<tessel_program_step> steps(r.small(8));
    for (tessel_program_step &s : steps)
        s = {r.small(TESSEL_PROGRAM_OP_COUNT + 2) - 1,
             r.small(8) - 1,
             r.small(8) - 1,
             r.small(8) - 1,
             r.small(8) - 1,
             float(int(r.u(1)) - 128)};
    std::vector<int32_t> output_registers(outputs);
    for (int32_t &o : output_registers) o = r.small(8) - 1;
    const tessel_program program = {
        "fuzz", inputs, outputs, r.small(8), (int)steps.size(), steps.data(), output_registers.data()};
    const int rank = 1 + r.small(3);
    std::vector<int32_t> domain(rank);
    for (int32_t &e : domain) e = r.small(7) - 1;
    const int arguments = inputs + outputs;
    std::vector<std::vector<halide_dimension_t>> program_dims(arguments);
    std::vector<std::vector<float>> storage(arguments);
    std::vector<halide_buffer_t> program_buffers(arguments);
    std::vector<halide_buffer_t *> program_pointers(arguments);
    const uint32_t unwritten = 0x7fc0beef;  // a NaN no op produces from these inputs
    for (int a = 0; a < arguments; a++) {
        const bool output = a >= inputs;
        const int dimensions = output ? rank : r.small(rank + 1);
        int64_t elements = 1, stride = 1;
        for (int d = 0; d < dimensions; d++) {
            const int choice = r.small(4);  // the domain's extent, 1, or another
            const int32_t extent = output && (a == inputs || choice) ? domain[d]
                                   : choice == 1                     ? 1
                                   : choice == 2                     ? domain[d]
                                                                     : r.small(7) - 1;
            program_dims[a].push_back({0, extent, int32_t(stride), 0});
            stride *= std::max(extent, 1);
            elements *= std::max(extent, 1);
        }
        storage[a].assign(size_t(elements), 0.0f);
        for (size_t i = 0; i < storage[a].size(); i++) {
            if (output)
                std::memcpy(&storage[a][i], &unwritten, 4);
            else
                storage[a][i] = float(int(i % 7) - 3);
        }
        std::memset(&program_buffers[a], 0, sizeof program_buffers[a]);
        program_buffers[a].type = {halide_type_float, 32, 1};
        program_buffers[a].host = reinterpret_cast<uint8_t *>(storage[a].data());
        program_buffers[a].dimensions = dimensions;
        program_buffers[a].dim = program_dims[a].data();
        program_pointers[a] = &program_buffers[a];
    }
    const int ran = tessel_program_run(&program, program_pointers.data(), error, sizeof error);
    if (ran != 0 && std::strlen(error) == 0) std::abort();  // a refusal says why
    bool empty = false;                                     // a domain of no elements writes nothing
    for (int32_t e : domain) empty = empty || e == 0;
    if (ran == 0 && !empty)
        for (int a = inputs; a < arguments; a++)
            for (float v : storage[a]) {
                uint32_t bits;
                std::memcpy(&bits, &v, 4);
                if (bits == unwritten) std::abort();  // an output element left unwritten
            }
    return 0;
}
