#include "lowering/CompiledGraph.h"
#include "support/Clock.h"

#include "dsl/analysis/WeightDerived.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"
#include "lowering/ScheduleGroup.h"
#include "lowering/TensorBuffers.h"

#include <chrono>

#include <future>

namespace tessel {

using dsl::ValueId;

std::vector<int64_t> concrete_shape(const dsl::Graph &g, ValueId v, const std::map<std::string, int64_t> &symbols) {
    std::vector<int64_t> shape;
    for (const auto &d0 : g.node(v).type.dims) {
        const dsl::Dim d = dsl::resolve_dim(g, d0);
        if (d.is_static())
            shape.push_back(d.size);
        else if (d.kind == dsl::Dim::Kind::Symbol && symbols.count(d.symbol))
            shape.push_back(symbols.at(d.symbol));
        else
            throw lower::LoweringError("the size of " + dsl::print_dim(g, d0) + " in " + dsl::print_node(g, v) + " is unknown");
    }
    return shape;
}

namespace {

/** The part of cache write `v`'s result (`whole`, the cache's shape) its kernel writes: the last
 * extent(values) positions along the axis, re-based at 0 (the kernel indexes the values). */
Halide::Buffer<> tail_window(const dsl::Graph &g, ValueId v, const Halide::Buffer<> &whole,
                             const std::map<std::string, int64_t> &symbols) {
    const dsl::Node &n = g.node(v);
    const int axis = (int)n.attrs.axis, d = n.type.rank() - 1 - axis;
    const int64_t count = concrete_shape(g, n.inputs[1], symbols)[(size_t)axis];
    const int first = whole.dim(d).max() + 1 - (int)count;
    Halide::Buffer<> w = whole.cropped(d, first, (int)count);
    w.translate(d, -first);
    return w;
}

}  // namespace

CompiledGraph::CompiledGraph(const dsl::Graph &g, const dsl::FusionPlan &plan, const Halide::Target &target,
                             const ScheduleChooser &choose, KernelBackend backend)
    : graph_(g), plan_(plan), target_(target), backend_(backend) {
    for (ValueId v : g.order())
        if (dsl::is_weight(g, v)) weights_.push_back(v);
    for (const auto &fg : plan.groups) {
        Group cg;
        const lower::LoweredGroup probe = lower::lower_group(g, fg);
        std::optional<sched::ScheduleSpec> chosen = choose ? choose(fg, probe) : std::nullopt;
        if (chosen) {
            try {
                cg.kernel = std::make_unique<CompiledKernel>(g, fg, *chosen, target, backend);
                cg.schedule_note = "schedule '" + chosen->name + "'";
            } catch (const sched::ScheduleError &e) {
                cg.schedule_note = std::string(e.what());
                cg.refused = "schedule '" + chosen->name + "': " + e.what();
            }
        }
        if (!cg.kernel) {
            const sched::ScheduleSpec fallback = lower::default_group_schedule(probe, target);
            cg.kernel = std::make_unique<CompiledKernel>(g, fg, fallback, target, backend);
            const std::string what = "default schedule '" + fallback.name + "'";
            cg.schedule_note = cg.schedule_note.empty() ? what : "fell back to the " + what + ": " + cg.schedule_note;
        }
        cg.runs_on = groups_.size();
        groups_.push_back(std::move(cg));
    }
}

std::vector<const CompiledKernel *> CompiledGraph::kernels() const {
    std::vector<const CompiledKernel *> out;
    for (const Group &cg : groups_) out.push_back(cg.kernel.get());
    return out;
}

const CompiledKernel &CompiledGraph::runner(size_t i) const {
    const Group &code = groups_.at(groups_.at(i).runs_on);
    return groups_[i].constants.defined() ? *code.lifted_code : *code.kernel;
}

void CompiledGraph::run_group(size_t i, const std::vector<halide_buffer_t *> &buffers) const {
    const Group &cg = groups_[i];
    if (cg.runs_on == i && !cg.constants.defined()) return cg.kernel->run(buffers);
    try {
        runner(i).run(buffers, cg.constants.defined() ? cg.constants.raw_buffer() : nullptr);
    } catch (const CompileError &e) {
        throw CompileError("group '" + cg.kernel->group().name + "' (on the kernel of group '" +
                           groups_[cg.runs_on].kernel->group().name + "', the same code): " + e.what());
    }
}

void CompiledGraph::share_kernels(const std::vector<size_t> &same_code_as, const std::vector<std::vector<dsl::ValueId>> &lifted) {
    const size_t n = groups_.size();
    if (same_code_as.size() != n || (!lifted.empty() && lifted.size() != n))
        throw std::invalid_argument("share_kernels: " + std::to_string(same_code_as.size()) + " entries (" +
                                    std::to_string(lifted.size()) + " lists of constants) for " + std::to_string(n) + " groups");
    static const std::vector<dsl::ValueId> none;
    auto constants_of = [&](size_t i) -> const std::vector<dsl::ValueId> & { return lifted.empty() ? none : lifted[i]; };
    for (size_t i = 0; i < n; i++) {
        const size_t c = same_code_as[i];
        const CompiledKernel &k = *groups_[i].kernel;
        if (c > i || same_code_as[c] != c || groups_[c].kernel->arguments().size() != k.arguments().size())
            throw std::invalid_argument("share_kernels: group '" + k.group().name + "' cannot run on group " + std::to_string(c) +
                                        "'s kernel (not an earlier group with its own kernel and " +
                                        std::to_string(k.arguments().size()) + " arguments)");
        if (constants_of(i).size() != constants_of(c).size())
            throw std::invalid_argument("share_kernels: group '" + k.group().name + "' passes " +
                                        std::to_string(constants_of(i).size()) + " constants to code that reads " +
                                        std::to_string(constants_of(c).size()));
        for (dsl::ValueId v : constants_of(i)) {
            const dsl::Node &node = graph_.node(v);
            const auto &members = k.group().nodes;
            if (node.op != dsl::Op::Constant || node.attrs.value.size() != 1 ||
                std::find(members.begin(), members.end(), v) == members.end())
                throw std::invalid_argument("share_kernels: " + graph_.display_name(v) + " is not a scalar constant of group '" +
                                            k.group().name + "'");
        }
    }
    for (size_t i = 0; i < n; i++) {
        Group &cg = groups_[i];
        cg.runs_on = same_code_as[i];
        cg.lifted_code.reset();
        cg.constants = Halide::Buffer<float>();
        const std::vector<dsl::ValueId> &values = constants_of(i);
        if (values.empty()) continue;
        if (cg.runs_on == i)
            cg.lifted_code = std::make_unique<CompiledKernel>(graph_, cg.kernel->group(), cg.kernel->schedule(), target_,
                                                              backend_, std::nullopt, values);
        cg.constants = Halide::Buffer<float>((int)values.size());
        for (size_t j = 0; j < values.size(); j++) cg.constants((int)j) = lower::scalar_constant_value(graph_.node(values[j]));
    }
}

std::vector<dsl::ExternalGroup> CompiledGraph::as_external_groups() const {
    std::vector<dsl::ExternalGroup> out;
    for (size_t gi = 0; gi < groups_.size(); gi++) {
        const CompiledKernel *k = groups_[gi].kernel.get();
        dsl::ExternalGroup eg;
        eg.members = k->group().nodes;
        for (const auto &a : k->arguments())
            if (a.is_output) eg.outputs.push_back(a.value);
        const dsl::Graph *g = &graph_;
        eg.run = [this, gi, k, g](const std::map<ValueId, dsl::Tensor> &values, const std::map<std::string, int64_t> &symbols) {
            std::vector<Halide::Buffer<>> buffers;
            std::vector<halide_buffer_t *> raw;
            for (const auto &a : k->arguments()) {
                if (a.is_output && g->node(a.value).op == dsl::Op::UpdateTail) {
                    // The kernel writes the tail: the rest is the cache's.
                    const ValueId cache = g->node(a.value).inputs[0];
                    buffers.push_back(to_value_buffer(*g, a.value, values.at(cache), a.name));
                } else if (a.is_output) {
                    buffers.push_back(make_value_buffer(*g, a.value, concrete_shape(*g, a.value, symbols), a.name));
                } else {
                    auto it = values.find(a.value);
                    if (it == values.end())
                        throw lower::LoweringError("group '" + k->group().name + "' reads " + a.name + " before it is computed");
                    buffers.push_back(to_value_buffer(*g, a.value, it->second, a.name));
                }
                raw.push_back(buffers.back().raw_buffer());
            }
            for (size_t i = 0; i < k->arguments().size(); i++)
                if (k->arguments()[i].is_output && g->node(k->arguments()[i].value).op == dsl::Op::UpdateTail) {
                    buffers.push_back(tail_window(*g, k->arguments()[i].value, buffers[i], symbols));
                    raw[i] = buffers.back().raw_buffer();
                }
            run_group(gi, raw);
            std::vector<dsl::Tensor> results;
            for (size_t i = 0; i < k->arguments().size(); i++)
                if (k->arguments()[i].is_output)
                    results.push_back(from_value_buffer(*g, k->arguments()[i].value, buffers[i],
                                                        concrete_shape(*g, k->arguments()[i].value, symbols)));
            return results;
        };
        out.push_back(std::move(eg));
    }
    return out;
}

bool CompiledGraph::runs_planned(std::string *why) const {
    if (plan_.outside_kernels.empty()) return true;
    if (why) *why = dsl::print_node(graph_, plan_.outside_kernels.front()) + " runs outside kernels";
    return false;
}

dsl::BufferAssignment CompiledGraph::memory_plan(const std::map<std::string, int64_t> &symbols,
                                                 const ArenaOptions &options) const {
    dsl::BufferAssignmentOptions o;
    o.policy = options.policy;
    o.donated_inputs = options.donated_inputs;
    o.prepared_kept = options.keep_prepared;  // run(): prepared_values() keeps them between calls
    std::vector<sched::ScheduleSpec> specs;
    for (const auto &cg : groups_) specs.push_back(cg.kernel->schedule());
    o.schedule_reads_before_writes = lower::in_place_check(std::move(specs));
    return dsl::assign_buffers(graph_, plan_, symbols, o);
}

namespace {

/** Symbol sizes from the inputs' shapes, checked against each other and against `given`. */
std::map<std::string, int64_t> bind_symbols(const dsl::Graph &g, const std::map<std::string, dsl::Tensor> &inputs,
                                            std::map<std::string, int64_t> symbols) {
    for (ValueId v : g.order()) {
        const dsl::Node &n = g.node(v);
        if (n.op != dsl::Op::Input) continue;
        auto it = inputs.find(g.display_name(v));
        if (it == inputs.end()) throw lower::LoweringError("missing input %" + g.display_name(v));
        const dsl::Tensor &t = it->second;
        if ((int)t.shape.size() != n.type.rank())
            throw lower::LoweringError("input %" + g.display_name(v) + " has rank " + std::to_string(t.shape.size()) +
                                       ", the graph declares " + dsl::print_node(g, v));
        for (int i = 0; i < n.type.rank(); i++) {
            const dsl::Dim d = dsl::resolve_dim(g, n.type.dims[i]);
            const int64_t size = t.shape[i];
            bool ok = true;
            if (d.is_static())
                ok = d.size == size;
            else if (d.kind == dsl::Dim::Kind::Symbol)
                ok = symbols.emplace(d.symbol, size).first->second == size;
            if (!ok)
                throw lower::LoweringError("input %" + g.display_name(v) + " has extent " + std::to_string(size) + " in axis " +
                                           std::to_string(i) + ", the graph declares " + dsl::print_node(g, v));
        }
    }
    return symbols;
}

/** `b` read as transpose(b, perm) (tensor axes): result axis i is b's axis perm[i]. */
Halide::Buffer<> transposed_view(const Halide::Buffer<> &b, const std::vector<int64_t> &perm) {
    const int r = (int)perm.size();
    std::vector<int> order(r);
    for (int d = 0; d < r; d++) order[d] = r - 1 - (int)perm[r - 1 - d];
    return b.transposed(order);
}

}  // namespace

std::map<ValueId, Halide::Buffer<>> CompiledGraph::prepared_values(const std::map<std::string, dsl::Tensor> &inputs,
                                                                   const std::map<std::string, int64_t> &symbols,
                                                                   RunStats &stats) const {
    // The key: each weight's identity (data address, size) and contents version.
    PreparedKey key;
    for (ValueId v : weights_) {
        const dsl::Tensor &t = inputs.at(graph_.display_name(v));
        key.push_back({t.data.data(), (int64_t)t.data.size(), t.version});
    }
    std::lock_guard<std::mutex> lock(prepared_lock_);
    if (prepared_ && prepared_->key == key) return prepared_->values;
    const tessel::SteadyClock::time_point t0 = tessel::SteadyClock::now();
    Prepared p;
    p.key = std::move(key);
    for (ValueId v : weights_)
        p.values[v] = to_value_buffer(graph_, v, inputs.at(graph_.display_name(v)), graph_.display_name(v));
    for (size_t gi = 0; gi < groups_.size(); gi++) {
        const CompiledKernel &k = *groups_[gi].kernel;
        if (!k.group().prepared) continue;
        std::vector<halide_buffer_t *> raw;
        for (const auto &a : k.arguments()) {
            if (a.is_output)
                p.values[a.value] = make_value_buffer(graph_, a.value, concrete_shape(graph_, a.value, symbols), a.name);
            auto it = p.values.find(a.value);
            if (it == p.values.end())
                throw lower::LoweringError("prepared group '" + k.group().name + "' reads " + a.name + ", which is not prepared");
            raw.push_back(it->second.raw_buffer());
        }
        run_group(gi, raw);
    }
    p.seconds = tessel::seconds_since(t0);
    stats.prepared_weights = true;
    stats.prepare_seconds = p.seconds;
    prepared_ = std::move(p);
    return prepared_->values;
}

std::vector<dsl::Tensor> CompiledGraph::run_planned(const std::map<std::string, dsl::Tensor> &inputs,
                                                    std::map<std::string, int64_t> symbols, const ArenaOptions &options,
                                                    RunStats &stats) const {
    symbols = bind_symbols(graph_, inputs, std::move(symbols));
    // Storage of every value a kernel reads or writes, by value: weights and the values prepared
    // from them first (kept between calls), then the other inputs, converted per call.
    std::map<ValueId, Halide::Buffer<>> storage = prepared_values(inputs, symbols, stats);
    for (const auto &[name, t] : inputs) {
        const ValueId v = graph_.find(name);
        if (v != dsl::kNoValue && graph_.node(v).op == dsl::Op::Input && !storage.count(v))
            storage[v] = to_value_buffer(graph_, v, t, name);
    }
    execute(storage, symbols, options, stats);
    std::vector<dsl::Tensor> results;
    for (ValueId v : graph_.outputs)
        results.push_back(from_value_buffer(graph_, v, storage.at(v), concrete_shape(graph_, v, symbols)));
    return results;
}

void CompiledGraph::run_buffers(const std::map<std::string, dsl::Tensor> &weights,
                                const std::map<std::string, Halide::Buffer<>> &buffers, const ArenaOptions &options,
                                RunStats *stats) const {
    RunStats local;
    RunStats &st = stats ? *stats : local;
    st = {};
    if (!runs_planned(&st.interpreted_because))
        throw lower::LoweringError("CompiledGraph::run_buffers needs every op in a kernel: " + st.interpreted_because);
    // Sizes from the buffers' extents (row-major values: Halide dimension 0 is the last axis);
    // `shapes` holds tensors without data, what bind_symbols reads.
    std::map<std::string, dsl::Tensor> shapes;
    std::map<ValueId, Halide::Buffer<>> given;
    for (const auto &[name, b] : buffers) {
        ValueId v = graph_.find(name);
        for (size_t i = 0; v == dsl::kNoValue && i < graph_.outputs.size(); i++)
            if (graph_.output_name(i) == name) v = graph_.outputs[i];
        if (v == dsl::kNoValue) throw lower::LoweringError("no input or output of graph " + graph_.name + " is named " + name);
        if (!graph_.node(v).layout.empty() || b.dimensions() != std::max(1, graph_.node(v).type.rank()))
            throw lower::LoweringError("buffer " + name + " must be row-major with the dims of " + dsl::print_node(graph_, v));
        given[v] = b;
        if (graph_.node(v).op != dsl::Op::Input) continue;
        dsl::Tensor shape;
        for (int d = b.dimensions() - 1; d >= 0; d--) shape.shape.push_back(b.dim(d).extent());
        shapes[name] = std::move(shape);
    }
    for (const auto &[name, w] : weights) shapes[name].shape = w.shape;  // the shape only: weights are large
    const std::map<std::string, int64_t> symbols = bind_symbols(graph_, shapes, {});
    std::map<ValueId, Halide::Buffer<>> storage = prepared_values(weights, symbols, st);
    for (const auto &[v, b] : given)
        if (!storage.count(v)) storage[v] = b;
    execute(storage, symbols, options, st);
}

void CompiledGraph::execute(std::map<ValueId, Halide::Buffer<>> &storage, const std::map<std::string, int64_t> &symbols,
                            const ArenaOptions &options, RunStats &stats) const {
    if (options.concurrent_groups && options.policy != dsl::ReusePolicy::NoConcurrentReuse)
        throw lower::LoweringError(
            "running independent groups concurrently needs the no-concurrent-reuse memory plan "
            "(ArenaOptions::policy): the serial plan may reuse memory between them");
    std::shared_ptr<const dsl::BufferAssignment> planned;
    {
        const PlanKey key{symbols, options.policy, options.donated_inputs};
        std::lock_guard<std::mutex> lock(plans_lock_);
        auto &slot = plans_[key];
        if (!slot) slot = std::make_shared<const dsl::BufferAssignment>(memory_plan(symbols, options));
        planned = slot;
    }
    const dsl::BufferAssignment &plan = *planned;
    std::unique_ptr<std::byte[]> owned;  // over-allocated by the alignment, then aligned; not zeroed
    std::byte *arena = static_cast<std::byte *>(options.workspace);
    if (arena) {
        if (options.workspace_bytes < (size_t)plan.planned_peak || reinterpret_cast<uintptr_t>(arena) % dsl::kArenaAlignment)
            throw lower::LoweringError("the workspace holds " + std::to_string(options.workspace_bytes) +
                                       " bytes; the memory plan needs " + std::to_string(plan.planned_peak) +
                                       " bytes aligned to " + std::to_string(dsl::kArenaAlignment));
    } else if (plan.planned_peak > 0) {
        owned.reset(new std::byte[plan.planned_peak + dsl::kArenaAlignment]);
        const uintptr_t base = reinterpret_cast<uintptr_t>(owned.get());
        arena = owned.get() + (dsl::kArenaAlignment - base % dsl::kArenaAlignment) % dsl::kArenaAlignment;
    }
    stats.planned = true;
    stats.arena_bytes = plan.planned_peak;

    struct Call {
        size_t group;
        std::vector<halide_buffer_t *> buffers;
        std::vector<Halide::Buffer<>> windows;  ///< cache-write tails the buffers point into
        /** Cache writes not in place: (cache, result) to copy before the kernel writes the tail. */
        std::vector<std::pair<Halide::Buffer<>, Halide::Buffer<>>> copies;
    };
    std::vector<Call> calls;
    for (size_t i = 0; i < graph_.outputs.size(); i++) {
        const ValueId v = graph_.outputs[i];
        const dsl::LogicalBuffer *b = plan.buffer(v);
        if (b && b->kind == dsl::LogicalBuffer::Kind::InPlace) continue;  // placed by its group, below
        if (!storage.count(v))
            storage[v] = make_value_buffer(graph_, v, concrete_shape(graph_, v, symbols), graph_.output_name(i));
    }
    for (size_t gi = 0; gi < groups_.size(); gi++) {
        const CompiledKernel &k = *groups_[gi].kernel;
        if (k.group().prepared) continue;  // ran when the weights were prepared
        bool view = false;
        for (const auto &a : k.arguments()) {
            if (!a.is_output || storage.count(a.value)) continue;
            const dsl::LogicalBuffer *b = plan.buffer(a.value);
            const std::vector<int64_t> shape = concrete_shape(graph_, a.value, symbols);
            if (value_bytes(graph_, a.value, shape) > b->bytes)
                throw lower::LoweringError("value %" + graph_.display_name(a.value) + " in layout " +
                                           dsl::to_string(graph_.node(a.value).layout) +
                                           " needs more bytes than the memory plan holds: panel layouts are for weights, "
                                           "prepared values and inputs");
            if (b->kind == dsl::LogicalBuffer::Kind::View) {
                const dsl::Node &n = graph_.node(a.value);
                const Halide::Buffer<> &operand = storage.at(b->shares_with);
                storage[a.value] = b->strided ? transposed_view(operand, n.attrs.perm)
                                              : value_buffer_over(graph_, a.value, operand.data(), shape);
                view = true;
                stats.views++;
            } else if (b->kind == dsl::LogicalBuffer::Kind::InPlace) {
                storage[a.value] = value_buffer_over(graph_, a.value, storage.at(b->shares_with).data(), shape);
                stats.in_place++;
            } else {
                storage[a.value] = value_buffer_over(graph_, a.value, arena + plan.offset_of(a.value), shape);
            }
        }
        if (view) continue;  // the descriptor is the result: no kernel runs
        Call call{gi, {}, {}, {}};
        for (const auto &a : k.arguments()) {
            auto it = storage.find(a.value);
            if (it == storage.end())
                throw lower::LoweringError("group '" + k.group().name + "' reads " + a.name + " before it is computed");
            const dsl::Node &n = graph_.node(a.value);
            if (a.is_output && n.op == dsl::Op::UpdateTail) {
                // Not the cache's storage (refused in-place, or a caller's separate output buffer).
                if (it->second.data() != storage.at(n.inputs[0]).data())
                    call.copies.push_back({storage.at(n.inputs[0]), it->second});
                call.windows.push_back(tail_window(graph_, a.value, it->second, symbols));
                call.buffers.push_back(call.windows.back().raw_buffer());
                continue;
            }
            call.buffers.push_back(it->second.raw_buffer());
        }
        calls.push_back(std::move(call));
    }
    if (options.time_groups) stats.group_seconds.assign(groups_.size(), 0.0);
    auto run_call = [this, &options, &stats](const Call &c) {
        const tessel::SteadyClock::time_point t0 = tessel::SteadyClock::now();
        for (const auto &[cache, result] : c.copies) Halide::Buffer<>(result).copy_from(cache);
        run_group(c.group, c.buffers);
        if (options.time_groups) stats.group_seconds[c.group] = tessel::seconds_since(t0);
    };
    // Every descriptor exists before any kernel runs (they depend on the plan, not on results).
    const tessel::SteadyClock::time_point kernels_start = tessel::SteadyClock::now();
    if (!options.concurrent_groups || options.time_groups) {
        for (const auto &c : calls) run_call(c);
    } else {
        // Waves of groups with no dependence between them (each group one level after its
        // latest producer); the plan has no reuse between them (NoConcurrentReuse).
        std::vector<int> level(groups_.size(), 0);
        for (size_t gi = 0; gi < groups_.size(); gi++)
            for (const auto &a : groups_[gi].kernel->arguments())
                if (!a.is_output)
                    if (const int p = plan_.group_of(a.value); p >= 0 && (size_t)p != gi)
                        level[gi] = std::max(level[gi], level[p] + 1);
        std::map<int, std::vector<const Call *>> waves;
        for (const auto &c : calls) waves[level[c.group]].push_back(&c);
        for (const auto &[l, wave] : waves) {
            std::vector<std::future<void>> others;
            for (size_t i = 1; i < wave.size(); i++)
                others.push_back(std::async(std::launch::async, [&run_call, c = wave[i]] { run_call(*c); }));
            run_call(*wave[0]);
            for (auto &f : others) f.get();
            stats.waves++;
        }
    }
    stats.kernels_run = (int)calls.size();
    stats.kernel_seconds = tessel::seconds_since(kernels_start);
}

std::vector<dsl::Tensor> CompiledGraph::run(const std::map<std::string, dsl::Tensor> &inputs,
                                            const std::map<std::string, int64_t> &symbols, const ArenaOptions &options,
                                            RunStats *stats) const {
    RunStats local;
    if (recording_) {
        std::map<std::string, int64_t> binding;
        for (ValueId v : graph_.order())
            for (const auto &d : graph_.node(v).type.dims)
                if (d.kind == dsl::Dim::Kind::Symbol) binding[d.symbol] = 0;
        const std::map<std::string, int64_t> bound = runs_planned() ? bind_symbols(graph_, inputs, symbols) : symbols;
        for (auto &[sym, n] : binding)
            if (auto it = bound.find(sym); it != bound.end()) n = it->second;
        std::lock_guard<std::mutex> lock(profile_lock_);
        calls_[binding]++;
    }
    RunStats &st = stats ? *stats : local;
    st = {};
    if (runs_planned(&st.interpreted_because)) return run_planned(inputs, symbols, options, st);
    dsl::RunOptions o;
    o.symbol_sizes = symbols;
    o.external_groups = as_external_groups();
    dsl::RunResult r = dsl::interpret(graph_, inputs, o);
    st.printed = std::move(r.printed);
    return std::move(r.outputs);
}

std::string CompiledGraph::shape_profile() const {
    std::lock_guard<std::mutex> lock(profile_lock_);
    std::string out = "# calls per shape of graph " + graph_.name + " (CompiledGraph::record_shapes)\n";
    for (const auto &[binding, calls] : calls_) {
        for (const auto &[sym, n] : binding) out += sym + "=" + std::to_string(n) + " ";
        out += "calls=" + std::to_string(calls) + "\n";
    }
    return out;
}

}  // namespace tessel
