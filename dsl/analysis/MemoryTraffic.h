/** \file
 * Memory traffic estimates: bytes read and written through memory by a graph run op by op, and
 * by the same graph run as fusion groups. Sizes of symbolic dims come from a map (unbound symbols
 * and unresolved shape code use kDefaultSymbolSize from Fusion.h).
 *
 * The model is the ideal one: each op (or group) reads each distinct operand once and writes its
 * result once; caches and re-reads inside a kernel are not modelled. Ops outside kernels
 * (effects, shape code) and inputs are not counted; constants count as reads only when unfused.
 *
 *   int64_t b = value_bytes(g, g.find("x"), {{"M", 64}, {"K", 128}});   // 64*128*4
 */
#pragma once

#include <map>
#include <string>
#include <vector>

#include "dsl/passes/Fusion.h"

namespace tessel::dsl {

using SymbolSizes = std::map<std::string, int64_t>;

/** Products and sums of estimates saturate at kMaxEstimate (2^61, so read + written still fits) instead of overflowing: the
 * graph's types allow up to 2^62 elements per tensor and unbound symbols get a default size, so
 * an estimate over many of them may not fit in int64 (found by fuzz_lower). */
constexpr int64_t kMaxEstimate = int64_t(1) << 61;
inline int64_t saturating_mul(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) || r > kMaxEstimate || r < -kMaxEstimate ? kMaxEstimate : r;
}
inline int64_t saturating_add(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) || r > kMaxEstimate ? kMaxEstimate : r;
}

/** Concrete size of dim d (static, bound symbol, constant shape code, else kDefaultSymbolSize). */
int64_t dim_size(const Graph &g, const Dim &d, const SymbolSizes &sizes);
/** Number of elements of v's type (saturating at kMaxEstimate, as value_bytes and the traffic sums). */
int64_t value_numel(const Graph &g, ValueId v, const SymbolSizes &sizes);
/** Bytes of v's type (numel * element size). */
int64_t value_bytes(const Graph &g, ValueId v, const SymbolSizes &sizes);

/** Unfused: every op in `ops` reads each distinct operand and writes its result. */
TrafficEstimate estimate_traffic_unfused(const Graph &g, const std::vector<ValueId> &ops, const SymbolSizes &sizes);
/** Fused: each group reads each distinct value it takes from outside (once, however many of its
 * ops read it) and writes its outputs. Constants inside a group are free; a cache write
 * (update_tail) reads none of its cache and writes its new positions only. */
TrafficEstimate estimate_traffic_grouped(const Graph &g, const std::vector<FusionGroup> &groups, const SymbolSizes &sizes);

/** "12.0 MiB", "512 B". */
std::string format_bytes(int64_t bytes);

}  // namespace tessel::dsl
