#include "compiler/Plan.h"

#include "compiler/KernelReuse.h"
#include "dsl/Simplify.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "lowering/LowerToHalide.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/ScheduleJson.h"

#include <cctype>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace tessel {

std::set<std::string> graph_symbols(const dsl::Graph &g) {
    std::set<std::string> out;
    for (dsl::ValueId v : g.order())
        for (const dsl::Dim &d : g.node(v).type.dims)
            if (d.kind == dsl::Dim::Kind::Symbol) out.insert(d.symbol);
    return out;
}

void check_symbols(const dsl::Graph &g, const std::map<std::string, int64_t> &sizes) {
    const std::set<std::string> symbols = graph_symbols(g);
    for (const auto &[name, size] : sizes) {
        if (symbols.count(name)) continue;
        std::string list;
        for (const auto &s : symbols) list += (list.empty() ? "" : ", ") + s;
        throw std::invalid_argument(
            "--dim " + name + "=" + std::to_string(size) + ": graph '" + g.name + "' has no symbol '" + name + "' (" +
            (symbols.empty() ? std::string("it has no symbols: every extent is static") : "its symbols: " + list) + ")");
    }
}

namespace {

/** What a group is, for the selection cache: its kind, the nodes it holds and what it
 * materializes (value names included, since schedules address stages by them). */
std::string group_signature(const dsl::Graph &g, const dsl::FusionGroup &group) {
    std::string s = std::string(dsl::to_string(group.kind)) + (group.prepared ? " prepared" : "");
    for (dsl::ValueId v : group.nodes) s += "\n" + dsl::print_node(g, v);
    for (dsl::ValueId v : group.outputs) s += "\n-> " + g.display_name(v);
    return s;
}

/** Schedule choices for groups, memoized by signature: rematerialization asks for the groups of
 * every candidate graph it weighs, and most of them are the groups of the graph as it is. */
class CachedSelection {
public:
    CachedSelection(const ScheduleSelection &selection, const std::map<std::string, int64_t> &symbols)
        : selection_(selection), symbols_(symbols) {}

    const ScheduleChoice &choose(const dsl::Graph &g, const dsl::FusionGroup &group) {
        const std::string key = group_signature(g, group);
        auto it = cache_.find(key);
        if (it != cache_.end()) return it->second;
        // A repeated layer: the same structure at the same sizes gets the same choice, when the
        // choice names none of the group's values (schedules address stages by value names).
        const std::string shape = structure_at_sizes(g, group, group_structure(g, group));
        if (auto s = by_structure_.find(shape); s != by_structure_.end()) return cache_.emplace(key, s->second).first->second;
        // The same but for the values of scalar constants (a generated graph's offsets): the same
        // code (compiler/KernelReuse.h), so the same choice, unless the database holds a record
        // of this very group.
        const std::string lifted = structure_at_sizes(g, group, group_structure_without_constants(g, group));
        if (auto s = by_lifted_.find(lifted);
            s != by_lifted_.end() && !(s->second.workload && selection_.has_database_record(g, group, *s->second.workload))) {
            ScheduleChoice c = s->second.choice;
            c.reason += " (as for " + s->second.first + ", which differs only in the values of scalar constants)";
            return cache_.emplace(key, std::move(c)).first->second;
        }
        const lower::LoweredGroup probe = lower::lower_group(g, group);
        it = cache_.emplace(key, selection_.choose(g, group, symbols_, probe)).first;
        nlohmann::json steps = sched::to_json(it->second.spec);
        steps.erase("name");  // prose, not stage names
        steps.erase("description");
        if (!names_a_value(g, group, steps.dump())) {
            by_structure_.emplace(shape, it->second);
            by_lifted_.emplace(lifted, Shared{it->second, group_workload(g, group, symbols_, &probe), group.name});
        }
        return it->second;
    }

private:
    const ScheduleSelection &selection_;
    const std::map<std::string, int64_t> &symbols_;
    std::unordered_map<std::string, ScheduleChoice> cache_;
    std::unordered_map<std::string, ScheduleChoice> by_structure_;
    /** A choice shared with groups that differ only in constants: the workload its database key
     * was looked up at, and the group it was made for. */
    struct Shared {
        ScheduleChoice choice;
        std::optional<autosched::Workload> workload;
        std::string first;
    };
    std::unordered_map<std::string, Shared> by_lifted_;

