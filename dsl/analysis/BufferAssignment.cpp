#include "dsl/analysis/BufferAssignment.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "dsl/analysis/MemoryTraffic.h"
#include "dsl/ir/TypeInference.h"
#include "tessel_runtime.h"

namespace tessel::dsl {

const char *to_string(ReusePolicy p) { return p == ReusePolicy::Serial ? "serial" : "no-concurrent-reuse"; }

const char *to_string(LogicalBuffer::Kind k) {
    switch (k) {
    case LogicalBuffer::Kind::Arena: return "arena";
    case LogicalBuffer::Kind::View: return "view";
    case LogicalBuffer::Kind::InPlace: return "in-place";
    case LogicalBuffer::Kind::GraphInput: return "graph input";
    case LogicalBuffer::Kind::Prepared: return "prepared (kept between calls)";
    case LogicalBuffer::Kind::GraphOutput: return "graph output";
    }
    return "?";
}

const LogicalBuffer *BufferAssignment::buffer(ValueId v) const {
    auto it = index.find(v);
    return it == index.end() ? nullptr : &buffers[it->second];
}

int64_t BufferAssignment::offset_of(ValueId v) const {
    const LogicalBuffer *b = buffer(v);
    return b && b->allocation >= 0 ? allocations[b->allocation].offset : -1;
}

namespace {

int64_t round_up(int64_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

/** Concrete bytes of v; every dim must resolve to a static size or a bound symbol. */
int64_t concrete_bytes(const Graph &g, ValueId v, const std::map<std::string, int64_t> &symbols) {
    int64_t n = byte_size(g.node(v).type.dtype);
    for (const Dim &d0 : g.node(v).type.dims) {
        const Dim d = resolve_dim(g, d0);
        int64_t size = -1;
        if (d.is_static())
            size = d.size;
        else if (d.kind == Dim::Kind::Symbol && symbols.count(d.symbol))
            size = symbols.at(d.symbol);
        if (size <= 0)
            throw std::invalid_argument("buffer assignment: the size of %" + g.display_name(v) +
                                        " is unknown (bind every symbol)");
        if (__builtin_mul_overflow(n, size, &n))
            throw std::invalid_argument("buffer assignment: %" + g.display_name(v) + " has more bytes than int64 holds");
    }
    return n;
}

/** Which groups depend on which: ancestors[j] holds every group j (transitively) reads from,
 * as bits (groups^2 / 8 bytes). Beyond kMaxOrderedGroups it is not built (`exact` false) and
 * reaches() answers conservatively: no two distinct groups are known to be ordered. */
struct GroupOrder {
    bool exact = true;
    std::vector<std::vector<uint64_t>> ancestors;
    bool reaches(int from, int to) const {  // from == to, or `to` depends on `from`
        return from == to || (exact && (ancestors[to][from / 64] >> (from % 64) & 1));
    }
};

/** What the plan reads: per group, the values it takes from outside. */
struct PlanFacts {
    std::vector<std::vector<ValueId>> reads;                ///< per group, distinct, program order
    std::unordered_map<ValueId, int> producer;              ///< group output -> group
    std::unordered_set<ValueId> read_outside_kernels;       ///< read by effects or shape code
    std::unordered_map<ValueId, std::vector<int>> readers;  ///< value -> steps reading it, ascending
    GroupOrder order;
};

PlanFacts plan_facts(const Graph &g, const FusionPlan &plan) {
    PlanFacts f;
    const int n = (int)plan.groups.size();
    f.reads.resize(n);
    for (int i = 0; i < n; i++)
        for (ValueId v : plan.groups[i].outputs) f.producer[v] = i;
    for (int i = 0; i < n; i++) {
        const std::unordered_set<ValueId> members(plan.groups[i].nodes.begin(), plan.groups[i].nodes.end());
        std::unordered_set<ValueId> seen;
        for (ValueId m : plan.groups[i].nodes)
            for (ValueId in : g.node(m).inputs)
                if (!members.count(in) && seen.insert(in).second) f.reads[i].push_back(in);
    }
    for (int i = 0; i < n; i++)
        for (ValueId v : f.reads[i]) f.readers[v].push_back(i);
    for (ValueId op : plan.outside_kernels) for_each_dependency(g.node(op), [&](ValueId v) { f.read_outside_kernels.insert(v); });
    f.order.exact = n <= kMaxOrderedGroups;
    if (!f.order.exact) return f;
    f.order.ancestors.assign(n, std::vector<uint64_t>((n + 63) / 64, 0));
    for (int j = 0; j < n; j++)
        for (ValueId v : f.reads[j]) {
            auto it = f.producer.find(v);
            if (it == f.producer.end()) continue;
            const int i = it->second;
            for (size_t w = 0; w < f.order.ancestors[j].size(); w++) f.order.ancestors[j][w] |= f.order.ancestors[i][w];
            f.order.ancestors[j][i / 64] |= uint64_t(1) << (i % 64);
        }
    return f;
}

bool is_pointwise(const Node &n) {
    const IterSpace s = n.info().iter_space;
    return s == IterSpace::Elementwise || s == IterSpace::Broadcast || n.op == Op::Constant;
}

class Planner {
public:
    Planner(const Graph &g, const FusionPlan &plan, const std::map<std::string, int64_t> &symbols,
            const BufferAssignmentOptions &o)
        : g_(g), plan_(plan), o_(o), facts_(plan_facts(g, plan)) {
        a_.policy = o.policy;
        a_.steps = (int)plan.groups.size();
        make_buffers(symbols);
        if (o_.views) decide_views();
        index_classes();
        if (o_.in_place) decide_cache_writes();
        if (o_.in_place) decide_in_place();
        make_allocations();
        a_.live_bytes.assign(a_.steps, 0);
        for (const auto &al : a_.allocations)
            for (int s = al.first_step; s <= al.last_step; s++) a_.live_bytes[s] += al.bytes;
        for (int64_t b : a_.live_bytes) a_.lower_bound = std::max(a_.lower_bound, b);
        pack();
    }
    BufferAssignment result() && {
        for (size_t i = 0; i < a_.buffers.size(); i++) a_.index[a_.buffers[i].value] = i;
        return std::move(a_);
    }

private:
    const Graph &g_;
    const FusionPlan &plan_;
    const BufferAssignmentOptions &o_;
    PlanFacts facts_;
    BufferAssignment a_;
    std::unordered_map<ValueId, size_t> index_;                      ///< value -> buffers index
    std::vector<size_t> root_;                                       ///< per buffer: the buffer whose storage it uses
    std::unordered_map<size_t, std::vector<size_t>> class_members_;  ///< root -> buffers sharing it
    std::unordered_map<size_t, int> class_last_;                     ///< root -> last step any member is read

    size_t root(size_t b) const { return root_[b] == b ? b : root(root_[b]); }
    LogicalBuffer &buf(ValueId v) { return a_.buffers[index_.at(v)]; }
    std::string name(ValueId v) const { return "%" + g_.display_name(v); }

    void make_buffers(const std::map<std::string, int64_t> &symbols) {
        auto add = [&](ValueId v, LogicalBuffer::Kind kind, int def) {
            LogicalBuffer b;
            b.value = v;
            b.kind = kind;
            b.bytes = concrete_bytes(g_, v, symbols);
            b.def_step = b.last_use_step = def;
            index_[v] = a_.buffers.size();
            a_.buffers.push_back(b);
            root_.push_back(root_.size());
        };
        // Graph inputs read by kernels first (the caller's storage; live ranges are their readers').
        for (int i = 0; i < a_.steps; i++)
            for (ValueId v : facts_.reads[i])
                if (g_.node(v).op == Op::Input && !index_.count(v)) add(v, LogicalBuffer::Kind::GraphInput, 0);
        for (int i = 0; i < a_.steps; i++)
            for (ValueId v : plan_.groups[i].outputs)
                add(v,
                    g_.is_output(v)                                ? LogicalBuffer::Kind::GraphOutput
                    : o_.prepared_kept && plan_.groups[i].prepared ? LogicalBuffer::Kind::Prepared
                                                                   : LogicalBuffer::Kind::Arena,
                    i);
        for (int j = 0; j < a_.steps; j++)
            for (ValueId v : facts_.reads[j])
                if (index_.count(v)) {
                    LogicalBuffer &b = buf(v);
                    b.last_use_step = std::max(b.last_use_step, j);
                }
        for (auto &b : a_.buffers) {
            if (facts_.read_outside_kernels.count(b.value)) b.last_use_step = std::max(0, a_.steps - 1);
            if (b.kind == LogicalBuffer::Kind::Arena) a_.naive_bytes += round_up(b.bytes);
        }
    }

    bool dense(size_t b) const {
        for (size_t x = b;; x = root_[x]) {
            if (a_.buffers[x].strided) return false;
            if (root_[x] == x) return true;
        }
    }

    void record(int group, ValueId result, ValueId operand, const char *rule, bool applied, std::string reason) {
        a_.decisions.push_back({group, result, operand, applied, rule, std::move(reason)});
    }

    /** A single reshape or transpose of one operand becomes a view of the operand's storage. */
    void decide_views() {
        for (int i = 0; i < a_.steps; i++) {
            const FusionGroup &fg = plan_.groups[i];
            if (fg.nodes.size() != 1 || fg.outputs.size() != 1 || (o_.prepared_kept && fg.prepared)) continue;
            const Node &n = g_.node(fg.nodes[0]);
            if (n.op != Op::Reshape && n.op != Op::Transpose) continue;
            const ValueId result = fg.outputs[0], operand = n.inputs[0];
            if (!index_.count(operand)) continue;
            if (g_.is_output(result)) {
                record(i, result, operand, "view", false,
                       name(result) + " is a graph output: the kernel writes the caller's dense buffer");
                continue;
            }
            const size_t ob = index_.at(operand);
            const Layout &ol = g_.node(operand).layout, &rl = g_.node(result).layout;
            if (n.op == Op::Transpose && (!rl.empty() || !ol.empty()) && rl == transposed_layout(ol, n.attrs.perm)) {
                if (!dense(ob)) {
                    record(i, result, operand, "view", false,
                           name(operand) + " is a strided view: a bitcast of it would not be dense");
                    continue;
                }
                LogicalBuffer &rb = buf(result);
                rb.kind = LogicalBuffer::Kind::View;
                rb.shares_with = operand;
                root_[index_.at(result)] = ob;
                record(i, result, operand, "view", true,
                       "the layout " + layout_name(rl) + " keeps every element where " + name(operand) +
                           " is stored: a bitcast, no kernel runs");
                continue;
            }
            if (!ol.empty() || !rl.empty()) {
                record(i, result, operand, "view", false,
                       "laid out (" + name(operand) + " " + layout_name(ol) + ", " + name(result) + " " + layout_name(rl) +
                           "): the " + to_string(n.op) + " moves elements, so it is a copy kernel");
                continue;
            }
            if (n.op == Op::Transpose && n.attrs.perm.back() != (int64_t)n.attrs.perm.size() - 1) {
                record(i, result, operand, "view", false,
                       "transpose moves the innermost axis: kernels read inputs with unit innermost stride (dense "
                       "vector loads), so it is a copy kernel");
                continue;
            }
            if (n.op == Op::Reshape && !dense(ob)) {
                record(i, result, operand, "view", false,
                       "reshape of " + name(operand) + ", a strided view: its row-major bytes are not contiguous");
                continue;
            }
            LogicalBuffer &rb = buf(result);
            rb.kind = LogicalBuffer::Kind::View;
            rb.shares_with = operand;
            rb.strided = n.op == Op::Transpose;
            root_[index_.at(result)] = ob;
            record(i, result, operand, "view", true,
                   n.op == Op::Reshape ? "whole-tensor reshape: the same row-major bytes, no kernel runs"
                                       : "transpose of the outer axes read through permuted strides, no kernel runs");
        }
    }

    /** Last step at which any buffer sharing b's storage is read (kept per class root). */
    int class_last_use(size_t b) const { return class_last_.at(root(b)); }

    /** Per class root: its members and last use, after the views are decided. */
    void index_classes() {
        for (size_t b = 0; b < a_.buffers.size(); b++) {
            const size_t r = root(b);
            class_members_[r].push_back(b);
            class_last_[r] = std::max(class_last_.count(r) ? class_last_[r] : 0, a_.buffers[b].last_use_step);
        }
    }

    /** Result buffer `b` joins the storage class of `into`. */
    void join_class(size_t b, size_t into) {
        const size_t r = root(into);
        root_[b] = into;
        for (size_t m : class_members_[b]) class_members_[r].push_back(m);
        class_members_.erase(b);
        class_last_[r] = std::max(class_last_[r], class_last_[b]);
        class_last_.erase(b);
    }

    static std::string layout_name(const Layout &l) { return l.empty() ? "row_major" : to_string(l); }

    /** Why group i's result `result` may not take operand v's storage (an in-place update or a
     * cache write overwrites it); "" when it may. */
    std::string overwrite_refusal(int i, ValueId result, ValueId v) {
        const size_t vb = index_.at(v);
        const LogicalBuffer &in = a_.buffers[vb];
        if (!(g_.node(v).layout == g_.node(result).layout))
            return name(v) + " is stored in layout " + layout_name(g_.node(v).layout) + " and the output in " +
                   layout_name(g_.node(result).layout) + ": an element's place differs";
        if (in.kind == LogicalBuffer::Kind::GraphInput && !o_.donated_inputs.count(g_.display_name(v)))
            return name(v) + " is a graph input the caller did not donate";
        if (in.kind == LogicalBuffer::Kind::Prepared) return name(v) + " is prepared from weights and kept for later calls";
        if (a_.buffers[root(vb)].kind == LogicalBuffer::Kind::GraphOutput || g_.is_output(v))
            return name(v) + " is (a view of) a graph output";
        if (!dense(vb)) return name(v) + " is a strided view: the output is written densely";
        if (class_last_use(vb) > i)
            return name(v) + " (or a view of its storage) is read again at step " + std::to_string(class_last_use(vb)) +
                   ", after this group overwrites it";
        if (facts_.read_outside_kernels.count(v)) return name(v) + " is read by an op outside kernels";
        // The group itself reads another value of v's storage (a view): it would see overwritten elements.
        for (ValueId w : facts_.reads[i])
            if (w != v && index_.count(w) && root(index_.at(w)) == root(vb))
                return "the group also reads " + name(w) + ", which shares " + name(v) + "'s storage";
        // A reader the dependence graph does not order before this group may run at the same
        // time as it, and would see overwritten elements.
        if (o_.policy == ReusePolicy::NoConcurrentReuse)
            for (size_t m : class_members_.at(root(vb)))
                if (auto it = facts_.readers.find(a_.buffers[m].value); it != facts_.readers.end())
                    for (int j : it->second)
                        if (j != i && !facts_.order.reaches(j, i))
                            return name(v) + " is also read by step " + std::to_string(j) +
                                   ", which may run concurrently with this one";
        return "";
    }

    /** Cache writes (update_tail) take their cache's storage where legal; else the runner copies
     * the cache into the result before the kernel writes the tail. */
    void decide_cache_writes() {
        for (int i = 0; i < a_.steps; i++)
            for (ValueId result : plan_.groups[i].outputs) {
                const Node &n = g_.node(result);
                if (n.op != Op::UpdateTail) continue;
                const ValueId cache = n.inputs[0];
                const std::string why =
                    index_.count(cache) ? overwrite_refusal(i, result, cache) : name(cache) + " is not a kernel value";
                if (!why.empty()) {
                    record(i, result, cache, "cache-write", false, why);
                    continue;
                }
                LogicalBuffer &rb = buf(result);
                rb.kind = LogicalBuffer::Kind::InPlace;
                rb.shares_with = cache;
                join_class(index_.at(result), index_.at(cache));
                record(i, result, cache, "cache-write", true,
                       name(cache) + " dies here: the kernel writes the new positions into its storage, nothing is copied");
            }
    }

    void decide_in_place() {
        for (int i = 0; i < a_.steps; i++) {
            const FusionGroup &fg = plan_.groups[i];
            if (fg.kind != GroupKind::Elementwise || fg.outputs.empty() || (o_.prepared_kept && fg.prepared)) continue;
            if (g_.node(fg.outputs[0]).op == Op::UpdateTail) continue;  // decide_cache_writes
            if (a_.buffers[index_.at(fg.outputs[0])].kind == LogicalBuffer::Kind::View) continue;
            const ValueId result = fg.outputs[0];
            const TensorType &rt = g_.node(result).type;
            std::vector<ValueId> candidates;
            for (ValueId v : facts_.reads[i])
                // The same type, dims compared as written: the decision then holds for every
                // binding of the symbols (a generated library plans once for all sizes).
                if (index_.count(v) && same_type(g_, g_.node(v).type, rt) && buf(v).bytes == buf(result).bytes)
                    candidates.push_back(v);
            if (candidates.empty()) continue;
            auto refuse_all = [&](const std::string &why) {
                for (ValueId v : candidates) record(i, result, v, "in-place", false, why);
            };
            if (fg.outputs.size() != 1) {
                refuse_all("the group writes " + std::to_string(fg.outputs.size()) +
                           " outputs one after another: a later one would read overwritten elements");
                continue;
            }
            if (g_.is_output(result)) {
                refuse_all(name(result) + " is a graph output: the kernel writes the caller's buffer");
                continue;
            }
            const Node *not_pointwise = nullptr;
            for (ValueId m : fg.nodes)
                if (!is_pointwise(g_.node(m))) not_pointwise = &g_.node(m);
            if (not_pointwise) {
                refuse_all(std::string("member ") + name(not_pointwise->id) + " (" + to_string(not_pointwise->op) +
                           ") reads its operand at other indices than the output's");
                continue;
            }
            std::string schedule_why;
            if (o_.schedule_reads_before_writes && !o_.schedule_reads_before_writes(i, &schedule_why)) {
                refuse_all("the schedule may overwrite an element before reading it: " + schedule_why);
                continue;
            }
            bool done = false;
            for (ValueId v : candidates) {
                const size_t vb = index_.at(v);
                const std::string why = done ? "the output already writes into another input" : overwrite_refusal(i, result, v);
                if (!why.empty()) {
                    record(i, result, v, "in-place", false, why);
                    continue;
                }
                LogicalBuffer &rb = buf(result);
                rb.kind = LogicalBuffer::Kind::InPlace;
                rb.shares_with = v;
                join_class(index_.at(result), vb);
                record(i, result, v, "in-place", true,
                       name(v) + " dies here with the output's shape and dtype; each element is read before it is written");
                done = true;
            }
        }
    }

    void make_allocations() {
        std::map<size_t, int> of_root;
        for (size_t b = 0; b < a_.buffers.size(); b++) {
            const size_t r = root(b);
            if (a_.buffers[r].kind != LogicalBuffer::Kind::Arena) continue;  // caller's storage
            auto [it, fresh] = of_root.emplace(r, (int)a_.allocations.size());
            if (fresh) {
                Allocation al;
                al.bytes = round_up(a_.buffers[r].bytes);
                al.first_step = a_.buffers[r].def_step;
                al.last_step = a_.buffers[r].last_use_step;
                al.values.push_back(a_.buffers[r].value);
                a_.allocations.push_back(al);
            }
            Allocation &al = a_.allocations[it->second];
            if (b != r) al.values.push_back(a_.buffers[b].value);
            al.last_step = std::max(al.last_step, a_.buffers[b].last_use_step);
            a_.buffers[b].allocation = it->second;
        }
    }

    /** Groups that write or read allocation `al`'s storage. */
    std::vector<int> touching_groups(const Allocation &al) const {
        std::set<int> t;
        for (ValueId v : al.values) {
            t.insert(a_.buffers[index_.at(v)].def_step);
            if (auto it = facts_.readers.find(v); it != facts_.readers.end()) t.insert(it->second.begin(), it->second.end());
        }
        return {t.begin(), t.end()};
    }

    /** Whether a and b may not share bytes under the policy. */
    bool conflict(size_t a, size_t b, const std::vector<std::vector<int>> &touching) const {
        const Allocation &x = a_.allocations[a], &y = a_.allocations[b];
        if (x.first_step <= y.last_step && y.first_step <= x.last_step) return true;
        if (o_.policy == ReusePolicy::Serial) return false;
        const size_t early = x.last_step < y.first_step ? a : b, late = early == a ? b : a;
        const int writer = a_.allocations[late].first_step;
        for (int t : touching[early])
            if (!facts_.order.reaches(t, writer)) return true;
        return false;
    }

    /** Large plans: allocations by first step, each into the best-fitting free range released by
     * allocations that died before it (coalesced), else on top. Serial policy only;
     * under NoConcurrentReuse without an exact group order, no reuse at all. */
    void pack_linear_scan() {
        const size_t n = a_.allocations.size();
        std::vector<size_t> order(n);
        std::iota(order.begin(), order.end(), 0);
        auto &al = a_.allocations;
        std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return al[x].first_step < al[y].first_step; });
        const bool reuse = o_.policy == ReusePolicy::Serial;
        std::map<int64_t, int64_t> free_ranges;  // offset -> bytes
        std::multimap<int, size_t> live;         // last step -> allocation
        int64_t top = 0;
        for (size_t cur : order) {
            while (reuse && !live.empty() && live.begin()->first < al[cur].first_step) {
                const Allocation &dead = al[live.begin()->second];
                auto it = free_ranges.emplace(dead.offset, dead.bytes).first;
                if (auto next = std::next(it); next != free_ranges.end() && it->first + it->second == next->first) {
                    it->second += next->second;
                    free_ranges.erase(next);
                }
                if (it != free_ranges.begin())
                    if (auto prev = std::prev(it); prev->first + prev->second == it->first) {
                        prev->second += it->second;
                        free_ranges.erase(it);
                    }
                live.erase(live.begin());
            }
            auto best = free_ranges.end();
            for (auto it = free_ranges.begin(); it != free_ranges.end(); ++it)
                if (it->second >= al[cur].bytes && (best == free_ranges.end() || it->second < best->second)) best = it;
            if (best != free_ranges.end()) {
                al[cur].offset = best->first;
                if (best->second > al[cur].bytes) free_ranges.emplace(best->first + al[cur].bytes, best->second - al[cur].bytes);
                free_ranges.erase(best);
            } else {
                al[cur].offset = top;
                top += al[cur].bytes;
            }
            live.emplace(al[cur].last_step, cur);
            a_.planned_peak = std::max(a_.planned_peak, al[cur].offset + al[cur].bytes);
        }
        a_.notes.push_back(std::to_string(n) + " allocations > " + std::to_string(kMaxBestFitAllocations) +
                           ": packed by linear scan in first-step order; orderings added by reuse not listed");
    }

