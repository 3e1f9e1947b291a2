// Map: candidates (weights and prepared values with per-call readers) -> readers traced to the
// matmul they feed -> per-call cost of each candidate layout under the expected shapes ->
// the cheapest, written into the layout slot; LayoutPlan::to_string prints every region.
#include "dsl/passes/LayoutAssignment.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "dsl/analysis/WeightDerived.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

LayoutCostModel LayoutCostModel::measured(int panel_width, int mr, int decode_max_m) {
    LayoutCostModel m;
    m.panel_width = panel_width;
    m.mr = mr;
    m.decode_max_m = decode_max_m;
    // Measured by `make bench` on the 2-core AVX-512 host (docs/results/layouts_cpu.txt): the
    // x @ w time over the w-in-panels time, same run, same schedule (cpu_blocked), at decode_1,
    // decode_4, decode_16 and mlp_up. Panels are read through index arithmetic (n / 48, n % 48)
    // that the vector loops do not see through (gathers), so on this host they never pay; the
    // row-major gemm nest's packing per call did not show as a cost (x @ transpose(w) packing a
    // transposed w per call ran at 1.00x on mlp_up).
    m.panel_rate[0] = 0.150, m.panel_rate[1] = 0.276, m.panel_rate[2] = 0.715, m.panel_rate[3] = 0.167;
    m.gemm_pack_bytes = 0.0;
    return m;
}

int LayoutCostModel::family(int64_t m) const {
    if (m == 1) return 0;
    if (m < mr) return 1;
    if (m <= decode_max_m) return 2;
    return 3;
}

namespace {


std::string nm(const Graph &g, ValueId v) { return "%" + g.display_name(v); }

int64_t size_of(const Graph &g, const Dim &d0, const std::map<std::string, int64_t> &sizes) {
    const Dim d = resolve_dim(g, d0);
    if (d.is_static()) return d.size;
    if (d.kind == Dim::Kind::Symbol)
        if (auto it = sizes.find(d.symbol); it != sizes.end() && it->second > 0) return it->second;
    return kDefaultSymbolSize;
}

/** The matmul that reads `v` as its right operand, directly or through widening casts; or
 * kNoValue when `reader` reads it otherwise. */
ValueId matmul_reading_rhs(const Graph &g, ValueId v, ValueId reader) {
    for (int depth = 0; depth < 4; depth++) {
        const Node &n = g.node(reader);
        if (n.op == Op::MatMul) return n.inputs[1] == v && n.inputs[0] != v ? reader : kNoValue;
        if (n.op != Op::Cast || n.type.dtype != DType::F32) return kNoValue;
        const std::vector<ValueId> users = g.users(reader);
        if (users.size() != 1) return kNoValue;
        v = reader;
        reader = users[0];
    }
    return kNoValue;
}

}  // namespace

