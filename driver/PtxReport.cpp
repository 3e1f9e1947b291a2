#include "driver/PtxReport.h"

#include "codegen/Compile.h"
#include "schedules/ApplySchedule.h"
#include "schedules/GeluSchedules.h"
#include "schedules/Library.h"

#include <sstream>

namespace tessel {

namespace {

std::string guards_text(const std::vector<sched::Guard> &guards) {
    std::string s;
    for (const auto &g : guards) s += (s.empty() ? "" : " && ") + g.to_string();
    return s;
}

PtxVariantReport report_variant(const std::vector<sched::Directive> &steps, const std::string &label,
                                const std::string &schedule_name, const std::string &arch, GeluForm form,
                                NumericMode mode, const Halide::Target &target) {
    PtxVariantReport r;
    r.label = label;
    GeluMlp alg = define_gelu_mlp(form, mode);
    sched::ScheduleTarget st = sched::schedule_target(alg, target);
    const sched::AppliedResources res = sched::apply_schedule(steps, st, schedule_name);
    r.threads_per_block = res.max_threads_per_block;
    r.dynamic_shared_bytes = res.shared_bytes;
    r.shared_complete = res.shared_complete;
    const std::string ptx = generate_ptx(alg.y, alg.arguments(), target, "gelu_mlp_" + schedule_name);
    r.ptxas = assemble_ptx(ptx, arch);
    return r;
}

}  // namespace

std::vector<std::string> PtxScheduleReport::violations(const PtxLimits &limits) const {
    std::vector<std::string> out;
    for (const auto &v : variants) {
        const std::string where = schedule + " " + v.label + ": ";
        if (!v.ptxas.ok) out.push_back(where + "ptxas failed for " + arch);
        if (v.ptxas.kernels.empty()) out.push_back(where + "no kernel in the PTX");
        if (v.threads_per_block > limits.max_threads_per_block)
            out.push_back(where + std::to_string(v.threads_per_block) + " threads per block, over " +
                          std::to_string(limits.max_threads_per_block));
        for (const auto &k : v.ptxas.kernels) {
            if (k.spill_store_bytes || k.spill_load_bytes)
                out.push_back(where + k.kernel + " spills (" + std::to_string(k.spill_store_bytes) + "B stored, " +
                              std::to_string(k.spill_load_bytes) + "B loaded)");
            if (k.registers > limits.max_registers)
                out.push_back(where + k.kernel + " uses " + std::to_string(k.registers) + " registers, over " +
                              std::to_string(limits.max_registers));
            const long shared = k.shared_bytes + v.dynamic_shared_bytes;
            if (shared > limits.max_shared_bytes)
                out.push_back(where + k.kernel + " uses " + std::to_string(shared) + " bytes of shared memory, over " +
                              std::to_string(limits.max_shared_bytes));
        }
    }
    return out;
}

bool PtxScheduleReport::within_limits(const PtxLimits &limits) const { return violations(limits).empty(); }

std::string PtxScheduleReport::to_string() const {
    std::ostringstream os;
    os << "ptx-report " << schedule << " (" << arch << ")\n";
    for (const auto &v : variants) {
        os << "  " << v.label << ": " << (v.ptxas.ok ? "assembled" : "FAILED") << ", " << v.threads_per_block
           << " threads/block, " << v.dynamic_shared_bytes << " B dynamic shared"
           << (v.shared_complete ? "" : " (not all shared tiles bounded: at least)") << "\n";
        for (const auto &k : v.ptxas.kernels) {
            os << "    " << k.kernel << ": " << k.registers << " regs/thread, " << k.shared_bytes << " B static shared, "
               << k.stack_bytes << " B stack, spills " << k.spill_store_bytes << "/" << k.spill_load_bytes << " B\n";
        }
        if (!v.ptxas.ok) os << v.ptxas.log;
    }
    return os.str();
}

PtxScheduleReport ptx_report(const sched::ScheduleSpec &schedule, const std::string &arch, GeluForm form,
                             NumericMode mode) {
    if (schedule.device != sched::Device::Cuda)
        throw std::invalid_argument("ptx-report needs a CUDA schedule; '" + schedule.name + "' is for " +
                                    sched::to_string(schedule.device));
    const Halide::Target target = parse_target("host-cuda");
    PtxScheduleReport r;
    r.schedule = schedule.name;
    r.arch = arch;
    for (size_t i = 0; i < schedule.variants.size(); i++) {
        const auto &v = schedule.variants[i];
        r.variants.push_back(report_variant(v.steps, "variant " + std::to_string(i + 1) + " (" + guards_text(v.guards) + ")",
                                            schedule.name, arch, form, mode, target));
    }
    r.variants.push_back(report_variant(schedule.steps, "fallback", schedule.name, arch, form, mode, target));
    return r;
}

PtxScheduleReport ptx_report(const std::string &name, const std::string &arch, GeluForm form, NumericMode mode) {
    return ptx_report(sched::library_schedule(name, parse_target("host-cuda")), arch, form, mode);
}

}  // namespace tessel
