/** \file
 * Layout assignment: chooses the physical layout (dsl/ir/Layout.h) of every value whose layout
 * is Tessel's to choose, weighing the per-call cost of each of its readers over the whole
 * consumer graph, and writes the choice into the value's `layout` slot.
 *
 * Two kinds of region, each one value with all its per-call readers.
 *
 * Weights and prepared values. A weight and a value prepared from weights
 * (FusionGroup::prepared) is stored once and read on every call, so converting it costs nothing
 * per call: its layout is free to choose, and the conversion's one-time cost (bytes moved when
 * preparing) is reported. Candidates: row-major as the graph states it (the producer's layout,
 * what "forcing one layout through" means here) and panels of the register block's width for a
 * value read as a matmul's right operand. Each gets a per-call cost: the sum over the expected
 * shapes (a profile, or the fusion estimate's symbol sizes) of each reader's bytes divided by the
 * rate at which the loop nest serving that shape reads the layout (LayoutCostModel). A prepared
 * value is written in the chosen layout; a weight itself stays as the caller stores it (f32
 * row-major, what a generated library takes), and a `copy` of it in the chosen layout is inserted
 * for its readers: computed from weights alone, it is prepared once (JIT and library alike).
 *
 * Per-call values. Any other value a kernel reads from memory (an activation input, a group's
 * output) is stored as its producer writes it: row-major here (matmul groups write row-major,
 * and activation inputs are the caller's). Each reader walks the value along one axis in its
 * innermost loop (an elementwise reader along the last axis of what it reads, a reduction or
 * softmax along its operand's last axis), traced through the transposes inside the reader's
 * group: `reduce_sum(transpose(y), axes=[1])` walks y's axis 0. A reader walking an axis that is
 * not the stored innermost one reads strided (gathers). Candidates: forcing the stored layout on
 * every reader (each pays its strided rate), or a conversion — a `copy` into the layout with the
 * walked axis innermost, which the readers walking that axis read instead (one copy per axis,
 * shared by all of them; the copy's own cost counted). Cost: per reader and pass, the value's
 * bytes times the measured cost of that read kind walking the innermost axis or another
 * (LayoutCostModel::read_cost), plus conversion_cost per byte for each copy. Regions with no
 * strided reader are not listed (nothing to decide). A producer writing the value in the
 * readers' layout is not a candidate yet (matmul groups write row-major; elementwise producers
 * could, reading their own operands strided instead).
 *
 * Exactness. A region's choice changes only what its own readers read (a copy is read
 * contiguously by its readers; the producer's layout does not change), so regions are
 * independent and choosing each region's cheapest candidate is exact for the whole graph, chain,
 * tree or DAG. The plan logs, per region, every candidate's cost (the chosen one, forcing the
 * producer's layout, the best alternative) and why.
 *
 * Never changed: an activation input or a graph output (the caller's buffer, in the layout the
 * text states: a conversion of it is a new value), a value whose layout the text or the builder
 * set (the user's decision; its region is reported as forced), and a value a matmul group writes.
 *
 * Why it is legal. A layout changes where elements live, never their values: every kernel reads
 * and writes a value through its layout (lowering/LowerToHalide.h maps logical indices to
 * physical coordinates), a weight is converted when it is prepared (CompiledGraph), and a copy
 * has its operand's values (OpKinds.def), so the results are the same bit for bit under any
 * assignment.
 *
 * Changing the graph. A conversion inserts a `copy` node before its first reader and points the
 * readers at it: the fusion plan given is then stale, and LayoutPlan::conversions says so; plan
 * fusion again (the `layout-conversion` rule keeps each copy a group of its own, so every other
 * group is as before).
 */
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"

namespace tessel::dsl {

/** The rates the layout cost model weighs, in units of a reference read on the same machine:
 * what `tessel db probe` measures per machine and vector ISA (driver/LayoutRatesProbe.h) and the
 * tuning database stores beside the machine numbers. defaults() are one Zen 4 host's, used where
 * this machine has none stored (LayoutPlan says which). The nest families are the CPU schedule's
 * (schedules/MatmulCpuSchedules.h): gemv (M == 1), decode (M < mr), split-K gemm
 * (mr <= M <= decode_max_m), gemm (larger M). */
struct LayoutRates {
    static constexpr int kFamilies = 4;
    /** A weight's storage width: 32-bit (f32) or 16-bit (bf16, f16, widened in registers). The
     * nests read the two differently (a 16-bit panel row is half a cache line per 16 columns). */
    enum WeightKind { Wide, Narrow, kWeightKinds };
    static WeightKind weight_kind(DType stored) { return byte_size(stored) <= 2 ? Narrow : Wide; }
    /** What reads a per-call value in its innermost loop. */
    enum ReadKind { Elementwise, Reduction, Softmax, kReadKinds };