    void pack() {
        const size_t n = a_.allocations.size();
        if (n > kMaxBestFitAllocations || !facts_.order.exact) {
            if (!facts_.order.exact)
                a_.notes.push_back(std::to_string(a_.steps) + " groups > " + std::to_string(kMaxOrderedGroups) +
                                   ": dependences not tracked, so no two groups count as ordered");
            pack_linear_scan();
            return;
        }
        std::vector<std::vector<int>> touching(n);
        for (size_t i = 0; i < n; i++) touching[i] = touching_groups(a_.allocations[i]);
        // Best fit in three orders, the lowest peak kept: the runtime's packer (runtime/tessel_pack.c),
        // the same code a generated library packs its workspace with on every call.
        std::vector<unsigned char> conflicts(n * n, 0);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < i; j++) conflicts[i * n + j] = conflicts[j * n + i] = conflict(i, j, touching);
        std::vector<int64_t> bytes(n), offsets(n);
        std::vector<int> first(n), last(n);
        for (size_t i = 0; i < n; i++) {
            bytes[i] = a_.allocations[i].bytes;
            first[i] = a_.allocations[i].first_step;
            last[i] = a_.allocations[i].last_step;
        }
        std::vector<int64_t> scratch(TESSEL_PACK_SCRATCH_BYTES(n) / sizeof(int64_t) + 1);
        a_.planned_peak =
            tessel_pack((int)n, bytes.data(), first.data(), last.data(), conflicts.data(), offsets.data(), scratch.data());
        for (size_t i = 0; i < n; i++) a_.allocations[i].offset = offsets[i];
        a_.conflicts = std::move(conflicts);
        if (o_.policy == ReusePolicy::Serial) list_added_edges(touching);
    }

