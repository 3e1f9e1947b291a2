/** \file
 * The key of a tuning record: everything a tuned schedule's validity depends on, as a versioned
 * structure. A database lookup hits only when every part matches; nothing is matched loosely.
 *
 * Parts (a change in any one of them is a different key):
 *  - group_hash:     structural_hash() of the fusion group: ops, dtypes, layouts, attributes,
 *                    static extents, the group's internal edges and its interface (input and
 *                    output types). Value names and ids do not take part.
 *  - shape_class:    a named workload class ("decode", "square", "mlp"), or empty.
 *  - shapes:         exact extents of the symbolic dims, canonical "K=4096,M=1,N=4096" (sorted by
 *                    name; format_shapes()). Empty when the graph fixes every extent.
 *  - target:         the full Halide target string, features included ("x86-64-linux-avx2-fma").
 *  - numeric_mode:   "exact", "strict" or "fast" (the graph's dsl::NumericMode).
 *  - space_version:  version of the schedule search space that produced the schedule.
 *  - tessel_version, halide_version: the compiler versions ("0.1.0", "21.0.0").
 *  - schema_version: the format of the key itself (kTuningKeySchemaVersion).
 *
 * Example:
 *   TuningKey k = TuningKey::current();           // versions filled in for this build
 *   k.group_hash = structural_hash(g, plan.groups[0]);
 *   k.shapes = format_shapes({{"M", 1}, {"K", 4096}});
 *   k.target = "x86-64-linux-avx2-fma-sse41"; k.numeric_mode = "strict"; k.space_version = 1;
 *   k.to_string();  // "tk1 group=3f2a... class=- shapes=K=4096,M=1 target=x86-64-linux-avx2-..."
 */
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"

namespace tessel::autosched {

/** Version of the TuningKey format. Bump it when a part is added, removed or re-defined (for
 * example when structural_hash() starts covering something new); old records then miss. */
constexpr int kTuningKeySchemaVersion = 1;

/** A JSON document that is not a valid tuning key or record; what() names the field. */
class TuningKeyError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct TuningKey {
    std::string group_hash;
    std::string shape_class;
    std::string shapes;
    std::string target;
    std::string numeric_mode;
    int space_version = 0;
    std::string tessel_version;
    std::string halide_version;
    int schema_version = kTuningKeySchemaVersion;

    /** A key with tessel_version, halide_version and schema_version of this build and the
     * other parts empty. */
    static TuningKey current();

    /** One line, every part labelled, for logs and `tessel db ls`. Not parsed back. */
    std::string to_string() const;
    /** An object with one field per part. Keys are sorted, so dump() is a canonical text: two
     * keys are equal exactly when their dumps are. */
    nlohmann::json to_json() const;
    /** Inverse of to_json(). Throws TuningKeyError on a missing or mistyped field. Does not
     * check that the versions are this build's (an old key simply never hits). */
    /** Throws TuningKeyError naming the field by its path under `path` and the expected and found type. */
    static TuningKey from_json(const nlohmann::json &j, const std::string &path = "key");

    bool operator==(const TuningKey &o) const = default;
};

/** "0.1.0": the project version from the top-level CMakeLists. */
std::string tessel_version();
/** "21.0.0": the Halide headers this build compiled against. */
std::string halide_version();

/** Canonical text of exact extents: sorted by name, "K=4096,M=1,N=4096". Empty map: "". */
std::string format_shapes(const std::map<std::string, int64_t> &extents);
/** "exact", "strict" or "fast". */
std::string to_key_string(dsl::NumericMode mode);

/** The canonical text structural_hash() hashes, one line per member (useful when two hashes
 * differ unexpectedly). Members are visited depth-first from the group's outputs (operands in
 * order), so program-order interleavings of independent ops do not matter; values outside the
 * group are numbered interface inputs in order of first use; symbolic dims are numbered in order
 * of first appearance (renaming M to B keeps the hash). Covers: op, dtype, dims (static sizes),
 * layout tag, the attributes the op carries (constants bit for bit), operand edges, which
 * members are outputs and in which order, and each interface input's type and layout.
 * Does not cover: value names, ids, the group's id or name, nodes outside the group. */
std::string structural_descriptor(const dsl::Graph &g, const dsl::FusionGroup &group);
/** As above; `interface` receives the values outside the group in their numbering (in0, in1, ...). */
std::string structural_descriptor(const dsl::Graph &g, const dsl::FusionGroup &group, std::vector<dsl::ValueId> &interface);
/** As above, with the constant members for which `lifted` holds written without their values
 * ("value=arg<i>"), numbered in walk order, which `lifted_order` receives: two groups that differ
 * only in those values have one descriptor (compiler/KernelReuse: constants as a kernel argument). */
std::string structural_descriptor(const dsl::Graph &g, const dsl::FusionGroup &group, std::vector<dsl::ValueId> &interface,
                                  const std::function<bool(dsl::ValueId)> &lifted, std::vector<dsl::ValueId> &lifted_order);

/** 32 hex digits: the 128-bit FNV-1a hash of structural_descriptor(). */
std::string structural_hash(const dsl::Graph &g, const dsl::FusionGroup &group);

}  // namespace tessel::autosched
