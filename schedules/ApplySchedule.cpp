// Map: resolve names (StageState) -> per-directive checks and Halide calls (Applier) ->
// apply_schedule(), which drives the Applier and converts Halide errors.
#include "schedules/ApplySchedule.h"

#include "schedules/TargetFacts.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace tessel::sched {

using Halide::Func;
using Halide::Stage;
using Halide::VarOrRVar;

TargetLimits TargetLimits::for_target(const Halide::Target &t) {
    const TargetFacts facts = TargetFacts::for_target(t);
    TargetLimits l;
    l.natural_f32_lanes = facts.cpu.natural_f32_lanes;
    l.max_threads_per_block = facts.cuda.max_threads_per_block;
    l.max_shared_bytes = (int)facts.cuda.shared_per_block;
    l.max_vector_lanes = 4 * l.natural_f32_lanes;
    if (t.has_gpu_feature()) l.max_vector_lanes = std::max(l.max_vector_lanes, 8);
    return l;
}

namespace {

/** "n.ni" -> "ni", "k$x" -> "k": the name a schedule uses for a Halide loop. */
std::string short_name(const std::string &dim_var) {
    std::string s = dim_var.substr(dim_var.rfind('.') == std::string::npos ? 0 : dim_var.rfind('.') + 1);
    if (s.size() > 2 && s.compare(s.size() - 2, 2, "$x") == 0) s.resize(s.size() - 2);
    return s;
}

bool is_power_of_two(int x) { return x > 0 && (x & (x - 1)) == 0; }

struct StepFailure {
    std::string reason;
};

[[noreturn]] void fail(const std::string &reason) { throw StepFailure{reason}; }

class Applier {
public:
    explicit Applier(ScheduleTarget &t) : t_(t), limits_(TargetLimits::for_target(t.target)) {}

