/** \file
 * TuningKey: versions, canonical text and JSON; structural_descriptor() / structural_hash() of a
 * fusion group (a depth-first canonical walk, then 128-bit FNV-1a).
 */
#include "autoscheduler/TuningKey.h"
#include "support/JsonField.h"

#include <HalideRuntime.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_map>

#ifndef TESSEL_VERSION
#error "TESSEL_VERSION must be defined by autoscheduler/CMakeLists.txt"
#endif

namespace tessel::autosched {

namespace {

using dsl::Dim;
using dsl::Graph;
using dsl::Node;
using dsl::ValueId;

/** Canonical names for the things a descriptor mentions, numbered by first appearance. */
struct Canon {
    std::unordered_map<ValueId, int> member, interface, dim_value;
    std::map<std::string, int> symbol;
    std::vector<ValueId> interface_order;

    std::string dim(const Dim &d) {
        switch (d.kind) {
        case Dim::Kind::Static: return std::to_string(d.size);
        case Dim::Kind::Symbol: return "s" + std::to_string(symbol.emplace(d.symbol, (int)symbol.size()).first->second);
        case Dim::Kind::Value: return "v" + std::to_string(dim_value.emplace(d.value, (int)dim_value.size()).first->second);
        }
        return "?";
    }
    std::string type(const dsl::TensorType &t, const dsl::Layout &layout) {
        std::string s = std::string(dsl::to_string(t.dtype)) + "[";
        for (size_t i = 0; i < t.dims.size(); ++i) s += (i ? "," : "") + dim(t.dims[i]);
        s += "]";
        if (!layout.empty()) s += " layout=" + nlohmann::json(dsl::to_string(layout)).dump();
        return s;
    }
    /** "n3" for a member already emitted, "in1" for a value outside the group. */
    std::string operand(ValueId v) {
        if (auto it = member.find(v); it != member.end()) return "n" + std::to_string(it->second);
        auto [it, added] = interface.emplace(v, (int)interface.size());
        if (added) interface_order.push_back(v);
        return "in" + std::to_string(it->second);
    }
};

template <typename T>
std::string list(const std::vector<T> &xs) {
    std::string s = "[";
    for (size_t i = 0; i < xs.size(); ++i) s += (i ? "," : "") + std::to_string(xs[i]);
    return s + "]";
}

/** The attributes the op carries (its OpKinds.def mask), in a fixed order. */
std::string attrs_text(const Node &n) {
    unsigned mask = n.info().attrs;
    const dsl::Attrs &a = n.attrs;
    std::string s;
    if (mask & dsl::kAttrValue) {
        s += " value=[";
        for (size_t i = 0; i < a.value.size(); ++i) {
            uint64_t bits;
            std::memcpy(&bits, &a.value[i], sizeof bits);
            char buf[20];
            std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)bits);
            s += (i ? "," : "") + std::string(buf);
        }
        s += "]";
    }
    if (mask & dsl::kAttrAxis) s += " axis=" + std::to_string(a.axis);
    if (mask & dsl::kAttrStart) s += " start=" + std::to_string(a.start);
    if (mask & dsl::kAttrRepeats) s += " repeats=" + std::to_string(a.repeats);
    if (mask & dsl::kAttrAxes) s += " axes=" + list(a.axes);
    if (mask & dsl::kAttrKeepDims) s += std::string(" keepdims=") + (a.keepdims ? "1" : "0");
    if (mask & dsl::kAttrPerm) s += " perm=" + list(a.perm);
    if (mask & dsl::kAttrSeed) s += " seed=" + std::to_string(a.seed);
    if (mask & dsl::kAttrVar) s += " var=" + nlohmann::json(a.var).dump();
    if (mask & (dsl::kAttrLabel | dsl::kAttrMsg)) s += " text=" + nlohmann::json(a.text).dump();
    return s;
}

/** 128-bit FNV-1a (offset basis and prime from the FNV specification). */
std::string fnv1a_128(const std::string &text) {
    using u128 = unsigned __int128;
    u128 h = ((u128)0x6c62272e07bb0142ull << 64) | 0x62b821756295c58dull;
    const u128 prime = ((u128)0x0000000001000000ull << 64) | 0x000000000000013Bull;
    for (unsigned char c : text) {
        h ^= c;
        h *= prime;
    }
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)(h >> 64), (unsigned long long)h);
    return buf;
}

std::string or_dash(const std::string &s) { return s.empty() ? "-" : s; }

}  // namespace

std::string tessel_version() { return TESSEL_VERSION; }

std::string halide_version() {
    return std::to_string(HALIDE_VERSION_MAJOR) + "." + std::to_string(HALIDE_VERSION_MINOR) + "." +
           std::to_string(HALIDE_VERSION_PATCH);
}