    /** Read rate of w in panels relative to w row-major (the row-major time over the panel time,
     * > 1: panels are faster), per weight kind and nest family. */
    double panel_rate[kWeightKinds][kFamilies] = {{1.0, 1.0, 1.0, 1.0}, {1.0, 1.0, 1.0, 1.0}};
    /** Time of one reader of each kind over a value, per byte, walking the stored innermost
     * axis ([k][0]) or another ([k][1]), in units of a contiguous elementwise pass (read + write). */
    double read_cost[kReadKinds][2] = {{1.0, 4.0}, {0.5, 8.0}, {1.5, 9.0}};
    /** Time of a copy into another order (strided read, contiguous write), same units. */
    double conversion_cost = 3.3;
    /** Where the rates come from, as the plan reports it ("measured on this machine ...", "defaults ..."). */
    std::string source;

    /** The rates measured on one AMD Zen 4 host (AVX-512) by `make bench` and `make bench-memory`
     * (docs/results/measurement_notes.md, panel-rates; docs/results/layout_chains_cpu.txt). */
    static LayoutRates defaults();
    /** Every rate positive and finite; else a message naming the first that is not. */
    std::string invalid_reason() const;
};

/** How the layout pass prices a layout: the target's register blocking (which fixes the panel
 * width and the nest families) and the machine's rates. */
struct LayoutCostModel {
    int panel_width = 48;   ///< columns of the register block (CpuBlocking::nr)
    int mr = 8;             ///< rows of the register block
    int decode_max_m = 16;  ///< largest M of the split-K nests
    LayoutRates rates;      ///< unit rates (all 1) unless set: tests set their own
    /** Extra bytes per byte of w the gemm nest moves packing a row-major w per call (read strided,
     * write the panel); panels are packed once, when the weight is prepared. 0 when the rates are
     * measured (the packing is inside the measured gemm rate). */
    double gemm_pack_bytes = 1.0;
    using ReadKind = LayoutRates::ReadKind;
    static constexpr ReadKind Elementwise = LayoutRates::Elementwise, Reduction = LayoutRates::Reduction,
                              Softmax = LayoutRates::Softmax;
    /** The blocking given with `rates` (LayoutRates::defaults() when none are stored). */
    static LayoutCostModel measured(int panel_width, int mr, int decode_max_m, const LayoutRates &rates);
    int family(int64_t m) const;
};

struct LayoutCandidate {
    Layout layout;               ///< per-call regions: the layout of the copy (empty: no copy)
    double per_call_bytes = 0;   ///< cost per call, in bytes read at the row-major rate
    int64_t one_time_bytes = 0;  ///< converting when prepared (0: the layout it is computed in)
    std::string why;
};

struct LayoutRegion {
    enum class Kind { Weight, PerCall } kind = Kind::Weight;
    ValueId value = kNoValue;
    std::vector<ValueId> readers;             ///< per-call ops that read the value
    std::vector<LayoutCandidate> candidates;  ///< candidates[0] is the producer's (row-major)
    size_t chosen = 0;
    bool forced = false;  ///< the text set the layout; not changed
    std::string reason;
    std::vector<ValueId> copies;  ///< the copies inserted (a weight's: its prepared copy)
};

struct LayoutPlan {
    std::vector<LayoutRegion> regions;
    std::string rates;    ///< where the model's rates came from (LayoutRates::source)
    int conversions = 0;  ///< copies inserted: plan fusion again
    /** Per region: the value, its readers, each candidate's cost, the choice and why. */
    std::string to_string(const Graph &g) const;
};

struct LayoutOptions {
    LayoutCostModel model;
    /** Expected calls: symbol bindings with a weight each (e.g. a shape profile's counts). Empty:
     * the fusion plan's symbol sizes, weight 1. */
    std::vector<std::pair<std::map<std::string, int64_t>, double>> shapes;
    /** Per-call regions: the cheapest candidate (Chosen), never a copy (Never: every reader
     * reads the stored layout), or a copy of its own for every strided reader (EachReader). The
     * last two are the alternatives benchmarks compare the choice with. */
    enum class Conversions { Chosen, Never, EachReader } conversions = Conversions::Chosen;
};

/** Assigns layouts to the weights and prepared values of `g` planned as `plan`, inserts the
 * conversions that pay for per-call values, and returns the regions with their costs. Changes
 * only `layout` slots and, for conversions, adds copies (see the file comment). */
LayoutPlan assign_layouts(Graph &g, const FusionPlan &plan, const LayoutOptions &options);

}  // namespace tessel::dsl
