#include "dsl/passes/GroupKind.h"

namespace tessel::dsl {

namespace {
constexpr std::pair<GroupKind, const char *> kKinds[] = {
    {GroupKind::MatmulEpilogue, "matmul+epilogue"},
    {GroupKind::Reduction, "reduction"},
    {GroupKind::Elementwise, "elementwise"},
    {GroupKind::Attention, "attention"},
    {GroupKind::AttentionBackward, "attention-backward"},
};
}  // namespace

const char *to_string(GroupKind kind) {
    for (const auto &[k, name] : kKinds)
        if (k == kind) return name;
    return "?";
}

std::optional<GroupKind> parse_group_kind(const std::string &text) {
    for (const auto &[k, name] : kKinds)
        if (text == name) return k;
    return std::nullopt;
}

std::string group_kind_names() {
    std::string s;
    for (const auto &[k, name] : kKinds) s += (s.empty() ? "" : ", ") + std::string(name);
    return s;
}

}  // namespace tessel::dsl
