#include "compiler/CompileBudget.h"

#include "compiler/KernelReuse.h"
#include "dsl/ir/TypeInference.h"
#include "lowering/ElementwiseProgram.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace tessel {

namespace {

/** Elements of `v` at `sizes`. */
int64_t elements(const dsl::Graph &g, dsl::ValueId v, const std::map<std::string, int64_t> &sizes) {
    int64_t n = 1;
    for (const dsl::Dim &d0 : g.node(v).type.dims) {
        const dsl::Dim d = dsl::resolve_dim(g, d0);
        const auto it = d.kind == dsl::Dim::Kind::Symbol ? sizes.find(d.symbol) : sizes.end();
        n *= d.is_static() ? d.size : it != sizes.end() ? it->second : dsl::kDefaultSymbolSize;
    }
    return n;
}

/** The code a group compiles to: its structure without constants' values, at its output shapes. */
std::string code_of(const dsl::Graph &g, const dsl::FusionGroup &group, const std::map<std::string, int64_t> &sizes) {
    std::string key = group_structure_without_constants(g, group) + "elements";
    for (dsl::ValueId v : group.nodes) key += " " + std::to_string(elements(g, v, sizes));
    return key;
}

struct Code {
    std::vector<size_t> groups;
    bool eligible = true;
    double work = 0;  ///< elements x ops per call, over its groups
};

}  // namespace

CompileBudgetPlan plan_compile_budget(const dsl::Graph &g, const dsl::FusionPlan &fusion,
                                      const std::map<std::string, int64_t> &sizes, int64_t max_compiled_kernels) {
    const size_t n = fusion.groups.size();
    CompileBudgetPlan plan;
    plan.program.assign(n, false);
    plan.reasons.assign(n, "");
    std::vector<Code> codes;
    std::unordered_map<std::string, size_t> index;
    for (size_t i = 0; i < n; i++) {
        const dsl::FusionGroup &group = fusion.groups[i];
        const size_t c = index.emplace(code_of(g, group, sizes), codes.size()).first->second;
        if (c == codes.size()) codes.emplace_back();
        Code &code = codes[c];
        code.groups.push_back(i);
        code.eligible = code.eligible && !lower::program_refusal(g, group);
        code.work += (double)elements(g, group.outputs.empty() ? group.nodes.back() : group.outputs.front(), sizes) *
                     (double)group.nodes.size();
    }
    plan.codes = plan.compiled_codes = codes.size();
    if (max_compiled_kernels < 0 || (int64_t)codes.size() <= max_compiled_kernels) return plan;

    std::vector<size_t> eligible;
    size_t must_compile = 0;
    for (size_t c = 0; c < codes.size(); c++) (codes[c].eligible ? eligible.push_back(c) : (void)must_compile++);
    std::stable_sort(eligible.begin(), eligible.end(), [&](size_t a, size_t b) { return codes[a].work > codes[b].work; });
    const size_t places = (size_t)std::max<int64_t>(0, max_compiled_kernels - (int64_t)must_compile);
    const size_t kept = std::min(places, eligible.size());
    const double least_compiled = kept ? codes[eligible[kept - 1]].work : 0;
    size_t programs = 0;
    for (size_t k = kept; k < eligible.size(); k++) {
        const Code &code = codes[eligible[k]];
        for (size_t i : code.groups) {
            plan.program[i] = true;
            plan.reasons[i] =
                "elementwise program (nothing compiled; the runtime interprets it): " + std::to_string(codes.size()) +
                " distinct kernels exceed the compile budget of " + std::to_string(max_compiled_kernels) +
                " (--max-kernels), and its code's work, " + std::to_string((long long)code.work) +
                " element-ops per call, is no more than the least compiled code's (" + std::to_string((long long)least_compiled) +
                ")";
            programs++;
        }
    }
    plan.compiled_codes = must_compile + kept;
    plan.summary = "compile budget: " + std::to_string(codes.size()) + " distinct kernels, over the budget of " +
                   std::to_string(max_compiled_kernels) + " (--max-kernels): " + std::to_string(plan.compiled_codes) +
                   " compiled (" + std::to_string(must_compile) + " that cannot be programs, then the " + std::to_string(kept) +
                   " elementwise codes with the most work), " + std::to_string(programs) + " group(s) of " +
                   std::to_string(eligible.size() - kept) + " code(s) run as elementwise programs\n";
    return plan;
}

}  // namespace tessel
