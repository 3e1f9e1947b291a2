/** \file
 * What `tessel compile --emit memplan` writes, and the plan ahead-of-time output carries: a
 * compiled graph's memory plan (dsl/analysis/BufferAssignment.h) for concrete sizes under both
 * reuse policies, with the rematerialization decisions that shaped the graph.
 *  - `<base>.memplan.txt`: the serial plan's table (buffer, bytes, live range, offset, storage,
 *    aliasing decisions, orderings added), the peak under no-concurrent reuse, remat decisions;
 *  - `<base>.memplan.svg`: the timeline (buffers as boxes over step x offset, peak and bound);
 *  - `<base>.memplan.json`: sizes, the arena size and each buffer's offset and storage kind, the
 *    form a generated library's workspace is laid out by.
 */
#pragma once

#include "dsl/passes/Rematerialize.h"
#include "lowering/CompiledGraph.h"

#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace tessel {

struct MemoryPlanReport {
    std::map<std::string, int64_t> symbols;
    dsl::BufferAssignment serial, no_concurrent;
    std::optional<dsl::RematResult> remat;

    /** The summary line: naive / planned / bound under both policies. */
    std::string summary() const;
    std::string text(const dsl::Graph &g) const;
    std::string json(const dsl::Graph &g) const;
};

/** Both policies' plans; `donated`: inputs whose storage the caller gives up (in-place updates, cache writes). */
MemoryPlanReport memory_plan_report(const CompiledGraph &program, const std::map<std::string, int64_t> &symbols,
                                    std::optional<dsl::RematResult> remat = std::nullopt,
                                    const std::set<std::string> &donated = {});

/** Writes the three files into `dir`; returns their paths. */
std::vector<std::filesystem::path> write_memory_plan(const dsl::Graph &g, const MemoryPlanReport &report,
                                                     const std::filesystem::path &dir, const std::string &base);

}  // namespace tessel