    void operator()(const Split &d) {
        if (d.factor <= 0) fail("split factor must be positive, got " + std::to_string(d.factor) + " (a tile of zero)");
        Stage s = stage(d.stage);
        VarOrRVar v = loop(d.stage, d.var);
        require_new_name(d.stage, d.outer);
        require_new_name(d.stage, d.inner);
        if (v.is_rvar) {
            s.split(v.rvar, Halide::RVar(d.outer), Halide::RVar(d.inner), d.factor, tail(d.tail));
        } else {
            s.split(v.var, Halide::Var(d.outer), Halide::Var(d.inner), d.factor, tail(d.tail));
        }
        auto &ext = extents_[key(d.stage)];
        ext[d.inner] = d.factor;
        if (ext.count(d.var)) ext[d.outer] = (ext[d.var] + d.factor - 1) / d.factor;
    }
    void operator()(const Fuse &d) {
        Stage s = stage(d.stage);
        VarOrRVar a = loop(d.stage, d.inner), b = loop(d.stage, d.outer);
        require_new_name(d.stage, d.fused);
        s.fuse(a, b, a.is_rvar ? VarOrRVar(Halide::RVar(d.fused)) : VarOrRVar(Halide::Var(d.fused)));
        auto &ext = extents_[key(d.stage)];
        if (ext.count(d.inner) && ext.count(d.outer)) ext[d.fused] = ext[d.inner] * ext[d.outer];
    }
    void operator()(const Reorder &d) {
        Stage s = stage(d.stage);
        std::vector<VarOrRVar> vars;
        std::set<std::string> seen;
        for (const auto &n : d.vars) {
            if (!seen.insert(n).second) fail("loop '" + n + "' appears twice in reorder");
            vars.push_back(loop(d.stage, n));
        }
        s.reorder(vars);
    }
    void operator()(const Vectorize &d) {
        Stage s = stage(d.stage);
        VarOrRVar v = loop(d.stage, d.var);
        const int w = known_extent(d.stage, d.var, "vectorize");
        if (!is_power_of_two(w) || w < 2 || w > limits_.max_vector_lanes) {
            fail("vector width " + std::to_string(w) + " is not one target " + t_.target.to_string() +
                 " has: f32 vectors there are " + std::to_string(limits_.natural_f32_lanes) +
                 " lanes; accepted widths are powers of two from 2 to " + std::to_string(limits_.max_vector_lanes));
        }
        s.vectorize(v);
    }
    void operator()(const Unroll &d) {
        Stage s = stage(d.stage);
        VarOrRVar v = loop(d.stage, d.var);
        const int u = known_extent(d.stage, d.var, "unroll");
        if (u > limits_.max_unroll)
            fail("unroll factor " + std::to_string(u) + " exceeds the limit of " + std::to_string(limits_.max_unroll));
        s.unroll(v);
    }
    void operator()(const Parallel &d) { stage(d.stage).parallel(loop(d.stage, d.var)); }
    void operator()(const GpuBlocks &d) {
        require_gpu("gpu_blocks");
        if (d.vars.empty() || d.vars.size() > 3) fail("gpu_blocks takes 1 to 3 loops");
        Stage s = stage(d.stage);
        std::vector<VarOrRVar> v;
        for (const auto &n : d.vars) v.push_back(loop(d.stage, n));
        if (v.size() == 1)
            s.gpu_blocks(v[0]);
        else if (v.size() == 2)
            s.gpu_blocks(v[0], v[1]);
        else
            s.gpu_blocks(v[0], v[1], v[2]);
    }
    void operator()(const GpuThreads &d) {
        require_gpu("gpu_threads");
        if (d.vars.empty() || d.vars.size() > 3) fail("gpu_threads takes 1 to 3 loops");
        Stage s = stage(d.stage);
        std::vector<VarOrRVar> v;
        const int per_dim_limit[3] = {limits_.max_threads_x, limits_.max_threads_y, limits_.max_threads_z};
        long total = 1;
        for (size_t i = 0; i < d.vars.size(); i++) {
            v.push_back(loop(d.stage, d.vars[i]));
            const int e = known_extent(d.stage, d.vars[i], "gpu_threads");
            if (e > per_dim_limit[i])
                fail("GPU thread dimension " + std::to_string(i) + " ('" + d.vars[i] + "') has " + std::to_string(e) +
                     " threads, over the limit of " + std::to_string(per_dim_limit[i]));
            total *= e;
        }
        resources.max_threads_per_block = std::max(resources.max_threads_per_block, total);
        if (total > limits_.max_threads_per_block)
            fail("GPU block of " + std::to_string(total) + " threads is over the limit of " +
                 std::to_string(limits_.max_threads_per_block) + " threads per block");
        if (v.size() == 1)
            s.gpu_threads(v[0]);
        else if (v.size() == 2)
            s.gpu_threads(v[0], v[1]);
        else
            s.gpu_threads(v[0], v[1], v[2]);
    }
    void operator()(const ComputeAt &d) {
        Func f = func(d.func), at = func(d.at);
        VarOrRVar v = loop(StageRef{d.at, -1}, d.var, /*any_stage=*/true);
        f.compute_at(Halide::LoopLevel(at, v));
    }
    void operator()(const ComputeRoot &d) { func(d.func).compute_root(); }
    void operator()(const ComputeInline &d) { func(d.func).compute_inline(); }
    void operator()(const StoreAt &d) {
        Func f = func(d.func), at = func(d.at);
        f.store_at(Halide::LoopLevel(at, loop(StageRef{d.at, -1}, d.var, true)));
    }
    void operator()(const StoreIn &d) {
        Func f = func(d.func);
        if (d.level == MemoryLevel::GpuShared || d.level == MemoryLevel::GpuGlobal) require_gpu("store_in(gpu_*)");
        f.store_in(memory_type(d.level));
        if (d.level == MemoryLevel::GpuShared) {
            shared_funcs_.insert(d.func);
            check_shared_memory();
        }
    }
    void operator()(const StageInput &d) {
        if (t_.funcs.count(d.wrapper) || t_.inputs.count(d.wrapper)) fail("stage name '" + d.wrapper + "' is already taken");
        Func wrapper;
        auto in = t_.inputs.find(d.input);
        if (in != t_.inputs.end()) {
            wrapper = d.consumer.empty() ? in->second.in() : in->second.in(func(d.consumer));
        } else {
            Func f = func(d.input);
            wrapper = d.consumer.empty() ? f.in() : f.in(func(d.consumer));
        }
        t_.funcs[d.wrapper] = wrapper;
    }
    void operator()(const RFactor &d) {
        if (t_.ordered_reductions)
            fail(
                "rfactor splits the reduction into partial sums, which reorders it; numeric mode 'exact' keeps "
                "every reduction in program order (use mode=strict or mode=fast to allow it)");
        if (d.stage.update < 0) fail("rfactor applies to an update definition, not the pure one");
        if (t_.funcs.count(d.intermediate)) fail("stage name '" + d.intermediate + "' is already taken");
        Stage s = stage(d.stage);
        VarOrRVar r = loop(d.stage, d.rvar);
        if (!r.is_rvar) fail("'" + d.rvar + "' is not a reduction loop of " + to_string(d.stage));
        Func inter = s.rfactor(r.rvar, Halide::Var(d.new_var));
        t_.funcs[d.intermediate] = inter;
        // The intermediate's update keeps the other loops (and their split extents).
        extents_[key(StageRef{d.intermediate, 0})] = extents_[key(d.stage)];
        // The new pure var spans the factored loop: vectorize/gpu_threads may address it.
        if (auto it = extents_[key(d.stage)].find(d.rvar); it != extents_[key(d.stage)].end()) {
            const int e = it->second;
            extents_[key(StageRef{d.intermediate, -1})][d.new_var] = e;
            extents_[key(StageRef{d.intermediate, 0})][d.new_var] = e;
        }
    }
    void operator()(const Bound &d) {
        Func f = func(d.func);
        if (d.extent <= 0) fail("bound extent must be positive, got " + std::to_string(d.extent));
        loop(StageRef{d.func, -1}, d.var);
        f.bound(Halide::Var(d.var), d.min, d.extent);
        bounds_[d.func][d.var] = d.extent;
        for (int u = -1; u < f.num_update_definitions(); u++) extents_[key(StageRef{d.func, u})][d.var] = d.extent;
        check_shared_memory();
    }
    void operator()(const BoundExtent &d) {
        Func f = func(d.func);
        if (d.extent <= 0) fail("bound_extent extent must be positive, got " + std::to_string(d.extent));
        loop(StageRef{d.func, -1}, d.var);
        f.bound_extent(Halide::Var(d.var), d.extent);
        bounds_[d.func][d.var] = d.extent;
        for (int u = -1; u < f.num_update_definitions(); u++) extents_[key(StageRef{d.func, u})][d.var] = d.extent;
        check_shared_memory();
    }
    void operator()(const ReorderStorage &d) {
        Func f = func(d.func);
        std::vector<Halide::Var> vars;
        std::set<std::string> seen;
        for (const std::string &v : d.vars) {
            if (!seen.insert(v).second) fail("reorder_storage names '" + v + "' twice");
            bool pure = false;
            for (const Halide::Var &a : f.args()) pure = pure || a.name() == v;
            if (!pure) fail("'" + v + "' is not a dimension of " + d.func);
            vars.emplace_back(v);
        }
        if (vars.size() != f.args().size())
            fail("reorder_storage must name every dimension of " + d.func + " (" + std::to_string(f.args().size()) + ")");
        f.reorder_storage(vars);
    }
    void operator()(const ComputeWith &d) {
        if (d.stage.func == d.with.func) fail("compute_with fuses two Funcs' stages; both are " + d.stage.func);
        stage(d.stage).compute_with(stage(d.with), loop(d.with, d.var));
    }
    void operator()(const AssumeAligned &d) {
        if (!is_power_of_two(d.lanes) || d.lanes < 1 || d.lanes > limits_.max_vector_lanes)
            fail("assume_aligned lanes must be a power of two from 1 to " + std::to_string(limits_.max_vector_lanes) + ", got " +
                 std::to_string(d.lanes));
        std::vector<Halide::OutputImageParam> buffers;
        if (auto in = t_.inputs.find(d.buffer); in != t_.inputs.end()) {
            buffers.push_back(in->second);
        } else {
            Func f = func(d.buffer);
            if (!f.defined()) fail("'" + d.buffer + "' is not an output Func");
            for (const auto &b : f.output_buffers()) buffers.push_back(b);  // every element of a Tuple
        }
        // Constraints, asserted when the pipeline runs; Halide then knows the alignment. One lane
        // promises only that indices start at 0.
        const int l = d.lanes;
        // A Tuple's further buffers share the first one's mins and extents (Halide constrains
        // them so itself); their strides are their own.
        for (size_t b = 0; b < buffers.size(); b++) {
            Halide::OutputImageParam &p = buffers[b];
            if (b == 0)
                for (int i = 0; i < p.dimensions(); i++) p.dim(i).set_min(0);
            if (l == 1) continue;
            if (b == 0) p.dim(0).set_extent((p.dim(0).extent() / l) * l);
            for (int i = 1; i < p.dimensions(); i++) p.dim(i).set_stride((p.dim(i).stride() / l) * l);
        }
    }
    void operator()(const Prefetch &d) {
        Stage s = stage(d.stage);
        VarOrRVar v = loop(d.stage, d.var);
        if (d.distance < 0) fail("prefetch distance must be non-negative");
        auto in = t_.inputs.find(d.input);
        if (in != t_.inputs.end())
            s.prefetch(in->second, v, v, d.distance);
        else
            s.prefetch(func(d.input), v, v, d.distance);
    }

private:
    ScheduleTarget &t_;
    TargetLimits limits_;
    std::map<std::string, std::map<std::string, int>> extents_;  // stage key -> loop -> extent
    std::map<std::string, std::map<std::string, int>> bounds_;   // func -> var -> bound extent
    std::set<std::string> shared_funcs_;

public:
    AppliedResources resources;

private:
    static std::string key(const StageRef &s) { return to_string(s); }

