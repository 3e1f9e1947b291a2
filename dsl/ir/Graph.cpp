#include "dsl/ir/Graph.h"

#include <stdexcept>

#include <algorithm>
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
#define DSL_OP(e, s, ar, res, eff, it, attrs) \
    OpInfo{Op::e, s, ar, res, Effect::eff, IterSpace::it, attrs},
#include "dsl/ir/OpKinds.def"
#undef DSL_OP
    };
    return t;
}

bool same_bits(const std::vector<double> &a, const std::vector<double> &b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
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
    return same_bits(value, o.value) && axis == o.axis && axes == o.axes &&
           keepdims == o.keepdims && perm == o.perm && seed == o.seed && var == o.var &&
           text == o.text;
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

ValueId Graph::add(Node n) {
    n.id = (ValueId)nodes_.size();
    fix_name(n);
    nodes_.push_back(std::move(n));
    erased_.push_back(0);
    order_.push_back(nodes_.back().id);
    return nodes_.back().id;
}

ValueId Graph::insert_before(ValueId pos, Node n) {
    size_t p = position(pos);
    n.id = (ValueId)nodes_.size();
    fix_name(n);
    nodes_.push_back(std::move(n));
    erased_.push_back(0);
    order_.insert(order_.begin() + (long)p, nodes_.back().id);
    return nodes_.back().id;
}

void Graph::erase(ValueId id) {
    size_t p = position(id);
    order_.erase(order_.begin() + (long)p);
    erased_[id] = 1;
}

bool Graph::contains(ValueId id) const { return id < nodes_.size() && !erased_[id]; }

Node &Graph::node(ValueId id) {
    if (!contains(id)) throw InternalError("graph has no value with id " + std::to_string(id));
    return nodes_[id];
}

const Node &Graph::node(ValueId id) const {
    if (!contains(id)) throw InternalError("graph has no value with id " + std::to_string(id));
    return nodes_[id];
}

size_t Graph::position(ValueId id) const {
    auto it = std::find(order_.begin(), order_.end(), id);
    if (it == order_.end())
        throw InternalError("value " + std::to_string(id) + " is not in program order");
    return (size_t)(it - order_.begin());
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
    // Output names are the interface: remember them before values and names move, and rebind
    // any that would change (the output now holds another value, or the value was renamed).
    std::vector<std::string> interface(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) interface[i] = output_name(i);
    int changed = 0;
    for (ValueId id : order_) {
        Node &n = nodes_[id];
        for (ValueId &v : n.inputs)
            if (v == from) v = to, ++changed;
        for (Dim &d : n.type.dims)
            if (d.kind == Dim::Kind::Value && d.value == from) d.value = to, ++changed;
    }
    for (ValueId &v : outputs)
        if (v == from) v = to, ++changed;
    Node &f = nodes_[from], &t = nodes_[to];
    if (t.name.empty() && !f.name.empty()) {
        t.name = f.name;
        f.name.clear();
        fix_name(f);
    }
    for (size_t i = 0; i < outputs.size(); ++i) set_output_name(i, interface[i]);
    return changed;
}

std::vector<ValueId> Graph::users(ValueId id) const {
    std::vector<ValueId> r;
    for (ValueId u : order_) {
        bool uses = false;
        for_each_dependency(nodes_[u], [&](ValueId v) { uses |= (v == id); });
        if (uses) r.push_back(u);
    }
    return r;
}

bool Graph::is_output(ValueId id) const {
    return std::find(outputs.begin(), outputs.end(), id) != outputs.end();
}

std::string Graph::display_name(ValueId id) const {
    if (id >= nodes_.size()) return "<invalid:" + std::to_string(id) + ">";
    const Node &n = nodes_[id];
    return n.name.empty() ? std::to_string(id) : n.name;
}

ValueId Graph::find(const std::string &display) const {
    for (ValueId id : order_)
        if (display_name(id) == display) return id;
    return kNoValue;
}

}  // namespace tessel::dsl
