#include "dsl/Pipeline.h"

#include "dsl/passes/AlgebraicSimplify.h"
#include "dsl/passes/AttentionBackward.h"
#include "dsl/passes/CSE.h"
#include "dsl/passes/ConstantFolding.h"
#include "dsl/passes/DCE.h"
#include "dsl/passes/Reassociate.h"
#include "dsl/passes/SiblingMatmulConcat.h"

namespace tessel::dsl {

const std::vector<Pass> &registered_passes() {
    static const std::vector<Pass> passes = {
        {"fold-constants", [](Graph &g, RewriteLog *l) { return fold_constants(g, l); }},
        {"simplify-algebra", [](Graph &g, RewriteLog *l) { return simplify_algebra(g, l); }},
        {"reassociate", [](Graph &g, RewriteLog *l) { return reassociate(g, l); }},
        {"cse", [](Graph &g, RewriteLog *l) { return eliminate_common_subexpressions(g, l); }},
        {"dce", [](Graph &g, RewriteLog *l) { return eliminate_dead_code(g, l); }},
        {"concat-sibling-matmuls", [](Graph &g, RewriteLog *l) { return concat_sibling_matmuls(g, l); }},
        {"recompute-attention-probabilities", [](Graph &g, RewriteLog *l) { return recompute_attention_probabilities(g, l); }},
    };
    return passes;
}

namespace {
const Pass &find_pass(const std::string &name) {
    std::string valid;
    for (const Pass &p : registered_passes()) {
        if (p.name == name) return p;
        valid += (valid.empty() ? "" : ", ") + p.name;
    }
    throw UserError("unknown pass '" + name + "' (passes: " + valid + ")");
}
}  // namespace

PassManager default_pipeline() {
    PassManager pm("default");
    pm.add("fold-constants", find_pass("fold-constants").run);
    pm.add_fixed_point("simplify",
                       {find_pass("fold-constants"), find_pass("simplify-algebra"), find_pass("reassociate"), find_pass("cse"),
                        find_pass("dce")},
                       kSimplifyIterations);
    pm.add("concat-sibling-matmuls", find_pass("concat-sibling-matmuls").run);
    // After the last CSE, which would merge the recomputed chain back into the forward's.
    pm.add("recompute-attention-probabilities", find_pass("recompute-attention-probabilities").run);
    return pm;
}

PassManager pipeline_from_names(const std::vector<std::string> &names) {
    PassManager pm("custom");
    for (const std::string &n : names) pm.add(n, find_pass(n).run);
    return pm;
}

}  // namespace tessel::dsl
