/** \file
 * MachineNumbers: what this machine measured, once, for the cost model — the FMA peak of the
 * register-only probe at the target's vector width and the cold streaming read bandwidth, both
 * on every core (autoscheduler/MachineProbes.h) — stored in the tuning database beside the
 * records, keyed by the machine's identity and the vector ISA. TargetModel::with_numbers puts
 * them in place of the nominal constants (clock and DRAM bandwidth), so the model's
 * peak and bandwidth are this machine's.
 *
 * Identity: /proc/cpuinfo's vendor, model name, family/model/stepping, the number of online CPUs
 * and a hash of the feature flags. Two guests on the same host type share it; a different
 * core, count or feature set does not. It does not enter the tuning key: a record is a schedule
 * measured for a target ISA, portable between machines of that ISA (imported ones are verified
 * before use), while the numbers are facts about one machine.
 *
 * Beside them, per machine and ISA, the layout pass's rates (dsl::LayoutRates: panel read rates
 * per weight width and nest family, strided read and conversion costs), measured by `tessel db
 * probe` (driver/LayoutRatesProbe.h) and stored as a JSON document (layout_rates_to_json); plan()
 * uses this machine's when stored, LayoutRates::defaults() otherwise.
 *
 * When: `tessel db probe` measures and stores them; `tessel tune` measures once when the
 * database has none for this machine and ISA. Elsewhere (the model's pick in `tessel run`) the
 * stored numbers are used when present, the nominal ones otherwise, and the model says which.
 */
#pragma once

#include <Halide.h>
#include <nlohmann/json.hpp>

#include "dsl/passes/LayoutAssignment.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tessel::autosched {

struct MachineNumbers {
    std::string machine;    ///< machine_identity()
    std::string isa;        ///< "avx512" or "avx2": the probe's vector width
    double fma_gflops = 0;  ///< FMA probe, all cores
    double read_gbps = 0;   ///< cold streaming read, all cores (median of the rounds)
    int threads = 0;
    int64_t measured_unix = 0;
    /** "348.8 GFLOP/s FMA, 29.5 GB/s cold read (avx512, 2 threads, measured 2026-12-01)". */
    std::string to_string() const;
};

/** This machine's identity (see the file comment). */
std::string machine_identity();

/** The vector ISA of the probe for `target`: "avx512" when the target has AVX-512 (and the CPU
 * runs it), else "avx2". */
std::string probe_isa(const Halide::Target &target);

/** Runs the probes for `target`'s ISA on `threads` threads (0: every core), about a second: the FMA
 * peak is the best of 15 rounds (a shared machine only ever slows a round down), the read
 * bandwidth the median of 7 reads of 64 MiB, each after a cache flush. */
MachineNumbers measure_machine(const Halide::Target &target, int threads = 0);

/** dsl::LayoutRates as stored: {"panel_rate": {"wide": [gemv, decode, splitk, gemm], "narrow":
 * [...]}, "read_cost": {"elementwise": [contiguous, strided], "reduction": [...], "softmax": [...]},
 * "conversion_cost": c}. The source is not stored (it is said on load). */
nlohmann::json layout_rates_to_json(const dsl::LayoutRates &r);
/** The rates of a stored document, `source` set to say they were measured on this machine for
 * `isa` at `measured_unix`. Throws std::invalid_argument naming the first part missing or not a
 * positive finite number (a document from another version, a hand edit): such rates are never
 * used. */
dsl::LayoutRates layout_rates_from_json(const nlohmann::json &j, const std::string &isa, int64_t measured_unix);

}  // namespace tessel::autosched
