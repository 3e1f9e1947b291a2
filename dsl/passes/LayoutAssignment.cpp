// Map: weight regions (weights and prepared values with per-call readers) -> readers traced to
// the matmul they feed -> per-call cost of each candidate layout under the expected shapes ->
// the cheapest, written into the layout slot. Then per-call regions: each reader's walked axis
// and read kind -> forcing the stored layout vs a copy per walked axis -> copies inserted.
// LayoutPlan::to_string prints every region.
#include "dsl/passes/LayoutAssignment.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "dsl/analysis/WeightDerived.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

LayoutRates LayoutRates::defaults() {
    LayoutRates r;
    // The x @ w time over the w-in-panels time under cpu_blocked, which reads panels of the
    // register block's width in place (the row-major nests pack w per call, or read it strided
    // in the split-K ones), per M family: the lower of two `make bench` runs. Large M showed no
    // measured gain, so 1.0, and the padding of the last panel decides there. bf16 weights were
    // not measured apart on that host: the f32 rates stand for them.
    const double panels[kFamilies] = {1.12, 1.16, 1.46, 1.0};
    for (int k = 0; k < kWeightKinds; k++)
        for (int f = 0; f < kFamilies; f++) r.panel_rate[k][f] = panels[f];
    // `make bench-memory` ("Layout read costs") on the same host: each read kind's kernel over a
    // 1024 x 1024 f32 value, contiguous and through a transpose, and a copy into the other order,
    // over the contiguous exp kernel.
    r.read_cost[Elementwise][0] = 1.0, r.read_cost[Elementwise][1] = 3.47;
    r.read_cost[Reduction][0] = 0.57, r.read_cost[Reduction][1] = 6.75;
    r.read_cost[Softmax][0] = 1.32, r.read_cost[Softmax][1] = 7.49;
    r.conversion_cost = 2.89;
    r.source = "defaults (one AMD Zen 4 host's; `tessel db probe` measures this machine's)";
    return r;
}

std::string LayoutRates::invalid_reason() const {
    auto bad = [](double v) { return !(v > 0) || !std::isfinite(v); };
    for (int k = 0; k < kWeightKinds; k++)
        for (int f = 0; f < kFamilies; f++)
            if (bad(panel_rate[k][f]))
                return "panel rate [" + std::to_string(k) + "][" + std::to_string(f) + "] is " + std::to_string(panel_rate[k][f]);
    for (int k = 0; k < kReadKinds; k++)
        for (int a = 0; a < 2; a++)
            if (bad(read_cost[k][a]))
                return "read cost [" + std::to_string(k) + "][" + std::to_string(a) + "] is " + std::to_string(read_cost[k][a]);
    if (bad(conversion_cost)) return "conversion cost is " + std::to_string(conversion_cost);
    return "";
}