    Func func(const std::string &name) {
        auto it = t_.funcs.find(name);
        if (it == t_.funcs.end()) {
            std::string known;
            for (const auto &[n, f] : t_.funcs) known += (known.empty() ? "" : ", ") + n;
            fail("no stage named '" + name + "' (stages: " + known + ")");
        }
        return it->second;
    }

    Stage stage(const StageRef &s) {
        Func f = func(s.func);
        if (s.update < 0) return Stage(f);
        if (s.update >= f.num_update_definitions())
            fail(s.func + " has " + std::to_string(f.num_update_definitions()) + " update definition(s); there is no update(" +
                 std::to_string(s.update) + ")");
        return f.update(s.update);
    }

    const std::vector<Halide::Internal::Dim> &dims(const StageRef &s) {
        Func f = func(s.func);
        if (s.update < 0) return f.function().definition().schedule().dims();
        stage(s);  // range check
        return f.function().update(s.update).schedule().dims();
    }

    /** The loop named `name` in stage `s`. With any_stage, the loop may come from any stage of
     * the Func (compute_at addresses loops of the consumer's last stage too). */
    VarOrRVar loop(const StageRef &s, const std::string &name, bool any_stage = false) {
        std::vector<StageRef> where{s};
        if (any_stage) {
            Func f = func(s.func);
            for (int u = 0; u < f.num_update_definitions(); u++) where.push_back({s.func, u});
        }
        std::string known;
        for (const auto &st : where) {
            for (const auto &d : dims(st)) {
                if (d.var == Halide::Var::outermost().name()) continue;
                if (short_name(d.var) == name || d.var == name) {
                    // Halide matches loops by their unqualified name: "n.ni" -> "ni", "k$x" stays.
                    const std::string unqualified = d.var.substr(d.var.rfind('.') + 1);
                    return d.is_rvar() ? VarOrRVar(Halide::RVar(unqualified)) : VarOrRVar(Halide::Var(unqualified));
                }
                known += (known.empty() ? "" : ", ") + short_name(d.var);
            }
        }
        fail("no loop named '" + name + "' in " + to_string(s) + " (loops: " + known + ")");
    }

