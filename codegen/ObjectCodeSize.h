/** \file
 * Code size read from object files, not estimated: the bytes of an ELF object's executable
 * sections (SHF_EXECINSTR: .text and its per-function sections), as a linker would place them.
 */
#pragma once

#include <cstdint>
#include <filesystem>

namespace tessel {

/** Bytes of executable sections in the ELF64 object `path`; throws std::runtime_error naming the
 * file when it cannot be read or is not an ELF64 object. */
int64_t executable_bytes(const std::filesystem::path &path);

}  // namespace tessel