LayoutCostModel LayoutCostModel::measured(int panel_width, int mr, int decode_max_m, const LayoutRates &rates) {
    LayoutCostModel m;
    m.panel_width = panel_width;
    m.mr = mr;
    m.decode_max_m = decode_max_m;
    m.rates = rates;
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

/** How a reader's innermost loop walks a per-call value: which of the value's axes (-1: none,
 * the reader broadcasts along its innermost axis), and what kind of read it is. */
struct Walk {
    ValueId member = kNoValue;  ///< the reader's group member whose operand is the value
    int axis = -1;
    LayoutCostModel::ReadKind kind = LayoutCostModel::Elementwise;
};

/** Whether a transpose inside the group follows `u`: the loop would then walk another axis. */
bool transposed_later(const Graph &g, ValueId u, const std::set<ValueId> &members) {
    std::vector<ValueId> work = {u};
    std::set<ValueId> seen;
    while (!work.empty()) {
        const ValueId x = work.back();
        work.pop_back();
        for (ValueId y : g.users(x)) {
            if (!members.count(y) || !seen.insert(y).second) continue;
            if (g.node(y).op == Op::Transpose || g.node(y).op == Op::Reshape) return true;
            work.push_back(y);
        }
    }
    return false;
}

/** The walks of a value by `u`, a member of the reader group `members` whose operand `cur` holds
 * the value's axis axis[j] at its axis j, traced through the group's transposes (each in-group
 * user of a transpose walks on). Appends nothing where a walk is not modelled (a matmul operand,
 * a reshape, a copy, a transpose after an elementwise op): that reader keeps what it reads. */
void walks_of(const Graph &g, ValueId cur, const std::vector<int> &axis, ValueId user, ValueId u,
              const std::set<ValueId> &members, std::vector<Walk> &out, int depth = 0) {
    const Node &n = g.node(u);
    const TensorType &ct = g.node(cur).type;
    if (ct.rank() == 0 || depth > 8) return;
    const int last = ct.rank() - 1;
    if (n.op == Op::Transpose) {
        std::vector<int> next(n.attrs.perm.size());
        for (size_t i = 0; i < next.size(); i++) next[i] = axis[(size_t)n.attrs.perm[i]];
        bool inside = false;
        for (ValueId x : g.users(u))
            if (members.count(x)) inside = true, walks_of(g, u, next, user, x, members, out, depth + 1);
        if (!inside || g.is_output(u)) out.push_back({user, next.back(), LayoutCostModel::Elementwise});  // written out
        return;
    }
    if (is_reduction(n.op)) return out.push_back({user, axis[last], LayoutCostModel::Reduction});
    if (n.op == Op::Softmax) return out.push_back({user, axis[last], LayoutCostModel::Softmax});
    const IterSpace it = n.info().iter_space;
    if (n.op == Op::Copy || (it != IterSpace::Elementwise && it != IterSpace::Broadcast)) return;
    if (transposed_later(g, u, members)) return;
    const Dim d = resolve_dim(g, ct.dims[last]);
    const Dim du = resolve_dim(g, n.type.dims.back());
    const bool broadcast = d.is_static() && d.size == 1 && !(du.is_static() && du.size == 1);
    out.push_back({user, broadcast ? -1 : axis[last], LayoutCostModel::Elementwise});
}

/** The logical axis a layout stores innermost. */
int innermost_axis(const Layout &l, int rank) { return physical_dims(l, rank).back().axis; }

/** The axis of `v` whose neighbours are adjacent in memory: the innermost stored axis, skipping
 * axes of static extent 1 (walking the next one out is then contiguous too). */
int contiguous_axis(const Graph &g, ValueId v) {
    const Node &n = g.node(v);
    const std::vector<PhysicalDim> dims = physical_dims(n.layout, n.type.rank());
    for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
        const Dim d = resolve_dim(g, n.type.dims[it->axis]);
        if (it->part != PhysicalDim::Part::Whole || !(d.is_static() && d.size == 1)) return it->axis;
    }
    return dims.back().axis;
}

/** `rank` axes in order with `a` moved innermost. */
Layout with_innermost(int a, int rank) {
    std::vector<int> order;
    for (int j = 0; j < rank; j++)
        if (j != a) order.push_back(j);
    order.push_back(a);
    return Layout::ordered(order).canonical();
}

const char *read_kind_name(LayoutCostModel::ReadKind k) {
    switch (k) {
    case LayoutCostModel::Elementwise: return "elementwise";
    case LayoutCostModel::Reduction: return "reduction";
    case LayoutCostModel::Softmax: return "softmax";
    default: return "?";
    }
}

/** The value's bytes summed over the expected shapes, each with its weight. */
double expected_bytes(const Graph &g, ValueId v, const std::vector<std::pair<std::map<std::string, int64_t>, double>> &shapes) {
    double total = 0;
    for (const auto &[sizes, weight] : shapes) {
        double numel = 1;
        for (const Dim &d : g.node(v).type.dims) numel *= (double)size_of(g, d, sizes);
        total += weight * numel * (double)byte_size(g.node(v).type.dtype);
    }
    return total;
}

/** A unique name for the copy of `v`: "<v>.<layout's innermost axis>" style, e.g. "y.m0". */
std::string unique_name(const Graph &g, const std::string &base) {
    std::string name = base;
    for (int i = 1; g.find(name) != kNoValue; i++) name = base + std::to_string(i);
    return name;
}

std::string copy_name(const Graph &g, ValueId v, int axis) {
    return unique_name(g, g.display_name(v) + ".axis" + std::to_string(axis) + "_inner");
}

/** Points `readers` at a copy of `v` in `layout`, inserted before the first of them. */
ValueId insert_copy(Graph &g, ValueId v, const Layout &layout, const std::vector<ValueId> &readers, const std::string &name) {
    ValueId first = readers[0];
    for (ValueId m : readers)
        if (g.position(m) < g.position(first)) first = m;
    const ValueId id = g.insert_before(first, Node::make(Op::Copy, {v}, g.node(v).type, name));
    g.node(id).layout = layout;
    for (ValueId m : readers)
        for (ValueId &in : g.node(m).inputs)
            if (in == v) in = id;
    return id;
}

