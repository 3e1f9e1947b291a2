/** \file
 * Assembles PTX with the CUDA toolkit's `ptxas -v` and reads its resource report
 * (registers per thread, shared memory, spills) per kernel. Works without a GPU.
 */
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tessel {

struct KernelResources {
    std::string kernel;
    int registers = 0;
    long shared_bytes = 0;
    long spill_store_bytes = 0, spill_load_bytes = 0;
    long stack_bytes = 0;
};

struct PtxasReport {
    bool ok = false;   ///< ptxas exited 0
    std::string arch;  ///< e.g. "sm_90"
    std::string log;   ///< ptxas's full output
    std::vector<KernelResources> kernels;
    bool has_spills() const;
    std::string to_string() const;
};

/** The ptxas found at configure time or on PATH; empty when the CUDA toolkit is missing. */
std::string find_ptxas();

/** Runs `ptxas -v -arch=<arch>` on `ptx`. Throws std::runtime_error when ptxas is missing. */
PtxasReport assemble_ptx(const std::string &ptx, const std::string &arch = "sm_90");

/** Parses ptxas -v output (exposed for tests). */
std::vector<KernelResources> parse_ptxas_log(const std::string &log);

}  // namespace tessel