LayoutPlan assign_layouts(Graph &g, const FusionPlan &plan, const LayoutOptions &options) {
    LayoutPlan out;
    const LayoutCostModel &model = options.model;
    std::set<ValueId> prepared_outputs, matmul_written, prepared_members;
    for (const FusionGroup &fg : plan.groups) {
        if (fg.prepared) {
            prepared_outputs.insert(fg.outputs.begin(), fg.outputs.end());
            prepared_members.insert(fg.nodes.begin(), fg.nodes.end());
            if (fg.kind == GroupKind::MatmulEpilogue) matmul_written.insert(fg.outputs.begin(), fg.outputs.end());
        }
    }
    std::vector<std::pair<std::map<std::string, int64_t>, double>> shapes = options.shapes;
    if (shapes.empty()) shapes.push_back({plan.symbol_sizes, 1.0});

    for (ValueId v : g.order()) {
        if (!is_weight(g, v) && !prepared_outputs.count(v)) continue;
        if (g.is_output(v) || matmul_written.count(v)) continue;
        LayoutRegion r;
        r.value = v;
        for (ValueId u : g.users(v))
            if (!prepared_members.count(u)) r.readers.push_back(u);
        if (r.readers.empty()) continue;  // read only while preparing
        const Node &n = g.node(v);
        const TensorType &t = n.type;

        // Every reader must be a matmul reading v as its right operand for panels to be offered.
        std::vector<ValueId> matmuls;
        std::string other;
        for (ValueId u : r.readers) {
            const ValueId mm = matmul_reading_rhs(g, v, u);
            if (mm == kNoValue) other = nm(g, u) + " (" + to_string(g.node(u).op) + ")";
            else matmuls.push_back(mm);
        }
        // Costs over the expected shapes, in bytes at the row-major read rate.
        const int64_t elem = byte_size(t.dtype);
        auto cost = [&](bool panels) {
            double total = 0;
            for (const auto &[sizes, weight] : shapes) {
                const int64_t k = t.rank() == 2 ? size_of(g, t.dims[0], sizes) : 1;
                const int64_t nn = t.rank() >= 1 ? size_of(g, t.dims.back(), sizes) : 1;
                const int64_t padded = panels ? (nn + model.panel_width - 1) / model.panel_width * model.panel_width : nn;
                if (matmuls.empty()) {  // read once per call by elementwise readers
                    double numel = 1;
                    for (const Dim &d : t.dims) numel *= (double)size_of(g, d, sizes);
                    total += weight * numel * elem * (double)r.readers.size();
                }
                for (ValueId mm : matmuls) {
                    const int64_t m = size_of(g, g.node(mm).type.dims[g.node(mm).type.rank() - 2], sizes);
                    const int f = model.family(m);
                    const double bytes = (double)k * padded * elem;
                    if (panels) total += weight * bytes / model.panel_rate[f];
                    else total += weight * bytes * (f == 3 ? 1.0 + model.gemm_pack_bytes : 1.0);
                }
            }
            return total;
        };
        LayoutCandidate row{Layout::row_major(), cost(false), 0, "the layout it is computed in"};
        r.candidates.push_back(row);
        if (t.rank() == 2 && other.empty() && !matmuls.empty()) {
            const Layout p = Layout::panels(1, model.panel_width);
            const int64_t nn = size_of(g, t.dims[1], shapes[0].first), k = size_of(g, t.dims[0], shapes[0].first);
            const int64_t padded = (nn + model.panel_width - 1) / model.panel_width * model.panel_width;
            r.candidates.push_back({p, cost(true), (k * nn + k * padded) * elem,
                                    "the register block's " + std::to_string(model.panel_width) +
                                        " columns contiguous for all K: no packing per call"});
        }
        if (!n.layout.empty()) {
            r.forced = true;
            auto it = std::find_if(r.candidates.begin(), r.candidates.end(), [&](const LayoutCandidate &c) { return c.layout == n.layout; });
            if (it == r.candidates.end()) {
                r.candidates.push_back({n.layout, 0, 0, "set in the text"});
                it = r.candidates.end() - 1;
            }
            r.chosen = (size_t)(it - r.candidates.begin());
            r.reason = "the layout was set in the text; kept";
        } else {
            for (size_t i = 1; i < r.candidates.size(); i++)
                if (r.candidates[i].per_call_bytes < r.candidates[r.chosen].per_call_bytes * 0.98) r.chosen = i;
            if (r.candidates.size() == 1)
                r.reason = "row-major only: read by " + (other.empty() ? std::string("no matmul") : other) +
                           ", which reads it elementwise";
            else
                r.reason = r.chosen == 0 ? "row-major is within 2% of the cheapest alternative or cheaper"
                                         : "cheaper per call than forcing row-major";
            g.node(v).layout = r.candidates[r.chosen].layout;
        }
        out.regions.push_back(std::move(r));
    }
    return out;
}

std::string LayoutPlan::to_string(const Graph &g) const {
    std::ostringstream os;
    os << "layout assignment: " << regions.size() << " region(s)\n";
    for (const LayoutRegion &r : regions) {
        os << "region " << nm(g, r.value) << " : " << print_type(g, g.node(r.value).type) << ", read per call by";
        for (ValueId u : r.readers) os << " " << nm(g, u);
        os << "\n";
        for (size_t i = 0; i < r.candidates.size(); i++) {
            const LayoutCandidate &c = r.candidates[i];
            const std::string name = c.layout.empty() ? "row_major" : dsl::to_string(c.layout);
            os << "  " << (i == r.chosen ? "* " : "  ") << name << ": " << (int64_t)c.per_call_bytes << " B per call"
               << (i == 0 ? " (forcing the producer's layout)" : "") << ", one-time " << c.one_time_bytes << " B; "
               << c.why << "\n";
        }
        os << "  -> " << (r.candidates[r.chosen].layout.empty() ? "row_major" : dsl::to_string(r.candidates[r.chosen].layout))
           << ": " << r.reason << "\n";
    }
    return os.str();
}

}  // namespace tessel::dsl
