/** \file
 * GroupKind: what a fusion group computes, which decides the schedules that can serve it.
 * Fusion planning assigns it (FusionPolicy's group_kind); the lowering, the schedule library,
 * the autoscheduler and the tuning database all take it from the planned group. The text form
 * ("matmul+epilogue", "reduction", "elementwise", "attention", "attention-backward") is kept for the CLI, JSON and printed plans.
 */
#pragma once

#include <optional>
#include <string>

namespace tessel::dsl {

enum class GroupKind {
    MatmulEpilogue,  ///< one contraction (or sibling contractions) plus inline epilogue ops
    Reduction,       ///< row or column reductions (softmax, layernorm statistics) plus elementwise ops
    Elementwise,     ///< elementwise, broadcast and data-movement ops only
    /** softmax(scale * q @ k^T [+ mask]) @ v as one online-softmax nest (AttentionFusion.h) */
    Attention,
    /** dQ, dK, dV of attention recomputing P block by block (AttentionBackward.h) */
    AttentionBackward,
};

/** "matmul+epilogue", "reduction", "elementwise", "attention", "attention-backward". */
const char *to_string(GroupKind kind);
/** Inverse of to_string; nullopt for any other text. */
std::optional<GroupKind> parse_group_kind(const std::string &text);
/** The names, for messages: "matmul+epilogue, reduction, elementwise". */
std::string group_kind_names();

}  // namespace tessel::dsl
