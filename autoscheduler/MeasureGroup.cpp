#include "autoscheduler/MeasureGroup.h"

#include <stdexcept>

#include "support/JsonField.h"

namespace tessel::autosched {

nlohmann::json to_json(const MeasureGroup &g) {
    return {{"name", g.name}, {"kind", dsl::to_string(g.kind)}, {"nodes", g.nodes}, {"outputs", g.outputs}};
}

MeasureGroup measure_group_from_json(const nlohmann::json &j, const std::string &path) {
    auto field = [&](const char *name) { return json_field<std::string, std::invalid_argument>(j, name, path); };
    auto names = [&](const char *name) { return json_field<std::vector<std::string>, std::invalid_argument>(j, name, path); };
    MeasureGroup g;
    g.name = field("name");
    const std::string kind = field("kind");
    const auto k = dsl::parse_group_kind(kind);
    if (!k)
        throw std::invalid_argument(path + ".kind: unknown group kind " + json_quote(nlohmann::json(kind)) +
                                    " (expected one of: " + dsl::group_kind_names() + ")");
    g.kind = *k;
    g.nodes = names("nodes");
    g.outputs = names("outputs");
    return g;
}

}  // namespace tessel::autosched