    void require_new_name(const StageRef &s, const std::string &name) {
        if (name.empty()) fail("empty loop name");
        for (const auto &d : dims(s))
            if (short_name(d.var) == name) fail("loop name '" + name + "' already exists in " + to_string(s));
    }

    int known_extent(const StageRef &s, const std::string &var, const char *what) {
        auto &ext = extents_[key(s)];
        auto it = ext.find(var);
        if (it == ext.end() && s.update >= 0) {  // a reduction variable of a constant extent
            for (const auto &rv : func(s.func).function().update(s.update).schedule().rvars())
                if (short_name(rv.var) == var)
                    if (const auto e = Halide::Internal::as_const_int(rv.extent)) return (int)*e;
        }
        if (it == ext.end())
            fail(std::string(what) + " needs a loop of known constant extent; '" + var +
                 "' has none (split it by a constant factor first)");
        return it->second;
    }

    void require_gpu(const char *what) {
        if (!t_.target.has_gpu_feature()) fail(std::string(what) + " needs a GPU target; target is " + t_.target.to_string());
    }

    /** Sums the footprint of every GPU-shared Func whose extents are all bounded. */
    void check_shared_memory() {
        long total = 0;
        bool complete = true;
        for (const auto &name : shared_funcs_) {
            Func f = func(name);
            long bytes = f.defined() && f.outputs() == 1 ? f.type().bytes() : 4;
            bool known = true;
            for (const auto &a : f.args()) {
                auto b = bounds_[name].find(a.name());
                if (b == bounds_[name].end()) {
                    known = false;
                    break;
                }
                bytes *= b->second;
            }
            if (known) total += bytes;
            complete = complete && known;
        }
        resources.shared_bytes = total;
        resources.shared_complete = complete;
        if (total > limits_.max_shared_bytes)
            fail("GPU shared memory of " + std::to_string(total) + " bytes is over the limit of " +
                 std::to_string(limits_.max_shared_bytes) + " bytes per block");
    }