    /** `structure` and the size of every dim of the group's members, in order. */
    std::string structure_at_sizes(const dsl::Graph &g, const dsl::FusionGroup &group, std::string structure) const {
        std::string s = std::move(structure) + "sizes";
        for (dsl::ValueId v : group.nodes)
            for (const dsl::Dim &d0 : g.node(v).type.dims) {
                const dsl::Dim d = dsl::resolve_dim(g, d0);
                const auto it = d.kind == dsl::Dim::Kind::Symbol ? symbols_.find(d.symbol) : symbols_.end();
                s += " " + (d.is_static() ? std::to_string(d.size) : it != symbols_.end() ? std::to_string(it->second) : "?");
            }
        return s;
    }

    /** Whether `text` names a stage of a member or an input of the group: a word starting with
     * the value's lowered name (lower::halide_name; the lowering derives its Funcs' names from
     * it). Conservative: a false hit only keeps a choice from being shared. */
    static bool names_a_value(const dsl::Graph &g, const dsl::FusionGroup &group, const std::string &text) {
        auto named = [&](dsl::ValueId v) {
            const std::string n = lower::halide_name(g, v);
            for (size_t at = text.find(n); at != std::string::npos; at = text.find(n, at + 1))
                if (at == 0 || !(std::isalnum((unsigned char)text[at - 1]) || text[at - 1] == '_')) return true;
            return false;
        };
        const std::set<dsl::ValueId> members(group.nodes.begin(), group.nodes.end());
        for (dsl::ValueId v : group.nodes) {
            if (named(v)) return true;
            for (dsl::ValueId in : g.node(v).inputs)
                if (!members.count(in) && named(in)) return true;
        }
        return false;
    }
};

/** Every group's choice: a program where the budget says so, else the selection's. */
std::vector<ScheduleChoice> choose_all(CachedSelection &selection, const dsl::Graph &g, const dsl::FusionPlan &fusion,
                                       const CompileBudgetPlan &budget) {
    std::vector<ScheduleChoice> out;
    for (size_t i = 0; i < fusion.groups.size(); i++) {
        if (i < budget.program.size() && budget.program[i]) {
            ScheduleChoice c;
            c.spec = sched::elementwise_program_schedule();
            c.provenance = ScheduleProvenance::CompileBudget;
            c.reason = budget.reasons[i];
            out.push_back(std::move(c));
            continue;
        }
        out.push_back(selection.choose(g, fusion.groups[i]));
    }
    return out;
}

std::vector<sched::ScheduleSpec> specs_of(const std::vector<ScheduleChoice> &choices) {
    std::vector<sched::ScheduleSpec> specs;
    for (const auto &c : choices) specs.push_back(c.spec);
    return specs;
}

/** The final memory plan's options: the JIT runner keeps prepared values between calls. */
dsl::BufferAssignmentOptions final_buffer_options() {
    dsl::BufferAssignmentOptions o;
    o.prepared_kept = true;
    return o;
}

}  // namespace