/** Per-call regions (see the file comment): decides and inserts the conversions. */
void assign_per_call(Graph &g, const FusionPlan &plan, const LayoutOptions &options,
                     const std::vector<std::pair<std::map<std::string, int64_t>, double>> &shapes, LayoutPlan &out) {
    const LayoutCostModel &model = options.model;
    std::map<ValueId, std::vector<int>> member_of;  // an op recomputed inline is in several groups
    std::set<ValueId> prepared;
    for (size_t gi = 0; gi < plan.groups.size(); gi++)
        for (ValueId v : plan.groups[gi].nodes) {
            member_of[v].push_back((int)gi);
            if (plan.groups[gi].prepared) prepared.insert(v);
        }
    const std::vector<char> derived = weight_derived(g);
    // Every value read from memory by a per-call group, in program order: decided one by one
    // (independent regions), copies inserted after all are decided.
    struct Pending {
        ValueId value;
        Layout layout;
        std::vector<ValueId> members;
    };
    std::vector<Pending> copies;
    for (ValueId v : g.order()) {
        const Node &n = g.node(v);
        if (!n.has_result() || n.type.rank() < 2 || !is_float(n.type.dtype)) continue;
        if ((v < derived.size() && derived[v]) || prepared.count(v)) continue;  // weight regions
        std::vector<Walk> walks;
        std::vector<ValueId> readers;
        const std::vector<int> own = member_of.count(v) ? member_of.at(v) : std::vector<int>{};
        std::vector<int> identity(n.type.rank());
        for (int j = 0; j < n.type.rank(); j++) identity[j] = j;
        for (ValueId u : g.users(v)) {
            auto it = member_of.find(u);
            if (it == member_of.end() || prepared.count(u)) continue;
            bool read = false;
            for (int gi : it->second) {
                if (std::count(own.begin(), own.end(), gi)) continue;  // read inline, not from memory
                const FusionGroup &fg = plan.groups[(size_t)gi];
                walks_of(g, v, identity, u, u, std::set<ValueId>(fg.nodes.begin(), fg.nodes.end()), walks);
                read = true;
            }
            if (read) readers.push_back(u);
        }
        const int inner = contiguous_axis(g, v);
        std::set<int> strided_axes;
        for (const Walk &w : walks)
            if (w.axis >= 0 && w.axis != inner) strided_axes.insert(w.axis);
        if (strided_axes.empty()) continue;

        LayoutRegion r;
        r.kind = LayoutRegion::Kind::PerCall;
        r.value = v;
        r.readers = readers;
        const double bytes = expected_bytes(g, v, shapes);
        auto reads = [&](const std::set<int> &converted) {
            double c = 0;
            for (const Walk &w : walks) {
                const bool aligned = w.axis < 0 || w.axis == inner || converted.count(w.axis);
                c += model.rates.read_cost[w.kind][aligned ? 0 : 1];
            }
            return c;
        };
        std::string walked;
        for (const Walk &w : walks)
            walked += (walked.empty() ? "" : ", ") + nm(g, w.member) + " " + read_kind_name(w.kind) +
                      (w.axis < 0 ? " (broadcast)" : " along axis " + std::to_string(w.axis));
        r.candidates.push_back({Layout{}, bytes * reads({}), 0,
                                "every reader reads it as stored (axis " + std::to_string(inner) + " innermost): " + walked});
        for (int a : strided_axes)
            r.candidates.push_back({with_innermost(a, n.type.rank()), bytes * (model.rates.conversion_cost + reads({a})), 0,
                                    "one copy with axis " + std::to_string(a) + " innermost, read by every reader walking axis " +
                                        std::to_string(a)});
        size_t each = 0;  // the naive alternative: a copy of its own per strided reader
        // A member reading the value (a transpose, say) may feed several walks; it reads one copy.
        std::map<ValueId, int> strided_members;  // member -> the axis its first strided walk walks
        for (const Walk &w : walks)
            if (w.axis >= 0 && w.axis != inner) strided_members.emplace(w.member, w.axis);
        const int strided_readers = (int)strided_members.size();
        if (strided_readers > 1) {
            r.candidates.push_back({with_innermost(*strided_axes.begin(), n.type.rank()),
                                    bytes * (model.rates.conversion_cost * strided_readers + reads(strided_axes)), 0,
                                    "a copy of its own for each of the " + std::to_string(strided_readers) + " strided readers"});
            each = r.candidates.size() - 1;
        } else {
            each = 1;
        }
        switch (options.conversions) {
        case LayoutOptions::Conversions::Chosen:
            for (size_t i = 1; i < r.candidates.size(); i++)
                if (r.candidates[i].per_call_bytes < r.candidates[r.chosen].per_call_bytes * 0.98) r.chosen = i;
            r.reason = r.chosen == 0 ? "forcing the stored layout is within 2% of the cheapest conversion or cheaper"
                                     : "a conversion costs less than the strided reads it replaces";
            break;
        case LayoutOptions::Conversions::Never: r.reason = "conversions are off (LayoutOptions::conversions)"; break;
        case LayoutOptions::Conversions::EachReader:
            r.chosen = each;
            r.reason = "a copy per strided reader (LayoutOptions::conversions)";
            break;
        }
        if (r.chosen > 0 && r.chosen == each && strided_readers > 1) {
            for (const auto &[member, axis] : strided_members)
                copies.push_back({v, with_innermost(axis, n.type.rank()), {member}});
        } else if (r.chosen > 0) {
            Pending p{v, r.candidates[r.chosen].layout, {}};
            for (const auto &[member, axis] : strided_members)
                if (axis == innermost_axis(p.layout, n.type.rank())) p.members.push_back(member);
            copies.push_back(std::move(p));
        }
        out.regions.push_back(std::move(r));
    }
    for (const Pending &c : copies) {
        const int axis = innermost_axis(c.layout, g.node(c.value).type.rank());
        const ValueId id = insert_copy(g, c.value, c.layout, c.members, copy_name(g, c.value, axis));
        for (LayoutRegion &r : out.regions)
            if (r.value == c.value && r.kind == LayoutRegion::Kind::PerCall) r.copies.push_back(id);
        out.conversions++;
    }
}

}  // namespace