    void list_added_edges(const std::vector<std::vector<int>> &touching) {
        std::set<std::pair<int, int>> seen;
        for (size_t x = 0; x < a_.allocations.size(); x++)
            for (size_t y = 0; y < a_.allocations.size(); y++) {
                const Allocation &p = a_.allocations[x], &q = a_.allocations[y];
                if (!(p.last_step < q.first_step) || p.offset >= q.offset + q.bytes || q.offset >= p.offset + p.bytes) continue;
                for (int t : touching[x])
                    if (!facts_.order.reaches(t, q.first_step) && seen.insert({t, q.first_step}).second)
                        a_.added_edges.push_back(
                            {t, q.first_step, name(p.values[0]) + "'s memory is reused by " + name(q.values[0])});
            }
    }
};

}  // namespace

BufferAssignment assign_buffers(const Graph &g, const FusionPlan &plan, const std::map<std::string, int64_t> &symbols,
                                const BufferAssignmentOptions &options) {
    return Planner(g, plan, symbols, options).result();
}

std::vector<std::string> check_no_overlap(const BufferAssignment &a, const FusionPlan &plan, const Graph &g) {
    std::vector<std::string> problems;
    const PlanFacts facts = plan_facts(g, plan);
    auto touches = [&](const Allocation &al) {
        std::set<int> t;
        for (ValueId v : al.values) {
            for (const auto &[value, group] : facts.producer)
                if (value == v) t.insert(group);
            for (size_t j = 0; j < facts.reads.size(); j++)
                for (ValueId r : facts.reads[j])
                    if (r == v) t.insert((int)j);
        }
        return t;
    };
    for (size_t x = 0; x < a.allocations.size(); x++) {
        const Allocation &p = a.allocations[x];
        if (p.offset < 0 || p.offset % kArenaAlignment || p.offset + p.bytes > a.planned_peak)
            problems.push_back("allocation of %" + g.display_name(p.values[0]) + " lies outside the arena or is misaligned");
        const std::set<int> tp = touches(p);
        for (size_t y = x + 1; y < a.allocations.size(); y++) {
            const Allocation &q = a.allocations[y];
            if (p.offset >= q.offset + q.bytes || q.offset >= p.offset + p.bytes) continue;
            // Recompute lifetimes from the groups that touch each allocation, not from the plan's fields.
            const std::set<int> tq = touches(q);
            const int p0 = *tp.begin(), p1 = *tp.rbegin(), q0 = *tq.begin(), q1 = *tq.rbegin();
            bool clash = p0 <= q1 && q0 <= p1;
            if (!clash && a.policy == ReusePolicy::NoConcurrentReuse) {
                const std::set<int> &early = p1 < q0 ? tp : tq;
                const int writer = p1 < q0 ? q0 : p0;
                for (int t : early)
                    if (!facts.order.reaches(t, writer)) clash = true;
            }
            if (clash)
                problems.push_back("%" + g.display_name(p.values[0]) + " and %" + g.display_name(q.values[0]) +
                                   " share arena bytes while both are live (steps " + std::to_string(p0) + "-" +
                                   std::to_string(p1) + " and " + std::to_string(q0) + "-" + std::to_string(q1) + ")");
        }
    }
    return problems;
}

