// The memory plan's timeline picture (declared in BufferAssignment.h): steps run left to right,
// arena offsets bottom to top, one box per allocation; two dashed lines mark the planned peak and
// the lower bound, so the gap between them is the packing's loss.
#include "dsl/analysis/BufferAssignment.h"

#include <sstream>

#include "dsl/analysis/MemoryTraffic.h"

namespace tessel::dsl {

namespace {

std::string escape_xml(const std::string &s) {
    std::string out;
    for (char c : s) {
        if (c == '<')
            out += "&lt;";
        else if (c == '>')
            out += "&gt;";
        else if (c == '&')
            out += "&amp;";
        else if (c == '"')
            out += "&quot;";
        else
            out += c;
    }
    return out;
}

}  // namespace

std::string buffer_timeline_svg(const Graph &g, const BufferAssignment &a) {
    const double left = 120, bottom = 40, top = 50, width = 720, height = 360;
    const int steps = std::max(1, a.steps);
    const double top_bytes = (double)std::max<int64_t>({a.planned_peak, a.lower_bound, 1});
    const double sx = width / steps, sy = height / top_bytes;
    auto x_of = [&](double step) { return left + step * sx; };
    auto y_of = [&](double bytes) { return top + height - bytes * sy; };

    std::ostringstream os;
    os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << left + width + 20 << "\" height=\"" << top + height + bottom
       << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
    os << "<text x=\"" << left << "\" y=\"20\" font-size=\"14\">" << escape_xml(g.name) << ": memory plan ("
       << to_string(a.policy) << " reuse) — naive " << format_bytes(a.naive_bytes) << ", planned " << format_bytes(a.planned_peak)
       << ", bound " << format_bytes(a.lower_bound) << "</text>\n";
    os << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << width << "\" height=\"" << height
       << "\" fill=\"none\" stroke=\"#888\"/>\n";
    static const char *kFill[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5"};
    for (size_t i = 0; i < a.allocations.size(); i++) {
        const Allocation &al = a.allocations[i];
        const double x0 = x_of(al.first_step), x1 = x_of(al.last_step + 1);
        const double y1 = y_of((double)al.offset), y0 = y_of((double)(al.offset + al.bytes));
        std::string label;
        for (ValueId v : al.values) label += (label.empty() ? "%" : " %") + g.display_name(v);
        os << "<rect x=\"" << x0 << "\" y=\"" << y0 << "\" width=\"" << x1 - x0 << "\" height=\"" << y1 - y0 << "\" fill=\""
           << kFill[i % 8] << "\" stroke=\"#333\"><title>" << escape_xml(label) << ": " << format_bytes(al.bytes) << " at offset "
           << al.offset << ", steps " << al.first_step << "-" << al.last_step << "</title></rect>\n";
        if (y1 - y0 >= 12)
            os << "<text x=\"" << x0 + 3 << "\" y=\"" << (y0 + y1) / 2 + 4 << "\">" << escape_xml(label) << "</text>\n";
    }
    auto line = [&](double bytes, const char *colour, const std::string &text) {
        os << "<line x1=\"" << left << "\" x2=\"" << left + width << "\" y1=\"" << y_of(bytes) << "\" y2=\"" << y_of(bytes)
           << "\" stroke=\"" << colour << "\" stroke-dasharray=\"6,3\"/>\n";
        os << "<text x=\"4\" y=\"" << y_of(bytes) + 4 << "\" fill=\"" << colour << "\">" << escape_xml(text) << "</text>\n";
    };
    if (a.planned_peak == a.lower_bound) {
        line((double)a.planned_peak, "#c00", "peak = bound " + format_bytes(a.planned_peak));
    } else {
        line((double)a.planned_peak, "#c00", "peak " + format_bytes(a.planned_peak));
        line((double)a.lower_bound, "#06c", "bound " + format_bytes(a.lower_bound));
    }
    for (int s = 0; s < steps; s++)
        os << "<text x=\"" << x_of(s + 0.5) - 4 << "\" y=\"" << top + height + 15 << "\">" << s << "</text>\n";
    os << "<text x=\"" << left + width / 2 - 30 << "\" y=\"" << top + height + 32 << "\">step (group)</text>\n";
    os << "</svg>\n";
    return os.str();
}

}  // namespace tessel::dsl