LayoutPlan assign_layouts(Graph &g, const FusionPlan &plan, const LayoutOptions &options) {
    LayoutPlan out;
    out.rates = options.model.rates.source;
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
            if (mm == kNoValue)
                other = nm(g, u) + " (" + to_string(g.node(u).op) + ")";
            else
                matmuls.push_back(mm);
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
                    if (panels)
                        total += weight * bytes / model.rates.panel_rate[LayoutRates::weight_kind(t.dtype)][f];
                    else
                        total += weight * bytes * (f == 3 ? 1.0 + model.gemm_pack_bytes : 1.0);
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
            auto it = std::find_if(r.candidates.begin(), r.candidates.end(),
                                   [&](const LayoutCandidate &c) { return c.layout == n.layout; });
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
            const Layout chosen = r.candidates[r.chosen].layout;
            if (n.op == Op::Input && !chosen.empty()) {
                // The caller's weight stays as the caller stores it (f32 row-major, what a
                // library's entries take); a copy in the chosen layout is computed from it
                // once, when the weights are prepared.
                r.copies.push_back(insert_copy(g, v, chosen, r.readers, unique_name(g, g.display_name(v) + ".prepared")));
                r.reason += "; a copy of the weight, converted once when the weights are prepared";
                out.conversions++;
            } else {
                g.node(v).layout = chosen;
            }
        }
        out.regions.push_back(std::move(r));
    }
    assign_per_call(g, plan, options, shapes, out);
    return out;
}

std::string LayoutPlan::to_string(const Graph &g) const {
    std::ostringstream os;
    os << "layout assignment: " << regions.size() << " region(s), " << conversions << " conversion(s) inserted\n";
    if (!regions.empty() && !rates.empty()) os << "rates: " << rates << "\n";
    auto name = [](const Layout &l) { return l.empty() ? std::string("row_major") : dsl::to_string(l); };
    for (const LayoutRegion &r : regions) {
        const bool per_call = r.kind == LayoutRegion::Kind::PerCall;
        os << "region " << nm(g, r.value) << " : " << print_type(g, g.node(r.value).type)
           << (per_call ? " (per call, stored " + name(g.node(r.value).layout) + ")" : "") << ", read per call by";
        for (ValueId u : r.readers) os << " " << nm(g, u);
        os << "\n";
        for (size_t i = 0; i < r.candidates.size(); i++) {
            const LayoutCandidate &c = r.candidates[i];
            os << "  " << (i == r.chosen ? "* " : "  ");
            if (per_call)
                os << (i == 0 ? "no copy" : "copy to " + name(c.layout));
            else
                os << name(c.layout);
            os << ": " << (int64_t)c.per_call_bytes << " B per call" << (i == 0 ? " (forcing the producer's layout)" : "");
            if (!per_call) os << ", one-time " << c.one_time_bytes << " B";
            os << "; " << c.why << "\n";
        }
        os << "  -> "
           << (per_call ? (r.chosen == 0 ? std::string("no copy") : "copy to " + name(r.candidates[r.chosen].layout))
                        : name(r.candidates[r.chosen].layout))
           << ": " << r.reason;
        for (ValueId c : r.copies) os << (c == r.copies.front() ? "; inserted " : ", ") << nm(g, c);
        os << "\n";
    }
    return os.str();
}

}  // namespace tessel::dsl
