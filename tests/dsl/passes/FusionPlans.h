// Fusion planning tests' shared helpers: a plan of a TSL text or of an algorithms/ example, its
// groups as one line, and the decision or the plan-text line of one edge.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "dsl/Simplify.h"
#include "dsl/ir/Parser.h"
#include "dsl/passes/Fusion.h"

namespace tessel::dsl::test {

struct Planned {
    Graph g;
    FusionPlan plan;
    /** The groups as "kind: %a %b | kind: %c ...". */
    std::string groups() const {
        std::string out;
        for (const FusionGroup &grp : plan.groups) {
            out += (out.empty() ? "" : " | ") + std::string(to_string(grp.kind)) + ":";
            for (ValueId v : grp.nodes) out += " %" + g.display_name(v);
        }
        return out;
    }
    /** The decision for producer -> consumer (by display name) with this rule; fails if absent. */
    FusionDecision decision(const std::string &rule, const std::string &p, const std::string &c = "") const {
        for (const FusionDecision &d : plan.decisions)
            if (d.rule == rule && g.display_name(d.producer) == p &&
                (c.empty() ? d.consumer == kNoValue : d.consumer != kNoValue && g.display_name(d.consumer) == c))
                return d;
        FAIL("no decision " << rule << " %" << p << " -> %" << c << " in\n" << plan.to_string(g));
        return {};
    }
};

inline Planned plan_text(const std::string &text, const FusionOptions &opts = {}) {
    Planned p{parse(text, "<test>"), {}};
    p.plan = plan_fusion(p.g, opts);
    return p;
}

inline Planned plan_example(const std::string &file, const FusionOptions &opts = {}) {
    Planned p{simplify_file(std::string(TESSEL_SOURCE_DIR) + "/algorithms/" + file).graph, {}};
    p.plan = plan_fusion(p.g, opts);
    return p;
}

/** The planned decision line for p -> c in the plan text, e.g. "[cut] broadcast-back %s -> %y: ...". */
inline std::string decision_line(const Planned &p, const std::string &prod, const std::string &cons) {
    const std::string text = p.plan.to_string(p.g), key = " %" + prod + " -> %" + cons + ":";
    for (size_t b = 0, e; b < text.size(); b = e + 1) {
        e = text.find('\n', b);
        if (e == std::string::npos) e = text.size();
        const std::string line = text.substr(b, e - b);
        if (line.find(key) != std::string::npos) return line;
    }
    return "";
}

}  // namespace tessel::dsl::test
