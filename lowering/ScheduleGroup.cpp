#include "lowering/ScheduleGroup.h"

#include "schedules/Library.h"
#include "schedules/MatmulCpuSchedules.h"
#include "schedules/TargetFacts.h"

namespace tessel::lower {

namespace {

/** "r$x" -> "r", "k$x.ko" -> "ko": the name ApplySchedule resolves a loop by. */
std::string loop_name(const std::string &dim_var) {
    std::string s = dim_var.substr(dim_var.rfind('.') == std::string::npos ? 0 : dim_var.rfind('.') + 1);
    if (s.size() > 2 && s.compare(s.size() - 2, 2, "$x") == 0) s.resize(s.size() - 2);
    return s;
}

}  // namespace

sched::GroupShape group_shape(const LoweredGroup &group) {
    sched::GroupShape g;
    g.kind = group.kind;
    g.ordered_reductions = !dsl::allows_split_reductions(group.mode);
    g.rhs_panel_width = group.rhs_panel_width;
    for (size_t i = 0; i < group.outputs.size(); i++) g.outputs.push_back({group.output_names[i], group.outputs[i].dimensions()});
    for (const auto &[name, f] : group.funcs) {
        if (!f.has_update_definition()) continue;
        sched::GroupReduction r;
        r.name = name;
        r.rank = f.dimensions();
        for (const auto &d : f.function().update(0).schedule().dims())
            if (d.is_rvar()) r.rvars.push_back(loop_name(d.var));
        if (auto it = group.reduction_axes.find(name); it != group.reduction_axes.end()) {
            r.along_n = it->second.along_n;
            r.n_is_data = it->second.n_is_data;
            r.row_local = it->second.row_local;
        }
        g.reductions.push_back(std::move(r));
    }
    return g;
}

sched::ScheduleSpec library_schedule_for(const std::string &name, const LoweredGroup &group, const Halide::Target &target) {
    return sched::library_schedule(name, group_shape(group), target);
}

sched::ScheduleSpec default_group_schedule(const LoweredGroup &group, const Halide::Target &target) {
    return sched::fallback_group_schedule(group_shape(group), target);
}

sched::AppliedResources apply_to_group(const std::vector<sched::Directive> &steps, LoweredGroup &group,
                                       const Halide::Target &target, const std::string &schedule_name) {
    sched::ScheduleTarget st{group.funcs, {}, target, !dsl::allows_split_reductions(group.mode)};
    for (const auto &p : group.inputs) st.inputs[p.name()] = p;
    for (const auto &[role, p] : group.input_roles) st.inputs[role] = p;  // roles win over names
    // A view Func "w" (a transposed operand) is what schedules stage, not an input of that name.
    if (group.funcs.count("w") && !group.input_roles.count("w")) st.inputs.erase("w");
    return sched::apply_schedule(steps, st, schedule_name);
}

dsl::TargetResources fusion_resources(const Halide::Target &target) {
    const sched::TargetFacts facts = sched::TargetFacts::for_target(target);
    if (facts.device == sched::Device::Cuda) {
        dsl::TargetResources r = dsl::TargetResources::cuda_sm90();
        r.name = "cuda-" + facts.cuda.ptx_arch();
        r.vector_registers = facts.cuda.max_registers_per_thread;
        r.shared_memory_bytes = facts.cuda.shared_per_block;
        r.l2_cache_bytes = facts.cuda.l2_bytes;
        return r;
    }
    // The CPU presets' nominal L2 (not this host's): the plan depends on the target alone.
    dsl::TargetResources r = facts.cpu.avx512 ? dsl::TargetResources::host_avx512() : dsl::TargetResources::host_avx2();
    r.vector_registers = facts.cpu.vector_registers;
    return r;
}

dsl::InPlaceCheck in_place_check(std::vector<sched::ScheduleSpec> specs) {
    return [specs = std::move(specs)](int group, std::string *why) {
        if (group < 0 || (size_t)group >= specs.size()) return false;
        return sched::writes_each_element_once(specs[(size_t)group], why);
    };
}

dsl::FusionOptions fusion_options(const Halide::Target &target, const std::map<std::string, int64_t> &symbols) {
    dsl::FusionOptions o;
    o.target = fusion_resources(target);
    o.symbol_sizes = symbols;
    return o;
}

dsl::LayoutOptions layout_options(const Halide::Target &target,
                                  std::vector<std::pair<std::map<std::string, int64_t>, double>> shapes,
                                  const dsl::LayoutRates &rates) {
    const sched::CpuBlocking b = sched::CpuBlocking::for_target(target);
    dsl::LayoutOptions o;
    o.model = dsl::LayoutCostModel::measured(b.nr, b.mr, b.decode_max_m, rates);
    o.shapes = std::move(shapes);
    return o;
}

}  // namespace tessel::lower