std::string BufferAssignment::to_string(const Graph &g) const {
    std::ostringstream os;
    os << "memory plan (" << dsl::to_string(policy) << " reuse, " << steps << " steps):\n";
    os << "  naive " << format_bytes(naive_bytes) << ", planned peak " << format_bytes(planned_peak) << ", lower bound "
       << format_bytes(lower_bound);
    if (lower_bound) os << " (planned / bound = " << (double)((int64_t)(quality() * 1000 + 0.5)) / 1000 << ")";
    os << "\n  buffer            bytes        live     offset  storage\n";
    for (const auto &b : buffers) {
        std::string nm = "%" + g.display_name(b.value);
        os << "  " << nm << std::string(nm.size() < 16 ? 16 - nm.size() : 1, ' ');
        std::string bytes = format_bytes(b.bytes);
        os << std::string(bytes.size() < 10 ? 10 - bytes.size() : 1, ' ') << bytes;
        std::string live = std::to_string(b.def_step) + "-" + std::to_string(b.last_use_step);
        os << std::string(live.size() < 10 ? 10 - live.size() : 1, ' ') << live;
        std::string off = b.allocation >= 0 ? std::to_string(allocations[b.allocation].offset) : "-";
        os << std::string(off.size() < 11 ? 11 - off.size() : 1, ' ') << off << "  " << dsl::to_string(b.kind);
        if (b.shares_with != kNoValue) os << " of %" << g.display_name(b.shares_with) << (b.strided ? " (strided)" : "");
        os << "\n";
    }
    if (!decisions.empty()) os << "  aliasing:\n";
    for (const auto &d : decisions)
        os << "    [" << (d.applied ? "yes" : "no") << "] " << d.rule << " %" << g.display_name(d.result) << " <- %"
           << g.display_name(d.operand) << ": " << d.reason
           << (d.rule == "cache-write" && !d.applied ? "; the cache is copied into %" + g.display_name(d.result) + " first" : "")
           << "\n";
    for (const auto &n : notes) os << "  note: " << n << "\n";
    if (!added_edges.empty()) os << "  orderings added by reuse:\n";
    for (const auto &e : added_edges) os << "    step " << e.before << " before step " << e.after << ": " << e.why << "\n";
    return os.str();
}

}  // namespace tessel::dsl
