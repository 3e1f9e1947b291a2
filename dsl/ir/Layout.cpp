#include "dsl/ir/Layout.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace tessel::dsl {

Layout Layout::canonical() const {
    Layout l = *this;
    bool identity = true;
    for (size_t i = 0; i < l.order.size(); i++) identity = identity && l.order[i] == (int)i;
    if (identity) l.order.clear();
    return l;
}

std::string to_string(const Layout &l) {
    std::ostringstream os;
    if (!l.order.empty()) {
        os << "[";
        for (size_t i = 0; i < l.order.size(); i++) os << (i ? ", " : "") << l.order[i];
        os << "]";
    }
    if (l.has_panels())
        os << (l.order.empty() ? "" : " ") << "panels(axis=" << l.panel_axis << ", width=" << l.panel_width << ")";
    return os.str();
}

namespace {

/** A small cursor over the layout text: skips blanks, reads integers and words. */
struct Cursor {
    const std::string &s;
    size_t i = 0;
    void blanks() {
        while (i < s.size() && std::isspace((unsigned char)s[i])) i++;
    }
    bool eat(const std::string &word) {
        blanks();
        if (s.compare(i, word.size(), word) != 0) return false;
        i += word.size();
        return true;
    }
    bool integer(int64_t *out) {
        blanks();
        const size_t start = i;
        while (i < s.size() && std::isdigit((unsigned char)s[i]) && i - start < 18) i++;
        if (i == start) return false;
        *out = std::stoll(s.substr(start, i - start));
        return true;
    }
    bool done() {
        blanks();
        return i == s.size();
    }
};

}  // namespace

std::optional<Layout> parse_layout(const std::string &text, std::string *error) {
    Cursor c{text};
    Layout l;
    auto fail = [&](const std::string &why) -> std::optional<Layout> {
        if (error)
            *error = "layout \"" + text + "\": " + why + " at character " + std::to_string(c.i + 1) +
                     " (expected row_major, [axes...], panels(axis=A, width=W), or [axes...] panels(...))";
        return std::nullopt;
    };
    if (c.eat("row_major")) return c.done() ? std::optional<Layout>(l) : fail("unexpected text after row_major");
    if (c.eat("[")) {
        for (;;) {
            int64_t a = 0;
            if (!c.integer(&a)) return fail("expected an axis");
            l.order.push_back((int)a);
            if (c.eat(",")) continue;
            if (c.eat("]")) break;
            return fail("expected ',' or ']'");
        }
    }
    if (c.eat("panels")) {
        int64_t axis = 0, width = 0;
        if (!c.eat("(") || !c.eat("axis") || !c.eat("=") || !c.integer(&axis)) return fail("expected panels(axis=A");
        if (!c.eat(",") || !c.eat("width") || !c.eat("=") || !c.integer(&width)) return fail("expected , width=W");
        if (!c.eat(")")) return fail("expected ')'");
        l.panel_axis = (int)axis;
        l.panel_width = width;
    }
    if (l.empty() && !c.done()) return fail("not a layout");
    if (!c.done()) return fail("unexpected text");
    return l;
}

Layout transposed_layout(const Layout &operand, const std::vector<int64_t> &perm) {
    // Result axis i is operand axis perm[i]; the inverse names each operand axis's result axis.
    std::vector<int> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); i++) inverse[(size_t)perm[i]] = (int)i;
    Layout out;
    for (size_t j = 0; j < perm.size(); j++) out.order.push_back(inverse[operand.order.empty() ? j : (size_t)operand.order[j]]);
    if (operand.has_panels()) out.panel_axis = inverse[(size_t)operand.panel_axis], out.panel_width = operand.panel_width;
    return out.canonical();
}

std::string check_layout(const Layout &l, int rank) {
    if (!l.order.empty()) {
        std::vector<int> sorted = l.order;
        std::sort(sorted.begin(), sorted.end());
        bool perm = (int)sorted.size() == rank;
        for (int i = 0; perm && i < rank; i++) perm = sorted[i] == i;
        if (!perm)
            return "order " + to_string(Layout::ordered(l.order)) + " is not a permutation of the " + std::to_string(rank) +
                   " axes";
    }
    if (l.has_panels()) {
        if (l.panel_axis >= rank)
            return "panel axis " + std::to_string(l.panel_axis) + " is not an axis of a rank-" + std::to_string(rank) + " tensor";
        if (l.panel_width < 1 || l.panel_width > (int64_t(1) << 20))
            return "panel width " + std::to_string(l.panel_width) + " is outside [1, 1048576]";
    }
    return "";
}

std::vector<PhysicalDim> physical_dims(const Layout &l, int rank) {
    std::vector<PhysicalDim> dims;
    if (l.has_panels()) dims.push_back({l.panel_axis, PhysicalDim::Part::PanelIndex, l.panel_width});
    for (int i = 0; i < rank; i++) {
        const int axis = l.order.empty() ? i : l.order[i];
        if (axis != l.panel_axis) dims.push_back({axis, PhysicalDim::Part::Whole, 0});
    }
    if (l.has_panels()) dims.push_back({l.panel_axis, PhysicalDim::Part::InPanel, l.panel_width});
    return dims;
}

std::vector<int64_t> physical_shape(const Layout &l, const std::vector<int64_t> &shape) {
    std::vector<int64_t> out;
    for (const PhysicalDim &p : physical_dims(l, (int)shape.size())) out.push_back(physical_extent(p, shape[p.axis]));
    return out;
}

}  // namespace tessel::dsl
