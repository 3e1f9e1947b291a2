/** \file
 * Result types of ops, and dimension equality through shape code.
 *
 * infer_type() checks an op's operands and attributes and returns its result type; a mismatch
 * throws TypeError naming the op and both types ("add: incompatible shapes f32[4, 8] and f32[3]").
 * It also checks the node's written type: every extent known at compile time must be >= 1
 * ("input: dimension %h (shape.sub(%0, %1)) evaluates to -1; extents must be positive").
 * Ops whose type comes from an annotation (input, constant, reshape, cast, random draws,
 * state_read) return their written type after checking it is consistent with the operands.
 *
 * resolve_dim() looks through shape code without changing the graph: a `%hidden` dim whose value is
 * a constant (or constant arithmetic) resolves to a static size; `shape_of(%x)[1]` resolves to x's
 * dim 1. Two dims are equal when their resolved forms are syntactically equal.
 */
#pragma once

#include <optional>

#include "dsl/ir/Graph.h"

namespace tessel::dsl {

/** Result type of `n` in `g`. Precondition: n's operands exist in g. Does not modify g. */
TensorType infer_type(const Graph &g, const Node &n);

/** Build a node of `op` with its type inferred (or `type` when the op takes an annotation).
 * The node is not added to g. Example: g.add(make_node(g, Op::Relu, {x})). */
Node make_node(const Graph &g, Op op, std::vector<ValueId> inputs, Attrs attrs = {},
               std::optional<TensorType> type = std::nullopt);

/** d with shape code looked through as far as it goes (static > symbol > value reference). */
Dim resolve_dim(const Graph &g, const Dim &d);
/** Value of a rank-0 integer shape value if it is a compile-time constant (nullopt also when
 * evaluating it fails: division by zero, overflow). Linear in the shape code it reads, however
 * deep or shared (evaluated without recursion). */
std::optional<int64_t> constant_shape_value(const Graph &g, ValueId v);
bool same_dim(const Graph &g, const Dim &a, const Dim &b);
/** pack_int4, unpack_int4, repeat_interleave (node n): "" when `operand_extent` and
 * `result_extent` along n's axis agree (the element count is the group count times the group,
 * 2 for int4 pairs, rounded up), else what is wrong. Checked by type inference where both are
 * static, by the interpreter always. */
std::string grouped_extent_mismatch(const Node &n, int64_t operand_extent, int64_t result_extent);
bool same_type(const Graph &g, const TensorType &a, const TensorType &b);

/** How shape value v is computed, for messages: `shape.sub(%0, %1)`, `shape_of(%x, axis=1)`,
 * or the number of a constant. */
std::string shape_code_text(const Graph &g, ValueId v);

/** Scalar shape arithmetic with floor semantics, in checked 64-bit arithmetic. nullopt for
 * division or mod by zero and for a result outside [-2^53, 2^53] (kMaxExactInteger; i32:
 * outside 32 bits); `error` (if given) then says which, naming the op and both operands:
 * "shape.mul: 4398046511104 * 4398046511104 overflows (shape values are limited to 2^53)". */
std::optional<int64_t> eval_shape_op(Op op, int64_t a, int64_t b, DType dtype = DType::I64, std::string *error = nullptr);

}  // namespace tessel::dsl
