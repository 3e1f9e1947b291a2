/** \file
 * The generated part of a library `tessel lib` writes (driver/KernelLibrary.h): its public
 * header, and an entry source that is DATA over the C runtime (runtime/tessel_runtime.h) — the
 * arguments and every intermediate with its sizes as expressions of the graph's symbols, the
 * memory plans (allocations, live steps, the conflict table the runtime packs over on each
 * call), the placements of each entry, per target every group's extents, kernel arguments,
 * variants and guards, the targets' CPU features — plus the kernels' declarations and thin entry
 * functions that hand the tables to tessel_library_call. No rule is written here: the checks,
 * packing, guards, dispatch and profile are the runtime's.
 *
 * Legal for plans write_kernel_library accepts (every op in a kernel, extents static or
 * symbols, entry buffers f32 row-major); throws std::invalid_argument otherwise.
 */
#pragma once

#include "dsl/analysis/BufferAssignment.h"
#include "dsl/ir/Graph.h"
#include "lowering/CompiledGraph.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace tessel {

/** A C and C++ identifier for a graph name: other characters become '_', a leading digit gets
 * a letter, and a keyword gets a trailing '_' (`%do` is the parameter `do_`). */
std::string library_identifier(const std::string &s);

/** Whether the group's output is a view of its operand in `memory` (no kernel runs for it). */
bool is_view_group(const CompiledKernel &k, const dsl::BufferAssignment &memory);

/** One compiled copy of the graph's kernels, for one target. */
struct LibraryTarget {
    std::string suffix;                 ///< appended to every kernel's name: "avx512"...
    std::vector<std::string> features;  ///< the CPU features its code needs
    std::string target;                 ///< Halide's target string, for messages
    const CompiledGraph *program;
};

class LibraryTables {
public:
    /** `targets` best first. `kept`: the memory plan with the prepared groups' outputs kept
     * between calls (Kind::Prepared), for graphs with prepared groups: then the prepare-weights
     * entries are written too. */
    LibraryTables(const dsl::Graph &g, std::vector<LibraryTarget> targets, const dsl::BufferAssignment &memory,
                  const dsl::BufferAssignment *kept, std::string name);
    /** Cache writes (update_tail results) that may not share their cache's buffer, with the
     * reason (the memory plan's cache-write rule with the caches donated); the others may. */
    std::map<dsl::ValueId, std::string> cache_write_refusals;

    /** `<name>.h`: the entries' declarations, with the arguments and their types. */
    std::string header() const;
    /** `<name>_entry.cpp`: the tables and the thin entries (compiled as C++ without exceptions;
     * includes the kernels' headers, tessel_parallel_loop.h and tessel_runtime.h). */
    std::string source() const;

private:
    struct Arg {
        dsl::ValueId value;
        std::string c;
        bool output;
    };
    std::string parameters_of(const std::vector<Arg> &args) const;
    std::vector<dsl::Dim> dims(dsl::ValueId v) const;
    std::string dim_entry(const dsl::Dim &d) const;
    int slot_of(dsl::ValueId v) const;
    int max_rank() const;  ///< the most dimensions of any slot's descriptor
    void write_values(std::ostream &s) const;
    void write_plan(std::ostream &s, const std::string &name, const dsl::BufferAssignment &memory) const;
    void write_placements(std::ostream &s, const std::string &name, const dsl::BufferAssignment &memory,
                          bool prepared_only) const;
    std::string write_groups(std::ostream &s, size_t t) const;
    void write_entries(std::ostream &s) const;

    const dsl::Graph &g_;
    std::vector<LibraryTarget> targets_;
    const dsl::BufferAssignment &memory_;
    const dsl::BufferAssignment *kept_;
    std::string name_;
    std::vector<Arg> args_, weights_;     ///< entry arguments (inputs in program order, outputs); weights among them
    std::vector<dsl::ValueId> slots_;     ///< every slot's value: the arguments, then the intermediates
    std::vector<dsl::ValueId> prepared_;  ///< kept_'s prepared values, in the block's order
    std::vector<std::string> symbols_;    ///< sorted
};

}  // namespace tessel