TuningKey TuningKey::current() {
    TuningKey k;
    k.tessel_version = autosched::tessel_version();
    k.halide_version = autosched::halide_version();
    k.schema_version = kTuningKeySchemaVersion;
    return k;
}

std::string TuningKey::to_string() const {
    std::ostringstream os;
    os << "tk" << schema_version << " group=" << or_dash(group_hash) << " class=" << or_dash(shape_class)
       << " shapes=" << or_dash(shapes) << " target=" << or_dash(target) << " mode=" << or_dash(numeric_mode)
       << " space=" << space_version << " tessel=" << or_dash(tessel_version) << " halide=" << or_dash(halide_version);
    return os.str();
}

nlohmann::json TuningKey::to_json() const {
    return nlohmann::json{{"group_hash", group_hash},
                          {"shape_class", shape_class},
                          {"shapes", shapes},
                          {"target", target},
                          {"numeric_mode", numeric_mode},
                          {"space_version", space_version},
                          {"tessel_version", tessel_version},
                          {"halide_version", halide_version},
                          {"schema_version", schema_version}};
}

TuningKey TuningKey::from_json(const nlohmann::json &j, const std::string &path) {
    TuningKey k;
    k.group_hash = json_field<std::string, TuningKeyError>(j, "group_hash", path);
    k.shape_class = json_field<std::string, TuningKeyError>(j, "shape_class", path);
    k.shapes = json_field<std::string, TuningKeyError>(j, "shapes", path);
    k.target = json_field<std::string, TuningKeyError>(j, "target", path);
    k.numeric_mode = json_field<std::string, TuningKeyError>(j, "numeric_mode", path);
    k.space_version = json_field<int, TuningKeyError>(j, "space_version", path);
    k.tessel_version = json_field<std::string, TuningKeyError>(j, "tessel_version", path);
    k.halide_version = json_field<std::string, TuningKeyError>(j, "halide_version", path);
    k.schema_version = json_field<int, TuningKeyError>(j, "schema_version", path);
    return k;
}

std::string format_shapes(const std::map<std::string, int64_t> &extents) {
    std::string s;
    for (const auto &[name, n] : extents) s += (s.empty() ? "" : ",") + name + "=" + std::to_string(n);
    return s;
}

std::string to_key_string(dsl::NumericMode mode) { return dsl::to_string(mode); }

std::string structural_descriptor(const Graph &g, const dsl::FusionGroup &group) {
    std::vector<ValueId> interface;
    return structural_descriptor(g, group, interface);
}

std::string structural_descriptor(const Graph &g, const dsl::FusionGroup &group, std::vector<ValueId> &interface) {
    std::vector<ValueId> none;
    return structural_descriptor(g, group, interface, [](ValueId) { return false; }, none);
}

std::string structural_descriptor(const Graph &g, const dsl::FusionGroup &group, std::vector<ValueId> &interface,
                                  const std::function<bool(ValueId)> &lifted, std::vector<ValueId> &lifted_order) {
    lifted_order.clear();
    std::set<ValueId> in_group(group.nodes.begin(), group.nodes.end());
    Canon c;
    std::set<ValueId> visiting;
    std::ostringstream os;
    os << "tessel-group-descriptor " << kTuningKeySchemaVersion << "\n";

    std::function<void(ValueId)> visit = [&](ValueId v) {
        if (!in_group.count(v) || c.member.count(v) || visiting.count(v)) return;
        visiting.insert(v);
        const Node &n = g.node(v);
        for (ValueId in : n.inputs) visit(in);
        std::string line = " = " + std::string(dsl::to_string(n.op)) + "(";
        for (size_t i = 0; i < n.inputs.size(); ++i) line += (i ? ", " : "") + c.operand(n.inputs[i]);
        line += ")";
        if (n.has_result()) line += " : " + c.type(n.type, n.layout);
        if (n.op == dsl::Op::Constant && lifted(v)) {
            line += " value=arg" + std::to_string(lifted_order.size());
            lifted_order.push_back(v);
        } else {
            line += attrs_text(n);
        }
        int id = (int)c.member.size();
        c.member[v] = id;
        os << "n" << id << line << "\n";
    };
    for (ValueId out : group.outputs) visit(out);
    for (ValueId v : group.nodes) visit(v);  // members no output reaches, in program order

    os << "outputs";
    for (ValueId out : group.outputs) os << " " << c.operand(out);
    os << "\n";
    for (size_t i = 0; i < c.interface_order.size(); ++i) {
        const Node &n = g.node(c.interface_order[i]);
        os << "in" << i << " : " << c.type(n.type, n.layout) << "\n";
    }
    interface = c.interface_order;
    return os.str();
}

std::string structural_hash(const Graph &g, const dsl::FusionGroup &group) { return fnv1a_128(structural_descriptor(g, group)); }

}  // namespace tessel::autosched
