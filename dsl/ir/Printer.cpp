#include "dsl/ir/Printer.h"

#include "dsl/ir/Numerics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace tessel::dsl {

namespace {

template <typename T>
std::string int_list(const std::vector<T> &v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

std::string quote(const std::string &s) {
    std::string r = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') r += '\\';
        if (c == '\n') {
            r += "\\n";
            continue;
        }
        r += c;
    }
    return r + "\"";
}

bool is_splat(const Node &n) { return n.op == Op::Constant && n.attrs.value.size() == 1; }

}  // namespace

std::string print_number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    for (int prec = 1; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (std::strtod(buf, nullptr) == v && std::signbit(std::strtod(buf, nullptr)) == std::signbit(v)) break;
    }
    return buf;
}

std::string print_number(double v, DType dtype) {
    if (std::isnan(v) || std::isinf(v)) return print_number(v);
    char buf[64];
    for (int prec = 1; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, v);
        double back = round_to(dtype, std::strtod(buf, nullptr));
        if (back == v && std::signbit(back) == std::signbit(v)) return buf;
    }
    return print_number(v);
}

std::string print_dim(const Graph &g, const Dim &d) {
    switch (d.kind) {
    case Dim::Kind::Static: return std::to_string(d.size);
    case Dim::Kind::Symbol: return d.symbol;
    case Dim::Kind::Value: return "%" + g.display_name(d.value);
    }
    return "?";
}

std::string print_type(const Graph &g, const TensorType &t) {
    std::string s = std::string(to_string(t.dtype)) + "[";
    for (size_t i = 0; i < t.dims.size(); ++i) s += (i ? ", " : "") + print_dim(g, t.dims[i]);
    return s + "]";
}

std::string print_node(const Graph &g, ValueId id) {
    const Node &n = g.node(id);
    const OpInfo &info = n.info();
    std::ostringstream os;
    if (info.has_result) os << "%" << g.display_name(id) << " = ";
    if (is_splat(n)) {
        // Scalar and splat constants print as a bare literal: `%c = 2048 : i64[]`.
        os << print_number(n.attrs.value[0], n.type.dtype);
    } else if (n.op == Op::Input) {
        os << (n.attrs.weight ? "weight" : "input");
        if (!n.layout.empty()) os << "(layout=" << quote(to_string(n.layout)) << ")";
    } else {
        os << info.name << "(";
        bool first = true;
        auto sep = [&]() -> std::ostream & {
            if (!first) os << ", ";
            first = false;
            return os;
        };
        for (ValueId v : n.inputs) sep() << "%" << g.display_name(v);
        const Attrs &a = n.attrs;
        if (info.attrs & kAttrValue) {
            sep() << "value=[";
            for (size_t i = 0; i < a.value.size(); ++i) os << (i ? ", " : "") << print_number(a.value[i], n.type.dtype);
            os << "]";
        }
        if (info.attrs & kAttrAxis) sep() << "axis=" << a.axis;
        if (info.attrs & kAttrStart) sep() << "start=" << a.start;
        if (info.attrs & kAttrRepeats) sep() << "repeats=" << a.repeats;
        if (info.attrs & kAttrAxes) sep() << "axes=" << int_list(a.axes);
        if ((info.attrs & kAttrKeepDims) && a.keepdims) sep() << "keepdims=true";
        if (info.attrs & kAttrPerm) sep() << "perm=" << int_list(a.perm);
        if (info.attrs & kAttrSeed) sep() << "seed=" << a.seed;
        if (info.attrs & kAttrVar) sep() << "var=" << quote(a.var);
        if (info.attrs & kAttrLabel) sep() << "label=" << quote(a.text);
        if (info.attrs & kAttrMsg) sep() << "msg=" << quote(a.text);
        if (!n.layout.empty()) sep() << "layout=" << quote(to_string(n.layout));
        os << ")";
    }
    if (info.has_result) os << " : " << print_type(g, n.type);
    return os.str();
}

std::string print(const Graph &g) {
    std::ostringstream os;
    os << "graph " << g.name << " mode=" << to_string(g.mode) << " {\n";
    for (ValueId id : g.order()) os << "  " << print_node(g, id) << "\n";
    if (!g.outputs.empty()) {
        os << "  output ";
        for (size_t i = 0; i < g.outputs.size(); ++i) {
            // An output under another name than its value's prints as a binding: %y = %x.
            const std::string name = g.output_name(i), value = g.display_name(g.outputs[i]);
            os << (i ? ", " : "") << "%" << name;
            if (name != value) os << " = %" << value;
        }
        os << "\n";
    }
    os << "}\n";
    return os.str();
}

}  // namespace tessel::dsl
