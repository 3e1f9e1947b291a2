/** \file
 * The compile budget: how many distinct kernels a plan may compile, and which groups run as
 * elementwise programs instead (lowering/ElementwiseProgram.h). A kernel costs Halide's lowering
 * and LLVM, tens of milliseconds each; a graph of thousands of structurally distinct groups would
 * compile for minutes. Past the budget, the elementwise groups whose code would do the least work
 * per call run on the runtime's interpreter, which costs nothing to compile and computes the
 * reference interpreter's results.
 *
 * The policy: groups are counted as codes (the same structure apart from scalar constants' values,
 * at the same shape: compiler/KernelReuse.h compiles each once). When there are more codes than
 * `max_compiled_kernels`, the codes that cannot run as programs (contractions, reductions, other
 * types or layouts) are compiled first; the remaining places go to the program-eligible codes with
 * the most work (elements times ops, summed over the groups that share the code); the rest run
 * as programs. Always legal: a program computes what the group does (bit for bit the reference
 * interpreter), so only speed and compile time change.
 *
 *   CompileBudgetPlan b = plan_compile_budget(g, fusion, sizes, 256);
 *   b.program[i]  // group i runs as a program; b.reasons[i] says why
 */
#pragma once

#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tessel {

/** The default budget: a few seconds of LLVM on two cores (docs/results/compile_time_*.txt). */
constexpr int64_t kDefaultMaxCompiledKernels = 256;

struct CompileBudgetPlan {
    std::vector<bool> program;         ///< per group (fusion order): runs as an elementwise program
    std::vector<std::string> reasons;  ///< per group: why it runs as one ("" for compiled groups)
    size_t codes = 0;                  ///< distinct codes before the budget
    size_t compiled_codes = 0;         ///< distinct codes compiled after it
    /** "compile budget: 1000 distinct kernels, over the budget of 256: ..." ("" within it). */
    std::string summary;
};

/** Which groups of `fusion` run as programs so that at most `max_compiled_kernels` distinct codes
 * are compiled (a negative budget: no limit). `sizes` binds every symbol (the work estimates). */
CompileBudgetPlan plan_compile_budget(const dsl::Graph &g, const dsl::FusionPlan &fusion,
                                      const std::map<std::string, int64_t> &sizes, int64_t max_compiled_kernels);

}  // namespace tessel
