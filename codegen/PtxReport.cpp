#include "codegen/PtxReport.h"

#include <sstream>

namespace tessel {

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

std::string PtxScheduleReport::verdict(const PtxLimits &limits) const {
    const auto v = violations(limits);
    if (!v.empty()) return v.front();
    std::string regs;
    for (const auto &variant : variants)
        for (const auto &k : variant.ptxas.kernels) regs += (regs.empty() ? "" : "/") + std::to_string(k.registers);
    return "ok (" + regs + " registers, no spills)";
}

}  // namespace tessel
