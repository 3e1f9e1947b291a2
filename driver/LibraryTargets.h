/** \file
 * The CPU targets of a library `tessel lib` writes (driver/KernelLibrary.h): the target list it
 * compiles every group for, the CPU features each target's code needs (the generated tables list
 * them; the runtime's tessel_pick_target runs the first target the CPU reports them all for) and
 * whether this machine runs a target (the specializer measures on the best one it does).
 * x86 only: other architectures are refused by write_kernel_library.
 */
#pragma once

#include <Halide.h>

#include <string>
#include <vector>

namespace tessel {

/** "x86-multi" = AVX-512 (Skylake set), AVX2 + FMA, and baseline x86-64; else a comma list of
 * targets, best first. Throws std::invalid_argument for an empty list or a bad target. */
std::vector<Halide::Target> library_targets(const std::string &text);

/** What a target's code needs of the CPU. */
struct CpuRequirements {
    std::vector<std::string> features;  ///< __builtin_cpu_supports names, sorted: "avx2", "fma"...
    std::string suffix;  ///< its kernels' suffix and TESSEL_LIB_ISA's name: "avx512", "avx2", "avx", "sse41", "x86_64"
};
CpuRequirements cpu_requirements(const Halide::Target &t);

/** Whether this machine runs `t`'s code. */
bool host_runs(const Halide::Target &t);

}  // namespace tessel
