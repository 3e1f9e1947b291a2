#include "driver/GeluKernel.h"

#include "schedules/ApplySchedule.h"
#include "schedules/GeluSchedules.h"

namespace tessel {

GeluMlp scheduled_gelu_mlp(const std::vector<sched::Directive> &steps, GeluForm form, NumericMode mode,
                           const Halide::Target &target, const std::string &schedule_name) {
    GeluMlp alg = define_gelu_mlp(form, mode);
    sched::ScheduleTarget st = sched::schedule_target(alg, target);
    sched::apply_schedule(steps, st, schedule_name);
    return alg;
}

GeluKernel::GeluKernel(const sched::ScheduleSpec &schedule, GeluForm form, NumericMode mode,
                       const Halide::Target &target)
    : schedule_(schedule) {
    auto build = [&](const std::vector<sched::Directive> &steps) {
        GeluMlp alg = scheduled_gelu_mlp(steps, form, mode, target, schedule.name);
        variants_.push_back(compile_jit(alg.y, alg.arguments(), target, "gelu_mlp_" + schedule.name));
        compile_seconds_ += variants_.back().compile_seconds;
    };
    for (const auto &v : schedule.variants) build(v.steps);
    build(schedule.steps);
}

void GeluKernel::run(Halide::Runtime::Buffer<float> &x, Halide::Runtime::Buffer<float> &w,
                     Halide::Runtime::Buffer<float> &bias, Halide::Runtime::Buffer<float> &y) const {
    const std::map<std::string, long> extents{{"M", x.dim(1).extent()}, {"K", x.dim(0).extent()}, {"N", w.dim(0).extent()}};
    const int rc = variants_[schedule_.pick_variant(extents)].callable(x, w, bias, y);
    if (rc != 0) {
        throw CompileError("running schedule '" + schedule_.name + "' failed: " + last_halide_error() + " (shapes: x[" + std::to_string(x.dim(1).extent()) + "," +
                           std::to_string(x.dim(0).extent()) + "], w[" + std::to_string(w.dim(1).extent()) + "," +
                           std::to_string(w.dim(0).extent()) + "], bias[" + std::to_string(bias.dim(0).extent()) +
                           "], y[" + std::to_string(y.dim(1).extent()) + "," + std::to_string(y.dim(0).extent()) + "])");
    }
}

std::string gelu_mlp_ptx(const sched::ScheduleSpec &schedule, GeluForm form, NumericMode mode,
                         const Halide::Target &target) {
    GeluMlp alg = scheduled_gelu_mlp(schedule.steps, form, mode, target, schedule.name);
    return generate_ptx(alg.y, alg.arguments(), target, "gelu_mlp_" + schedule.name);
}

}  // namespace tessel
