// KernelReuse.h: a code key per kernel (the group's structural descriptor plus what else decides
// the lowered code), and the first kernel of each key.
#include "compiler/KernelReuse.h"

#include <algorithm>
#include <unordered_map>

#include "autoscheduler/TuningKey.h"
#include "schedules/ScheduleJson.h"

namespace tessel {

std::string group_structure(const dsl::Graph &g, const dsl::FusionGroup &group, std::vector<dsl::ValueId> *interface) {
    std::vector<dsl::ValueId> order;
    return autosched::structural_descriptor(g, group, interface ? *interface : order) + "kind " +
           dsl::to_string(group.kind) + (group.prepared ? " prepared" : "") + "\n";
}

std::string kernel_code_key(const dsl::Graph &g, const CompiledKernel &k) {
    const dsl::FusionGroup &group = k.group();
    std::vector<dsl::ValueId> interface;
    std::string key = group_structure(g, group, &interface) + "mode " + dsl::to_string(g.mode) + "\ntarget " +
                      k.target().to_string() + "\narguments";
    for (const KernelArgument &a : k.arguments()) {
        const std::vector<dsl::ValueId> &among = a.is_output ? group.outputs : interface;
        const auto at = std::find(among.begin(), among.end(), a.value);
        // An argument the descriptor does not number (none today) makes the key unique to this group.
        if (at == among.end()) return key + " unnumbered " + group.name;
        key += (a.is_output ? " out" : " in") + std::to_string(at - among.begin());
    }
    // The steps and variants decide the code; the name and description (where the schedule came
    // from) do not.
    nlohmann::json steps = sched::to_json(k.schedule());
    steps.erase("name");
    steps.erase("description");
    return key + "\nschedule " + steps.dump();
}

KernelReuse find_kernel_reuse(const dsl::Graph &g, const std::vector<const CompiledKernel *> &kernels) {
    KernelReuse r;
    std::unordered_map<std::string, size_t> first;
    for (size_t i = 0; i < kernels.size(); i++) {
        const auto [it, added] = first.emplace(kernel_code_key(g, *kernels[i]), i);
        r.same_code_as.push_back(it->second);
        r.distinct += added;
    }
    return r;
}

}  // namespace tessel
