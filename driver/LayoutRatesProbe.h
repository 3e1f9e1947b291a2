/** \file
 * The layout pass's rates (dsl::LayoutRates), measured on this machine for one CPU target, as
 * `tessel db probe` stores them beside the machine numbers (autoscheduler/MachineNumbers.h).
 *
 * Panel rates: for each weight width (f32, bf16 widened in registers) and each nest family of
 * the CPU matmul schedule (gemv M = 1, decode M < mr, split-K mr <= M <= decode_max_m, gemm),
 * x @ w with w stored row-major and with w stored in panels of the register block's width, each
 * compiled once with the schedule plan() gives it (the library's, fitted to the layout) and the
 * four timed interleaved per family (support/Interleaved.h). The rate is the median over the
 * rounds of the row-major time over the panel time of the same width. The three decode families
 * read w once per call and are timed after a cache flush, as the decode benchmark rows are; the
 * gemm family warm.
 *
 * Read costs: an elementwise (exp), a reduction (row sums) and a softmax kernel over a
 * 1024 x 1024 f32 value, reading it contiguously and through a transpose, and a copy into the
 * other order, timed interleaved, each in units of the contiguous elementwise kernel.
 *
 * About 15 s on 2 cores, most of it compiling the 11 kernels. Measure on a quiet machine: the
 * rates are ratios of same-run medians, but a busy neighbour still skews a family's rounds.
 */
#pragma once

#include "dsl/passes/LayoutAssignment.h"

#include <Halide.h>

#include <string>
#include <vector>

namespace tessel {

struct LayoutRatesMeasurement {
    dsl::LayoutRates rates;  ///< source: "measured on this machine ..."
    /** One line of the table: what was compared, the two medians, the measured ratio, and what
     * LayoutRates::defaults() assumed for it. */
    struct Row {
        std::string what;
        double reference_ms = 0, variant_ms = 0, measured = 0, assumed = 0;
    };
    std::vector<Row> rows;
    std::string target;
    /** The rows as a table, with how each was measured. */
    std::string to_string() const;
};

/** Measures the rates for CPU `target` with `rounds` timed rounds per comparison. Throws
 * std::invalid_argument for a GPU target. */
LayoutRatesMeasurement measure_layout_rates(const Halide::Target &target, int rounds = 9);

/** The read costs and the conversion cost alone (what `make bench-memory` reports): the rows of
 * those comparisons; the panel rates of `rates` are left at 1. */
LayoutRatesMeasurement measure_layout_read_costs(const Halide::Target &target, int rounds = 9);

}  // namespace tessel
