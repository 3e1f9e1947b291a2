#include "schedules/GeluSchedules.h"

namespace tessel::sched {

ScheduleTarget schedule_target(const GeluMlp &alg, const Halide::Target &target) {
    ScheduleTarget t;
    t.funcs = {{"matmul", alg.matmul}, {"y", alg.y}};
    t.inputs = {{"x", alg.x}, {"w", alg.w}, {"bias", alg.bias}};
    t.target = target;
    return t;
}

ScheduleSpec gelu_cpu_tiled(const Halide::Target &target) {
    const int lanes = std::max(4, target.natural_vector_size<float>());
    const StageRef y{"y"}, init{"matmul"}, update{"matmul", 0};
    ScheduleSpec s("cpu_tiled", Device::Cpu);
    s.description = "2 vectors x 8 rows register tile, epilogue fused per tile, parallel row tiles";
    s.split(y, "n", "no", "ni", 2 * lanes, Tail::GuardWithIf)
        .split(y, "m", "mo", "mi", 8, Tail::GuardWithIf)
        .reorder(y, {"ni", "mi", "no", "mo"})
        .split(y, "ni", "niv", "nil", lanes, Tail::GuardWithIf)
        .vectorize(y, "nil")
        .parallel(y, "mo")
        .compute_at("matmul", "y", "no")
        .split(init, "n", "nv", "nl", lanes, Tail::GuardWithIf)
        .vectorize(init, "nl")
        .split(update, "n", "nt", "nr", 2 * lanes, Tail::GuardWithIf)
        .split(update, "nr", "nv", "nl", lanes, Tail::GuardWithIf)
        .split(update, "m", "mv", "ml", 8, Tail::GuardWithIf)
        .reorder(update, {"nl", "nv", "ml", "k", "nt", "mv"})
        .vectorize(update, "nl")
        .unroll(update, "nv")
        .unroll(update, "ml");
    return s;
}

}  // namespace tessel::sched
