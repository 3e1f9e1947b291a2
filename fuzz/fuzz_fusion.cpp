// Fuzz target: parser + simplification + fusion planning (with the plan printed, as
// `tessel compile` does). Every planned node must be in exactly one group.
#include "fuzz/FuzzTarget.h"

#include "dsl/Pipeline.h"
#include "dsl/ir/Parser.h"
#include "dsl/passes/Fusion.h"

#include <cstdlib>
#include <set>

using namespace tessel::dsl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    try {
        Graph g = parse(tessel::fuzz::input_text(data, size), "fuzz.tsl");
        default_pipeline().run(g);
        const FusionPlan plan = plan_fusion(g);
        std::set<ValueId> seen;
        for (const FusionGroup &grp : plan.groups)
            for (ValueId v : grp.nodes)
                if (g.node(v).op != Op::Constant && !seen.insert(v).second) std::abort();  // in two groups
        (void)plan.to_string(g);
    } catch (const UserError &) {}
    return 0;
}