PlannedProgram plan(const dsl::Graph &graph, const Halide::Target &target, const PlanOptions &options) {
    check_symbols(graph, options.symbols);
    PhaseTimes times;
    PlannedProgram p{times.time("simplify", [&] { return options.simplify ? dsl::simplify_graph(graph).graph : graph; }),
                     {},
                     target,
                     options.symbols,
                     {},
                     {},
                     {},
                     {},
                     {},
                     {},
                     {}};
    p.times = std::move(times);
    p.sizes = options.symbols;
    for (const std::string &s : graph_symbols(p.graph)) p.sizes.emplace(s, dsl::kDefaultSymbolSize);

    const ScheduleSelection selection(target, options.schedules);
    CachedSelection cached(selection, options.symbols);
    dsl::FusionOptions fusion = lower::fusion_options(target, options.symbols);
    fusion.policy = options.fusion_policy;
    if (options.remat || options.memory_budget || !options.recompute.empty()) {
        dsl::RematOptions ro;
        ro.fusion = fusion;
        ro.symbols = p.sizes;
        ro.memory_budget = options.memory_budget;
        ro.force = options.recompute;
        ro.buffers = final_buffer_options();
        ro.in_place_check = [&cached](const dsl::Graph &g, const dsl::FusionPlan &fp) -> dsl::InPlaceCheck {
            // Lazily: only the groups the packer asks about (in-place candidates) are selected.
            return [&cached, &g, &fp](int group, std::string *why) {
                return sched::writes_each_element_once(cached.choose(g, fp.groups.at((size_t)group)).spec, why);
            };
        };
        p.remat = p.times.time("rematerialization", [&] { return dsl::rematerialize(p.graph, ro); });
    }
    p.fusion = p.times.time("fusion", [&] { return dsl::plan_fusion(p.graph, fusion); });
    // Layouts last, for the groups as planned; the conversions they insert are groups of their own.
    if (options.layouts && !target.has_gpu_feature()) {
        dsl::LayoutOptions lo = lower::layout_options(target, options.layout_shapes,
                                                      options.layout_rates ? *options.layout_rates : selection.layout_rates());
        lo.conversions = options.conversions;
        p.layouts = p.times.time("layouts", [&] { return dsl::assign_layouts(p.graph, p.fusion, lo); });
        if (p.layouts.conversions > 0) p.fusion = p.times.time("fusion", [&] { return dsl::plan_fusion(p.graph, fusion); });
    }
    p.budget = p.times.time("compile budget",
                            [&] { return plan_compile_budget(p.graph, p.fusion, p.sizes, options.max_compiled_kernels); });
    p.schedules = p.times.time("schedule selection", [&] { return choose_all(cached, p.graph, p.fusion, p.budget); });
    dsl::BufferAssignmentOptions bo = final_buffer_options();
    bo.schedule_reads_before_writes = lower::in_place_check(specs_of(p.schedules));
    if (p.fusion.outside_kernels.empty())
        p.memory = p.times.time("memory plan", [&] { return dsl::assign_buffers(p.graph, p.fusion, p.sizes, bo); });
    return p;
}

PlannedProgram plan_file(const std::string &path, const Halide::Target &target, const PlanOptions &options) {
    PhaseTimes parse;
    const dsl::Graph g = parse.time("parse", [&] { return dsl::parse_file(path); });
    PlannedProgram p = plan(g, target, options);
    parse.append(p.times);
    p.times = std::move(parse);
    return p;
}

std::vector<ScheduleChoice> select_schedules(const PlannedProgram &program, const Halide::Target &target,
                                             const ScheduleSelectionOptions &options) {
    const ScheduleSelection selection(target, options);
    CachedSelection cached(selection, program.symbols);
    return choose_all(cached, program.graph, program.fusion, program.budget);
}

ScheduleChooser PlannedProgram::chooser() const {
    std::map<std::string, sched::ScheduleSpec> by_group;
    for (size_t i = 0; i < fusion.groups.size(); i++) by_group.emplace(fusion.groups[i].name, schedules[i].spec);
    return [by_group = std::move(by_group)](const dsl::FusionGroup &fg,
                                            const lower::LoweredGroup &) -> std::optional<sched::ScheduleSpec> {
        auto it = by_group.find(fg.name);
        if (it == by_group.end()) return std::nullopt;
        return it->second;
    };
}

const ScheduleChoice &PlannedProgram::schedule_of(const dsl::FusionGroup &group) const {
    for (size_t i = 0; i < fusion.groups.size(); i++)
        if (fusion.groups[i].name == group.name) return schedules[i];
    throw std::logic_error("group " + group.name + " is not in the plan of " + graph.name);
}

std::string PlannedProgram::to_string() const {
    std::ostringstream os;
    os << fusion.to_string(graph) << "\n";
    if (remat && (remat->changed || remat->budget || !remat->skipped.empty())) os << remat->to_string();
    if (!layouts.regions.empty()) os << layouts.to_string(graph) << "\n";
    os << budget.summary;
    for (size_t i = 0; i < fusion.groups.size(); i++) {
        os << "schedule for " << fusion.groups[i].name << ": " << schedules[i].label() << ": " << schedules[i].reason << "\n";
        if (!schedules[i].refused.empty()) os << "  refused: " << schedules[i].refused << "\n";
    }
    return os.str();
}

}  // namespace tessel
