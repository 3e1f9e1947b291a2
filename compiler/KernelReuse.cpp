// KernelReuse.h: a code key per kernel (the group's structural descriptor plus what else decides
// the lowered code), and the first kernel of each key.
#include "compiler/KernelReuse.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <unordered_map>

#include "autoscheduler/TuningKey.h"
#include "codegen/KernelAliases.h"
#include "schedules/ScheduleJson.h"

namespace tessel {

namespace {

std::string kind_line(const dsl::FusionGroup &group) {
    return "kind " + std::string(dsl::to_string(group.kind)) + (group.prepared ? " prepared" : "") + "\n";
}

}  // namespace

std::string group_structure(const dsl::Graph &g, const dsl::FusionGroup &group, std::vector<dsl::ValueId> *interface) {
    std::vector<dsl::ValueId> order;
    return autosched::structural_descriptor(g, group, interface ? *interface : order) + kind_line(group);
}

namespace {

using Lifted = std::function<bool(dsl::ValueId)>;

/** The code key, with the constants `lifted` holds for left out (listed in `order`). */
std::string code_key(const dsl::Graph &g, const CompiledKernel &k, const Lifted &lifted, std::vector<dsl::ValueId> &order) {
    const dsl::FusionGroup &group = k.group();
    std::vector<dsl::ValueId> interface;
    std::string key = autosched::structural_descriptor(g, group, interface, lifted, order) + kind_line(group) + "mode " +
                      dsl::to_string(g.mode) + "\ntarget " + k.target().to_string() + "\narguments";
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

bool reads_operand_as_any_value(dsl::Op op) {
    switch (op) {
    case dsl::Op::Add:
    case dsl::Op::Sub:
    case dsl::Op::Mul:
    case dsl::Op::Div:
    case dsl::Op::Max:
    case dsl::Op::Min:
    case dsl::Op::Less:
    case dsl::Op::LessEqual:
    case dsl::Op::Greater:
    case dsl::Op::GreaterEqual:
    case dsl::Op::Equal:
    case dsl::Op::NotEqual:
    case dsl::Op::Where: return true;
    default: return false;
    }
}

/** "kernel reuse: 9 of 10 groups run an earlier group's code (...), compiled once: 1 distinct
 * kernel" and up to 10 of the `reused` lines; nothing when no group runs other code. */
void print_kernel_reuse(std::ostream &out, size_t groups, const std::vector<std::string> &reused, size_t with_constants,
                        size_t distinct) {
    if (reused.empty() && !with_constants) return;
    out << "kernel reuse: " << reused.size() << " of " << groups
        << " groups run an earlier group's code (same structure, schedule and target";
    if (with_constants) out << "; " << with_constants << " pass their constants to code that reads them from an argument";
    out << "), compiled once: " << distinct << (distinct == 1 ? " distinct kernel\n" : " distinct kernels\n");
    for (size_t i = 0; i < reused.size() && i < 10; i++) out << "  " << reused[i] << "\n";
    if (reused.size() > 10) out << "  ... and " << reused.size() - 10 << " more\n";
}

}  // namespace

std::string group_structure_without_constants(const dsl::Graph &g, const dsl::FusionGroup &group) {
    std::vector<dsl::ValueId> interface, order;
    return autosched::structural_descriptor(
               g, group, interface, [&](dsl::ValueId c) { return liftable_constant(g, group, c); }, order) +
           kind_line(group);
}

std::string kernel_code_key(const dsl::Graph &g, const CompiledKernel &k) {
    std::vector<dsl::ValueId> none;
    return code_key(g, k, [](dsl::ValueId) { return false; }, none);
}

bool liftable_constant(const dsl::Graph &g, const dsl::FusionGroup &group, dsl::ValueId c) {
    const dsl::Node &n = g.node(c);
    if (n.op != dsl::Op::Constant || n.attrs.value.size() != 1 || n.type.dtype != dsl::DType::F32) return false;
    if (group.kind != dsl::GroupKind::Elementwise && group.kind != dsl::GroupKind::Reduction) return false;
    if (std::find(group.outputs.begin(), group.outputs.end(), c) != group.outputs.end()) return false;
    for (dsl::ValueId v : group.nodes) {
        const dsl::Node &reader = g.node(v);
        if (std::find(reader.inputs.begin(), reader.inputs.end(), c) != reader.inputs.end() &&
            !reads_operand_as_any_value(reader.op))
            return false;
    }
    return true;
}

KernelReuse find_kernel_reuse(const dsl::Graph &g, const std::vector<const CompiledKernel *> &kernels,
                              size_t max_arguments_with_constants) {
    const size_t n = kernels.size();
    KernelReuse r;
    r.lifted.resize(n);
    // Same code with constants compiled in.
    std::vector<size_t> exact(n);
    std::unordered_map<std::string, size_t> first;
    // An elementwise program is no code: nothing to share, and it reads no constants argument.
    auto is_program = [&](size_t i) { return kernels[i]->program() != nullptr; };
    for (size_t i = 0; i < n; i++) exact[i] = is_program(i) ? i : first.emplace(kernel_code_key(g, *kernels[i]), i).first->second;
    r.same_code_as = exact;

    // Same code with liftable constants as an argument, among the kernels that are their own code.
    auto lifted_key = [&](size_t i, std::vector<dsl::ValueId> &order) {
        const CompiledKernel &k = *kernels[i];
        if (is_program(i) || k.arguments().size() + 1 > max_arguments_with_constants) return std::string();
        const std::string key = code_key(g, k, [&](dsl::ValueId c) { return liftable_constant(g, k.group(), c); }, order);
        return order.empty() ? std::string() : key;
    };
    std::unordered_map<std::string, std::vector<size_t>> codes;  // lifted key -> kernels that are their own code
    std::vector<std::string> keys(n);
    for (size_t i = 0; i < n; i++) {
        if (exact[i] != i) continue;
        keys[i] = lifted_key(i, r.lifted[i]);
        if (!keys[i].empty()) codes[keys[i]].push_back(i);
    }
    std::vector<size_t> code_of(n, n);  // a kernel that is its own code -> the first of its lifted code
    for (size_t i = 0; i < n; i++) {
        if (exact[i] != i || keys[i].empty()) continue;
        const std::vector<size_t> &members = codes.at(keys[i]);
        if (members.size() > 1) code_of[i] = members.front();
    }
    for (size_t i = 0; i < n; i++) {
        const size_t e = exact[i];
        if (code_of[e] == n) {  // compiled in
            r.lifted[i].clear();
            r.distinct += e == i && !is_program(i);
            continue;
        }
        r.same_code_as[i] = code_of[e];
        if (e != i) lifted_key(i, r.lifted[i]);  // an exact alias passes the same values, from its own constants
        r.distinct += code_of[e] == i;
    }
    return r;
}

std::vector<AotFunction> library_functions(const dsl::Graph &g, const std::vector<const CompiledKernel *> &kernels,
                                           const Halide::Target &target, const std::string &suffix, std::ostream &out) {
    const KernelReuse reuse = aliases_supported(target) ? find_kernel_reuse(g, kernels, kAliasRegisterArguments) : KernelReuse{};
    auto lifted = [&](size_t i) { return !reuse.lifted.empty() && !reuse.lifted[i].empty(); };
    auto base = [&](size_t i) { return kernels[i]->group().name + suffix; };
    auto code_name = [&](size_t i) { return base(i) + (lifted(i) ? "_code" : ""); };
    std::vector<AotFunction> functions;
    std::vector<std::string> reused;
    size_t with_constants = 0;
    for (size_t i = 0; i < kernels.size(); i++) {
        const CompiledKernel &k = *kernels[i];
        const size_t code = reuse.same_code_as.empty() ? i : reuse.same_code_as[i];
        if (code == i && !lifted(i)) {
            for (AotFunction &f : k.aot_functions(base(i))) functions.push_back(std::move(f));
            continue;
        }
        if (code == i)
            for (AotFunction &f : k.aot_functions(code_name(i), reuse.lifted[i])) functions.push_back(std::move(f));
        std::vector<float> constants;
        if (lifted(i))
            for (dsl::ValueId c : reuse.lifted[i]) constants.push_back(lower::scalar_constant_value(g.node(c)));
        const CompiledKernel &same = *kernels[code];
        for (size_t v = 0; v < k.variants().size(); v++) {
            AotFunction alias{{}, {}, k.variant_function(v, base(i)), same.variant_function(v, code_name(code))};
            alias.constants = constants;
            functions.push_back(std::move(alias));
        }
        with_constants += !constants.empty();
        if (code != i)
            reused.push_back(base(i) + " runs " + code_name(code) + (constants.empty() ? "'s code" : " with its constants"));
    }
    print_kernel_reuse(out, kernels.size(), reused, with_constants, reuse.distinct);
    return functions;
}

KernelReuse share_kernels(const dsl::Graph &g, CompiledGraph &program, std::ostream &out) {
    const std::vector<const CompiledKernel *> kernels = program.kernels();
    // A JIT call passes any number of arguments; lifted code is kept to CPU targets, where it is tested.
    const bool cpu = !kernels.empty() && !kernels.front()->target().has_gpu_feature();
    const KernelReuse reuse = find_kernel_reuse(g, kernels, cpu ? SIZE_MAX : 0);
    program.share_kernels(reuse.same_code_as, reuse.lifted);
    std::vector<std::string> reused;
    size_t with_constants = 0;
    for (size_t i = 0; i < kernels.size(); i++) {
        const bool lifted = !reuse.lifted[i].empty();
        with_constants += lifted;
        if (const size_t c = reuse.same_code_as[i]; c != i)
            reused.push_back(kernels[i]->group().name + " runs " + kernels[c]->group().name +
                             (lifted ? "'s code with its constants" : "'s kernel"));
    }
    print_kernel_reuse(out, kernels.size(), reused, with_constants, reuse.distinct);
    return reuse;
}

}  // namespace tessel
