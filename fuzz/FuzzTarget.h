/** \file
 * The shared shape of Tessel's libFuzzer targets (fuzz/README.md): the input is TSL text; each
 * target runs the front end one stage further and treats a UserError (the program refusing bad
 * text or a graph it cannot compile, with a message) as a normal outcome. Anything else that
 * escapes (an InternalError, std::out_of_range, a Halide error) aborts: that is a bug, and
 * libFuzzer saves the input. ASan and UBSan catch the rest (no recovery from UB).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dsl/ir/Diagnostics.h"

namespace tessel::fuzz {

/** The input as text; inputs longer than 64 KiB are cut there (the dictionary-driven mutations
 * need no more, and it bounds the time one input takes). */
inline std::string input_text(const uint8_t *data, size_t size) {
    return std::string(reinterpret_cast<const char *>(data), size < 65536 ? size : 65536);
}

/** The input read as numbers, front to back; zeros once it runs out (the targets whose input
 * is not text: fuzz_runtime, fuzz_entry). */
struct ByteReader {
    const uint8_t *p, *end;
    /** The next `bytes` bytes, big-endian. */
    uint64_t u(int bytes) {
        uint64_t v = 0;
        for (int i = 0; i < bytes; i++) v = v << 8 | (p < end ? *p++ : 0);
        return v;
    }
    /** A number in [0, n) from the next byte. */
    int small(int n) { return int(u(1) % n); }
};

}  // namespace tessel::fuzz
