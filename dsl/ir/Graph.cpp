#include "dsl/ir/Graph.h"

#include <stdexcept>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>

namespace tessel::dsl {

const char *to_string(NumericMode mode) {
    switch (mode) {
    case NumericMode::Exact: return "exact";
    case NumericMode::Strict: return "strict";
    case NumericMode::Fast: return "fast";
    }
    return "?";
}

NumericMode parse_numeric_mode(const std::string &text) {
    for (NumericMode m : {NumericMode::Exact, NumericMode::Strict, NumericMode::Fast})
        if (text == to_string(m)) return m;
    throw std::invalid_argument("unknown numeric mode '" + text + "' (expected 'exact', 'strict' or 'fast')");
}

namespace {

const std::vector<OpInfo> &table() {
    static const std::vector<OpInfo> t = {
#define DSL_OP(e, s, ar, res, eff, it, attrs) OpInfo{Op::e, s, ar, res, Effect::eff, IterSpace::it, attrs},
#include "dsl/ir/OpKinds.def"
#undef DSL_OP
    };
    return t;
}

bool same_bits(const std::vector<double> &a, const std::vector<double> &b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

}  // namespace

const OpInfo &op_info(Op op) { return table()[(size_t)op]; }
const char *to_string(Op op) { return op_info(op).name; }
const std::vector<OpInfo> &all_ops() { return table(); }

bool parse_op(const std::string &name, Op *out) {
    for (const OpInfo &i : table())
        if (name == i.name) {
            *out = i.op;
            return true;
        }
    return false;
}

const char *to_string(Effect e) {
    switch (e) {
    case Effect::Pure: return "pure";
    case Effect::ReadsState: return "reads-state";
    case Effect::WritesState: return "writes-state";
    case Effect::Random: return "random";
    case Effect::Observable: return "observable";
    }
    return "?";
}

const char *to_string(IterSpace s) {
    switch (s) {
    case IterSpace::Elementwise: return "elementwise";
    case IterSpace::Broadcast: return "broadcast";
    case IterSpace::Reduction: return "reduction";
    case IterSpace::Contraction: return "contraction";
    case IterSpace::Permutation: return "permutation";
    case IterSpace::Opaque: return "opaque";
    }
    return "?";
}

bool Attrs::operator==(const Attrs &o) const {
    return same_bits(value, o.value) && axis == o.axis && axes == o.axes && keepdims == o.keepdims && start == o.start &&
           repeats == o.repeats &&
           perm == o.perm && seed == o.seed && var == o.var && text == o.text && weight == o.weight;
}

Graph::Graph(const Graph &o) { *this = o; }
Graph::Graph(Graph &&o) noexcept { *this = std::move(o); }

Graph &Graph::operator=(const Graph &o) {
    if (this == &o) return *this;
    o.flush_touched();
    name = o.name, mode = o.mode, source = o.source, outputs = o.outputs, output_names = o.output_names;
    nodes_ = o.nodes_, erased_ = o.erased_, next_ = o.next_, prev_ = o.prev_;
    head_ = o.head_, tail_ = o.tail_, live_ = o.live_, by_name_ = o.by_name_, may_use_ = o.may_use_;
    touched_.clear();
    is_touched_.assign(nodes_.size(), 0);
    order_dirty_ = true;
    return *this;
}

Graph &Graph::operator=(Graph &&o) noexcept {
    if (this == &o) return *this;
    name = std::move(o.name), mode = o.mode, source = std::move(o.source);
    outputs = std::move(o.outputs), output_names = std::move(o.output_names);
    nodes_ = std::move(o.nodes_), erased_ = std::move(o.erased_), next_ = std::move(o.next_);
    prev_ = std::move(o.prev_), head_ = o.head_, tail_ = o.tail_, live_ = o.live_, by_name_ = std::move(o.by_name_);
    may_use_ = std::move(o.may_use_), touched_ = std::move(o.touched_), is_touched_ = std::move(o.is_touched_);
    order_dirty_ = true;
    o.head_ = o.tail_ = kNoValue;
    o.live_ = 0;
    o.order_dirty_ = true;
    return *this;
}

void Graph::fix_name(Node &n) const {
    // An unnamed node prints as %<id>; if a named node already took that spelling, pick another.
    if (!n.name.empty()) return;
    std::string s = std::to_string(n.id);
    if (find(s) == kNoValue) return;
    std::string alt = "_" + s;
    while (find(alt) != kNoValue) alt = "_" + alt;
    n.name = alt;
}

void Graph::index_name(ValueId id) { by_name_[display_name(id)].push_back(id); }

void Graph::unindex_name(ValueId id) {
    auto it = by_name_.find(display_name(id));
    if (it == by_name_.end()) return;
    auto &ids = it->second;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (ids.empty()) by_name_.erase(it);
}

void Graph::set_name(ValueId id, const std::string &new_name) {
    Node &n = node(id);
    unindex_name(id);
    n.name = new_name;
    index_name(id);
}

void Graph::respell_unnamed(ValueId id) {
    std::string alt = "_" + std::to_string(id);
    set_name(id, alt);
    while (find(alt) != id) set_name(id, alt = "_" + alt);
}

void Graph::note_uses(ValueId user) {
    for_each_dependency(nodes_[user], [&](ValueId v) {
        if (v >= may_use_.size()) return;  // a dangling reference; the verifier reports it
        auto &u = may_use_[v];
        if (u.empty() || u.back() != user) u.push_back(user);
    });
}

void Graph::flush_touched() const {
    // Const readers (users(), replace_all_uses on a copy) may run on several threads: one lock for
    // all graphs, since flushes are short and rare after construction.
    static std::mutex flush_mutex;
    std::lock_guard<std::mutex> lock(flush_mutex);
    for (ValueId id : touched_) {
        is_touched_[id] = 0;
        if (contains(id)) const_cast<Graph *>(this)->note_uses(id);
    }
    touched_.clear();
}

void Graph::link_before(ValueId pos, ValueId id) {
    // pos == kNoValue appends.
    ValueId before = pos == kNoValue ? tail_ : prev_[pos];
    prev_[id] = before;
    next_[id] = pos;
    if (before == kNoValue)
        head_ = id;
    else
        next_[before] = id;
    if (pos == kNoValue)
        tail_ = id;
    else
        prev_[pos] = id;
    order_dirty_ = true;
}

ValueId Graph::add(Node n) { return insert_before(kNoValue, std::move(n)); }

ValueId Graph::insert_before(ValueId pos, Node n) {
    if (pos != kNoValue && !contains(pos)) throw InternalError("value " + std::to_string(pos) + " is not in program order");
    n.id = (ValueId)nodes_.size();
    fix_name(n);
    nodes_.push_back(std::move(n));
    erased_.push_back(0);
    next_.push_back(kNoValue);
    prev_.push_back(kNoValue);
    may_use_.emplace_back();
    is_touched_.push_back(0);
    const ValueId id = nodes_.back().id;
    link_before(pos, id);
    ++live_;
    index_name(id);
    note_uses(id);
    return id;
}

void Graph::erase(ValueId id) {
    if (!contains(id)) throw InternalError("value " + std::to_string(id) + " is not in program order");
    unindex_name(id);
    const ValueId p = prev_[id], nx = next_[id];
    if (p == kNoValue)
        head_ = nx;
    else
        next_[p] = nx;
    if (nx == kNoValue)
        tail_ = p;
    else
        prev_[nx] = p;
    erased_[id] = 1;
    --live_;
    order_dirty_ = true;
}

bool Graph::contains(ValueId id) const { return id < nodes_.size() && !erased_[id]; }

Node &Graph::node(ValueId id) {
    if (!contains(id)) throw InternalError("graph has no value with id " + std::to_string(id));
    // The caller may change its operands or dims: the user index looks at it again before use.
    if (!is_touched_[id]) is_touched_[id] = 1, touched_.push_back(id);
    return nodes_[id];
}

const Node &Graph::node(ValueId id) const {
    if (!contains(id)) throw InternalError("graph has no value with id " + std::to_string(id));
    return nodes_[id];
}

void Graph::rebuild_order() const {
    if (!order_dirty_.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lock(order_mutex_);
    if (!order_dirty_.load(std::memory_order_relaxed)) return;
    order_.clear();
    pos_.assign(nodes_.size(), SIZE_MAX);
    for (ValueId v = head_; v != kNoValue; v = next_[v]) {
        pos_[v] = order_.size();
        order_.push_back(v);
    }
    order_dirty_.store(false, std::memory_order_release);
}

const std::vector<ValueId> &Graph::order() const {
    rebuild_order();
    return order_;
}

size_t Graph::position(ValueId id) const {
    rebuild_order();
    if (!contains(id) || pos_[id] == SIZE_MAX) throw InternalError("value " + std::to_string(id) + " is not in program order");
    return pos_[id];
}

std::string Graph::output_name(size_t i) const {
    if (i < output_names.size() && !output_names[i].empty()) return output_names[i];
    return display_name(outputs.at(i));
}

void Graph::set_output_name(size_t i, const std::string &name) {
    const bool own = name.empty() || name == display_name(outputs.at(i));
    if (own && i >= output_names.size()) return;
    if (output_names.size() <= i) output_names.resize(i + 1);
    output_names[i] = own ? std::string() : name;
    while (!output_names.empty() && output_names.back().empty()) output_names.pop_back();
}

void Graph::add_output(ValueId v, const std::string &name) {
    outputs.push_back(v);
    set_output_name(outputs.size() - 1, name);
}

int Graph::replace_all_uses(ValueId from, ValueId to) {
    // Output names are the interface: remember those of outputs holding `from` or `to` (the
    // only values whose names may move) and rebind any that would change.
    std::vector<std::pair<size_t, std::string>> interface;
    for (size_t i = 0; i < outputs.size(); ++i)
        if (outputs[i] == from || outputs[i] == to) interface.emplace_back(i, output_name(i));
    flush_touched();
    int changed = 0;
    if (from < may_use_.size()) {
        std::vector<ValueId> candidates = std::move(may_use_[from]);
        may_use_[from].clear();
        for (ValueId id : candidates) {
            if (!contains(id)) continue;
            Node &n = nodes_[id];
            int here = 0;
            for (ValueId &v : n.inputs)
                if (v == from) v = to, ++here;
            for (Dim &d : n.type.dims)
                if (d.kind == Dim::Kind::Value && d.value == from) d.value = to, ++here;
            changed += here;
            if (here && to < may_use_.size()) {
                auto &u = may_use_[to];
                if (u.empty() || u.back() != id) u.push_back(id);
            }
        }
    }
    for (ValueId &v : outputs)
        if (v == from) v = to, ++changed;
    if (contains(from) && contains(to)) {
        Node &f = nodes_[from], &t = nodes_[to];
        if (t.name.empty() && !f.name.empty()) {
            const std::string moved = f.name;
            set_name(from, "");
            set_name(to, moved);
            Node fixed = f;
            fix_name(fixed);
            if (fixed.name != f.name) set_name(from, fixed.name);
        }
    }
    for (const auto &[i, name] : interface) set_output_name(i, name);
    return changed;
}

std::vector<ValueId> Graph::users(ValueId id) const {
    flush_touched();
    std::vector<ValueId> r;
    if (id >= may_use_.size()) return r;
    for (ValueId u : may_use_[id]) {
        if (!contains(u)) continue;
        bool uses = false;
        for_each_dependency(nodes_[u], [&](ValueId v) { uses |= (v == id); });
        if (uses) r.push_back(u);
    }
    std::sort(r.begin(), r.end(), [&](ValueId a, ValueId b) { return position(a) < position(b); });
    r.erase(std::unique(r.begin(), r.end()), r.end());
    return r;
}

bool Graph::is_output(ValueId id) const { return std::find(outputs.begin(), outputs.end(), id) != outputs.end(); }

std::string Graph::display_name(ValueId id) const {
    if (id >= nodes_.size()) return "<invalid:" + std::to_string(id) + ">";
    const Node &n = nodes_[id];
    return n.name.empty() ? std::to_string(id) : n.name;
}

ValueId Graph::find(const std::string &display) const {
    auto it = by_name_.find(display);
    if (it == by_name_.end()) return kNoValue;
    ValueId best = kNoValue;
    for (ValueId id : it->second) {
        if (!contains(id) || display_name(id) != display) continue;
        if (best == kNoValue)
            best = id;
        else if (position(id) < position(best))
            best = id;
    }
    return best;
}

}  // namespace tessel::dsl
