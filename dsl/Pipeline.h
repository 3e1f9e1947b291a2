/** \file
 * The default simplification pipeline, written out in Pipeline.cpp in the order it runs, and a
 * registry of the individual passes by name (for `--passes=cse,dce`).
 */
#pragma once

#include <string>
#include <vector>

#include "dsl/PassManager.h"

namespace tessel::dsl {

/** fold-constants, then the fixed-point group "simplify" (fold-constants, simplify-algebra,
 * reassociate, cse, dce; at most kSimplifyIterations rounds), then concat-sibling-matmuls
 * (dsl/passes/SiblingMatmulConcat.h) and recompute-attention-probabilities
 * (dsl/passes/AttentionBackward.h), which must follow the last CSE. Reassociate is a no-op in strict
 * mode, so the strict pipeline preserves the interpreter's results bit for bit. */
PassManager default_pipeline();
constexpr int kSimplifyIterations = 8;

/** Every registered pass: fold-constants, simplify-algebra, reassociate, cse, dce,
 * concat-sibling-matmuls, recompute-attention-probabilities. */
const std::vector<Pass> &registered_passes();
/** A pipeline running the named passes once each, in the given order. Throws UserError naming
 * the valid passes if a name is unknown. */
PassManager pipeline_from_names(const std::vector<std::string> &names);

}  // namespace tessel::dsl
