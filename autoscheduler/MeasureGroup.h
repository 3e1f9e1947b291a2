/** \file
 * The planned fusion group as the measuring child and a fleet worker receive it: the members by
 * their display names in the printed graph (ids are not part of the text form), and its JSON
 * form. Read from another process or a shared server, so every field is checked when read.
 */
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "dsl/passes/Fusion.h"

namespace tessel::autosched {

struct MeasureGroup {
    std::string name;
    dsl::GroupKind kind = dsl::GroupKind::MatmulEpilogue;
    std::vector<std::string> nodes, outputs;
};

nlohmann::json to_json(const MeasureGroup &g);
/** Throws std::invalid_argument naming the field under `path`
 * (`payload.group.nodes[2]: expected a string, found a number (7)`). */
MeasureGroup measure_group_from_json(const nlohmann::json &j, const std::string &path);

}  // namespace tessel::autosched