    static Halide::TailStrategy tail(Tail t) {
        switch (t) {
        case Tail::Auto: return Halide::TailStrategy::Auto;
        case Tail::GuardWithIf: return Halide::TailStrategy::GuardWithIf;
        case Tail::ShiftInwards: return Halide::TailStrategy::ShiftInwards;
        case Tail::RoundUp: return Halide::TailStrategy::RoundUp;
        case Tail::Predicate: return Halide::TailStrategy::Predicate;
        }
        return Halide::TailStrategy::Auto;
    }

    static Halide::MemoryType memory_type(MemoryLevel m) {
        switch (m) {
        case MemoryLevel::Auto: return Halide::MemoryType::Auto;
        case MemoryLevel::Register: return Halide::MemoryType::Register;
        case MemoryLevel::Stack: return Halide::MemoryType::Stack;
        case MemoryLevel::Heap: return Halide::MemoryType::Heap;
        case MemoryLevel::GpuShared: return Halide::MemoryType::GPUShared;
        case MemoryLevel::GpuGlobal: return Halide::MemoryType::Heap;
        }
        return Halide::MemoryType::Auto;
    }
};

}  // namespace

AppliedResources apply_schedule(const std::vector<Directive> &steps, ScheduleTarget &target, const std::string &schedule_name) {
    Applier applier(target);
    for (size_t i = 0; i < steps.size(); i++) {
        auto where = [&] {
            return "invalid schedule '" + schedule_name + "', step " + std::to_string(i + 1) + " `" + to_string(steps[i]) + "`: ";
        };
        try {
            std::visit(applier, steps[i]);
        } catch (const StepFailure &f) {
            throw ScheduleError(where() + f.reason);
        } catch (const Halide::Error &e) {
            throw ScheduleError(where() + "Halide refused it: " + std::string(e.what()));
        }
    }
    return applier.resources;
}

}  // namespace tessel::sched
