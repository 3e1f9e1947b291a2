#include "schedules/Schedule.h"

#include "tessel_runtime.h"

#include <sstream>
#include <stdexcept>

namespace tessel::sched {

namespace {

std::string join(const std::vector<std::string> &v) {
    std::string out;
    for (size_t i = 0; i < v.size(); i++) out += (i ? ", " : "") + v[i];
    return out;
}

template <typename Enum, size_t N>
Enum parse_enum(const std::string &s, const std::pair<Enum, const char *> (&table)[N], const char *what) {
    std::string expected;
    for (const auto &[e, name] : table) {
        if (s == name) return e;
        expected += (expected.empty() ? "" : ", ") + std::string(name);
    }
    throw std::invalid_argument("unknown " + std::string(what) + " '" + s + "' (expected one of: " + expected + ")");
}

template <typename Enum, size_t N>
std::string enum_name(Enum e, const std::pair<Enum, const char *> (&table)[N]) {
    for (const auto &[v, name] : table)
        if (v == e) return name;
    return "?";
}

const std::pair<Tail, const char *> kTails[] = {{Tail::Auto, "auto"},
                                                {Tail::GuardWithIf, "guard_with_if"},
                                                {Tail::ShiftInwards, "shift_inwards"},
                                                {Tail::RoundUp, "round_up"},
                                                {Tail::Predicate, "predicate"}};
const std::pair<MemoryLevel, const char *> kLevels[] = {
    {MemoryLevel::Auto, "auto"}, {MemoryLevel::Register, "register"},    {MemoryLevel::Stack, "stack"},
    {MemoryLevel::Heap, "heap"}, {MemoryLevel::GpuShared, "gpu_shared"}, {MemoryLevel::GpuGlobal, "gpu_global"}};
const std::pair<Device, const char *> kDevices[] = {{Device::Cpu, "cpu"}, {Device::Cuda, "cuda"}};

/** Prints each directive as the Halide call it becomes. */
struct DirectivePrinter {
    std::string operator()(const Split &d) const {
        std::string tail = d.tail == Tail::Auto ? "" : ", " + to_string(d.tail);
        return to_string(d.stage) + ".split(" + d.var + ", " + d.outer + ", " + d.inner + ", " + std::to_string(d.factor) + tail +
               ")";
    }
    std::string operator()(const Fuse &d) const {
        return to_string(d.stage) + ".fuse(" + d.inner + ", " + d.outer + ", " + d.fused + ")";
    }
    std::string operator()(const Reorder &d) const { return to_string(d.stage) + ".reorder(" + join(d.vars) + ")"; }
    std::string operator()(const Vectorize &d) const { return to_string(d.stage) + ".vectorize(" + d.var + ")"; }
    std::string operator()(const Unroll &d) const { return to_string(d.stage) + ".unroll(" + d.var + ")"; }
    std::string operator()(const Parallel &d) const { return to_string(d.stage) + ".parallel(" + d.var + ")"; }
    std::string operator()(const GpuBlocks &d) const { return to_string(d.stage) + ".gpu_blocks(" + join(d.vars) + ")"; }
    std::string operator()(const GpuThreads &d) const { return to_string(d.stage) + ".gpu_threads(" + join(d.vars) + ")"; }
    std::string operator()(const ComputeAt &d) const { return d.func + ".compute_at(" + d.at + ", " + d.var + ")"; }
    std::string operator()(const ComputeRoot &d) const { return d.func + ".compute_root()"; }
    std::string operator()(const ComputeInline &d) const { return d.func + ".compute_inline()"; }
    std::string operator()(const StoreAt &d) const { return d.func + ".store_at(" + d.at + ", " + d.var + ")"; }
    std::string operator()(const StoreIn &d) const { return d.func + ".store_in(" + to_string(d.level) + ")"; }
    std::string operator()(const StageInput &d) const { return d.wrapper + " = " + d.input + ".in(" + d.consumer + ")"; }
    std::string operator()(const RFactor &d) const {
        return d.intermediate + " = " + to_string(d.stage) + ".rfactor(" + d.rvar + ", " + d.new_var + ")";
    }
    std::string operator()(const Bound &d) const {
        return d.func + ".bound(" + d.var + ", " + std::to_string(d.min) + ", " + std::to_string(d.extent) + ")";
    }
    std::string operator()(const BoundExtent &d) const {
        return d.func + ".bound_extent(" + d.var + ", " + std::to_string(d.extent) + ")";
    }
    std::string operator()(const AssumeAligned &d) const { return d.buffer + ".assume_aligned(" + std::to_string(d.lanes) + ")"; }
    std::string operator()(const ReorderStorage &d) const { return d.func + ".reorder_storage(" + join(d.vars) + ")"; }
    std::string operator()(const ComputeWith &d) const {
        return to_string(d.stage) + ".compute_with(" + to_string(d.with) + ", " + d.var + ")";
    }
    std::string operator()(const Prefetch &d) const {
        return to_string(d.stage) + ".prefetch(" + d.input + ", " + d.var + ", " + std::to_string(d.distance) + ")";
    }
};

}  // namespace

std::string to_string(Tail t) { return enum_name(t, kTails); }
std::string to_string(MemoryLevel m) { return enum_name(m, kLevels); }
std::string to_string(Device d) { return enum_name(d, kDevices); }
Tail parse_tail(const std::string &s) { return parse_enum(s, kTails, "tail strategy"); }
MemoryLevel parse_memory_level(const std::string &s) { return parse_enum(s, kLevels, "memory level"); }
Device parse_device(const std::string &s) { return parse_enum(s, kDevices, "device"); }

std::string to_string(const StageRef &s) { return s.update < 0 ? s.func : s.func + ".update(" + std::to_string(s.update) + ")"; }

std::string to_string(const Directive &d) { return std::visit(DirectivePrinter{}, d); }

std::string to_string(const ScheduleSpec &s) {
    std::ostringstream os;
    os << "schedule " << s.name << " (" << to_string(s.device) << ")\n";
    if (!s.description.empty()) os << "  // " << s.description << "\n";
    if (s.program) os << "  elementwise program: no code generated, the runtime interprets the group\n";
    for (const auto &v : s.variants) {
        os << "  when";
        for (size_t i = 0; i < v.guards.size(); i++) os << (i ? " && " : " ") << v.guards[i].to_string();
        os << ":\n";
        for (const auto &d : v.steps) os << "    " << to_string(d) << ";\n";
    }
    if (!s.variants.empty()) os << "  otherwise:\n";
    for (const auto &d : s.steps) os << (s.variants.empty() ? "  " : "    ") << to_string(d) << ";\n";
    return os.str();
}

bool Guard::holds(const std::map<std::string, long> &extents) const {
    auto it = extents.find(extent);
    if (it == extents.end()) return false;
    // The runtime's evaluator (runtime/tessel_guard.c), which generated libraries dispatch with.
    const int holds = tessel_guard_holds((int)op, value, it->second);
    if (holds >= 0) return holds != 0;
    throw std::invalid_argument("guard on " + extent + ": unknown operator " + std::to_string((int)op));
}

std::string Guard::to_string() const {
    if (op == GuardOp::Divisible) return extent + " % " + std::to_string(value) + " == 0";
    return extent + " " + sched::to_string(op) + " " + std::to_string(value);
}

ScheduleSpec elementwise_program_schedule() {
    ScheduleSpec s("elementwise_program");
    s.group = dsl::GroupKind::Elementwise;
    s.program = true;
    return s;
}

ScheduleSpec ScheduleSpec::keeping_variants(const std::vector<size_t> &indices) const {
    ScheduleSpec s = *this;
    s.variants.clear();
    for (size_t i : indices) s.variants.push_back(variants.at(i));
    return s;
}

ScheduleSpec ScheduleSpec::variant_alone(size_t i) const {
    ScheduleSpec s = *this;
    s.variants.clear();
    s.steps = variants.at(i).steps;
    return s;
}

size_t ScheduleSpec::pick_variant(const std::map<std::string, long> &extents) const {
    for (size_t i = 0; i < variants.size(); i++) {
        bool all = true;
        for (const auto &g : variants[i].guards) all = all && g.holds(extents);
        if (all) return i;
    }
    return variants.size();
}

ScheduleSpec &ScheduleSpec::split(const StageRef &s, const std::string &var, const std::string &outer, const std::string &inner,
                                  int factor, Tail tail) {
    steps.push_back(Split{s, var, outer, inner, factor, tail});
    return *this;
}
ScheduleSpec &ScheduleSpec::fuse(const StageRef &s, const std::string &inner, const std::string &outer,
                                 const std::string &fused) {
    steps.push_back(Fuse{s, inner, outer, fused});
    return *this;
}
ScheduleSpec &ScheduleSpec::reorder(const StageRef &s, std::vector<std::string> vars) {
    steps.push_back(Reorder{s, std::move(vars)});
    return *this;
}
ScheduleSpec &ScheduleSpec::vectorize(const StageRef &s, const std::string &var) {
    steps.push_back(Vectorize{s, var});
    return *this;
}
ScheduleSpec &ScheduleSpec::unroll(const StageRef &s, const std::string &var) {
    steps.push_back(Unroll{s, var});
    return *this;
}
ScheduleSpec &ScheduleSpec::parallel(const StageRef &s, const std::string &var) {
    steps.push_back(Parallel{s, var});
    return *this;
}
ScheduleSpec &ScheduleSpec::gpu_blocks(const StageRef &s, std::vector<std::string> vars) {
    steps.push_back(GpuBlocks{s, std::move(vars)});
    return *this;
}
ScheduleSpec &ScheduleSpec::gpu_threads(const StageRef &s, std::vector<std::string> vars) {
    steps.push_back(GpuThreads{s, std::move(vars)});
    return *this;
}
ScheduleSpec &ScheduleSpec::compute_at(const std::string &func, const std::string &at, const std::string &var) {
    steps.push_back(ComputeAt{func, at, var});
    return *this;
}
ScheduleSpec &ScheduleSpec::compute_root(const std::string &func) {
    steps.push_back(ComputeRoot{func});
    return *this;
}
ScheduleSpec &ScheduleSpec::compute_inline(const std::string &func) {
    steps.push_back(ComputeInline{func});
    return *this;
}
ScheduleSpec &ScheduleSpec::store_at(const std::string &func, const std::string &at, const std::string &var) {
    steps.push_back(StoreAt{func, at, var});
    return *this;
}
ScheduleSpec &ScheduleSpec::store_in(const std::string &func, MemoryLevel level) {
    steps.push_back(StoreIn{func, level});
    return *this;
}
ScheduleSpec &ScheduleSpec::stage_input(const std::string &input, const std::string &wrapper, const std::string &consumer) {
    steps.push_back(StageInput{input, wrapper, consumer});
    return *this;
}
ScheduleSpec &ScheduleSpec::rfactor(const StageRef &s, const std::string &rvar, const std::string &new_var,
                                    const std::string &intermediate) {
    steps.push_back(RFactor{s, rvar, new_var, intermediate});
    return *this;
}
ScheduleSpec &ScheduleSpec::bound(const std::string &func, const std::string &var, int min, int extent) {
    steps.push_back(Bound{func, var, min, extent});
    return *this;
}
ScheduleSpec &ScheduleSpec::bound_extent(const std::string &func, const std::string &var, int extent) {
    steps.push_back(BoundExtent{func, var, extent});
    return *this;
}
ScheduleSpec &ScheduleSpec::assume_aligned(const std::string &buffer, int lanes) {
    steps.push_back(AssumeAligned{buffer, lanes});
    return *this;
}
ScheduleSpec &ScheduleSpec::prefetch(const StageRef &s, const std::string &input, const std::string &var, int distance) {
    steps.push_back(Prefetch{s, input, var, distance});
    return *this;
}

ScheduleSpec &ScheduleSpec::reorder_storage(const std::string &func, std::vector<std::string> vars) {
    steps.push_back(ReorderStorage{func, std::move(vars)});
    return *this;
}
ScheduleSpec &ScheduleSpec::compute_with(const StageRef &stage, const StageRef &with, const std::string &var) {
    steps.push_back(ComputeWith{stage, with, var});
    return *this;
}

bool writes_each_element_once(const ScheduleSpec &s, std::string *why) {
    auto check = [&](const std::vector<Directive> &steps) {
        for (const Directive &d : steps) {
            if (const auto *sp = std::get_if<Split>(&d); sp && sp->tail != Tail::GuardWithIf && sp->tail != Tail::Predicate) {
                if (why) *why = to_string(d) + " (tail " + to_string(sp->tail) + ")";
                return false;
            }
            if (std::holds_alternative<BoundExtent>(d)) {
                if (why) *why = to_string(d);
                return false;
            }
        }
        return true;
    };
    for (const auto &v : s.variants)
        if (!check(v.steps)) return false;
    return check(s.steps);
}

}  // namespace tessel::sched
