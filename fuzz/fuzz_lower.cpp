// Fuzz target: parser + simplification + fusion + lowering of every group to a Halide pipeline
// with its default schedule applied (lower_group, default_group_schedule, apply_to_group). No
// JIT or compile: that is Halide's work and too slow per input. LoweringError and ScheduleError
// are Tessel's refusals with a reason; a Halide error means Tessel built an invalid pipeline.
#include "fuzz/FuzzTarget.h"

#include "dsl/Pipeline.h"
#include "dsl/ir/Parser.h"
#include "dsl/passes/Fusion.h"
#include "lowering/LowerToHalide.h"
#include "lowering/ScheduleGroup.h"

using namespace tessel;
using namespace tessel::dsl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const Halide::Target target("x86-64-linux-avx2-fma");
    try {
        Graph g = parse(fuzz::input_text(data, size), "fuzz.tsl");
        default_pipeline().run(g);
        const FusionPlan plan = plan_fusion(g, lower::fusion_options(target));
        for (const FusionGroup &grp : plan.groups) {
            lower::LoweredGroup probe = lower::lower_group(g, grp);
            const sched::ScheduleSpec s = lower::default_group_schedule(probe, target);
            lower::LoweredGroup lg = lower::lower_group(g, grp);  // schedules mutate Funcs: one lowering each
            lower::apply_to_group(s.steps, lg, target, s.name);
            for (const auto &v : s.variants) {
                lower::LoweredGroup lv = lower::lower_group(g, grp);
                lower::apply_to_group(v.steps, lv, target, s.name);
            }
        }
    } catch (const UserError &) {
    } catch (const lower::LoweringError &) {
    } catch (const sched::ScheduleError &) {}
    return 0;
}
