/** \file
 * Physical layout of a tensor value: how its logical (row-major, as the graph states it) elements
 * are placed in memory. A layout is a dimension order plus at most one panel blocking:
 *
 *   order   the logical axes from the outermost physical dimension to the innermost; empty
 *           means row-major (0, 1, ..., rank-1). `[1, 0]` on a [N, K] tensor stores it K-major,
 *           which is a [K, N] row-major buffer: the layout a transpose can be read through.
 *   panels  axis `panel_axis` cut into panels of `panel_width` elements: the panel index becomes
 *           the outermost physical dimension and the offset within the panel the innermost; the
 *           last panel is padded (with zeros when a prepared weight is written). On a [K, N]
 *           matmul operand, panels(axis=1, width=NR) is [N/NR][K][NR]: the NR columns a register
 *           block reads, contiguous for all K (what the CPU GEMM nest packs per call otherwise).
 *
 * Text form (inside the `layout="..."` attribute): `row_major`, `[1, 0]`,
 * `panels(axis=1, width=48)`, or both: `[1, 0] panels(axis=0, width=48)`. parse_layout() and
 * to_string() round-trip; the default layout prints as nothing (no attribute).
 *
 * The element type a value is stored in is its dtype (an f16/bf16 value is stored in 16 bits and
 * computed in f32 by the kernels that read it), so it is not part of Layout.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessel::dsl {

struct Layout {
    std::vector<int> order;   ///< logical axes, outermost physical first; empty = row-major
    int panel_axis = -1;      ///< axis cut into panels, or -1
    int64_t panel_width = 0;  ///< elements per panel when panel_axis >= 0

    bool empty() const { return order.empty() && panel_axis < 0; }
    bool has_panels() const { return panel_axis >= 0; }
    bool operator==(const Layout &o) const {
        return order == o.order && panel_axis == o.panel_axis && panel_width == o.panel_width;
    }
    bool operator!=(const Layout &o) const { return !(*this == o); }

    static Layout row_major() { return {}; }
    static Layout ordered(std::vector<int> order) { return Layout{std::move(order), -1, 0}; }
    static Layout panels(int axis, int64_t width, std::vector<int> order = {}) { return Layout{std::move(order), axis, width}; }
    /** The same layout with a row-major order written as empty, so equal layouts compare equal. */
    Layout canonical() const;
};

/** "" for row-major, else the text form above. */
std::string to_string(const Layout &l);
/** Parses the text form; nullopt with *error saying what is wrong. Does not check the rank (see
 * check_layout) and keeps an identity order as written (canonical() drops it once checked). */
std::optional<Layout> parse_layout(const std::string &text, std::string *error);
/** Why `l` is not a layout of a rank-`rank` tensor ("" when it is): the order must be a
 * permutation of 0..rank-1, the panel axis an axis, the width >= 1. */
std::string check_layout(const Layout &l, int rank);

/** The layout of transpose(x, perm) that keeps every element where x's layout `operand` (of a
 * rank perm.size() tensor) stores it: with it the transpose is a bitcast, no data moves (XLA
 * makes such transposes bitcasts too). transpose(x) of a row-major [M, N] x is [1, 0]. */
Layout transposed_layout(const Layout &operand, const std::vector<int64_t> &perm);

/** One physical dimension: which logical axis it indexes, and how. */
struct PhysicalDim {
    enum class Part { Whole, PanelIndex, InPanel };
    int axis = 0;
    Part part = Part::Whole;
    int64_t width = 0;  ///< panel width (PanelIndex, InPanel)
};

/** The physical dimensions of a rank-`rank` tensor in layout `l`, outermost first. */
std::vector<PhysicalDim> physical_dims(const Layout &l, int rank);

/** Extent of a physical dimension given the logical extent of its axis. */
inline int64_t physical_extent(const PhysicalDim &p, int64_t logical) {
    switch (p.part) {
    case PhysicalDim::Part::Whole: return logical;
    case PhysicalDim::Part::PanelIndex: return (logical + p.width - 1) / p.width;
    case PhysicalDim::Part::InPanel: return p.width;
    }
    return logical;
}

/** Physical shape (outermost first) of a tensor of logical shape `shape` in layout `l`. */
std::vector<int64_t> physical_shape(const Layout &l, const std::vector<int64_t> &shape);

/** Physical coordinates of the logical index `idx` (outermost first). Works on any integer-like
 * type with / and % (int64_t, Halide::Expr). */
template <typename Index>
std::vector<Index> physical_index(const std::vector<PhysicalDim> &dims, const std::vector<Index> &idx) {
    std::vector<Index> out;
    out.reserve(dims.size());
    for (const PhysicalDim &p : dims) {
        const Index &i = idx[p.axis];
        if (p.part == PhysicalDim::Part::Whole)
            out.push_back(i);
        else if (p.part == PhysicalDim::Part::PanelIndex)
            out.push_back(i / (int)p.width);
        else
            out.push_back(i % (int)p.width);
    }
    return out;
}

/** Logical index (outermost first) of the physical coordinates `phys`: the inverse of
 * physical_index on the tensor's elements. */
template <typename Index>
std::vector<Index> logical_index(const std::vector<PhysicalDim> &dims, const std::vector<Index> &phys, int rank) {
    std::vector<Index> idx(rank, Index(0));
    std::vector<bool> set(rank, false);
    for (size_t d = 0; d < dims.size(); d++) {
        const PhysicalDim &p = dims[d];
        if (p.part == PhysicalDim::Part::Whole)
            idx[p.axis] = phys[d];
        else if (p.part == PhysicalDim::Part::PanelIndex)
            idx[p.axis] = phys[d] * (int)p.width + (set[p.axis] ? idx[p.axis] : Index(0));
        else
            idx[p.axis] = (set[p.axis] ? idx[p.axis] : Index(0)) + phys[d];
        set[p.axis] = true;
    }
    return idx;
}

}  // namespace tessel::dsl
