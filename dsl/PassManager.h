/** \file
 * A small pass manager: runs named passes in order, verifies the IR after every pass (throwing
 * InternalError naming the pass that broke it), can dump the graph after any pass, and runs a
 * group of passes to a fixed point with an iteration bound (XLA's HloPassFix).
 *
 *   PassManager pm("default");
 *   pm.add("fold-constants", fold_constants);
 *   pm.add_fixed_point("simplify", {{"cse", eliminate_common_subexpressions},
 *                                   {"dce", eliminate_dead_code}}, 8);
 *   PassRunResult r = pm.run(g, {}, &log);
 */
#pragma once

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dsl/ir/Graph.h"
#include "dsl/passes/RewriteLog.h"

namespace tessel::dsl {

/** A pass: mutates the graph, records its rewrites, returns whether it changed anything. */
using PassFn = std::function<bool(Graph &, RewriteLog *)>;

struct Pass {
    std::string name;
    PassFn run;
};

struct PassRunOptions {
    /** Dump after these passes or groups ("all" for every pass). A pass inside a fixed-point
     * group dumps each time it runs; the group name dumps after the group. */
    std::set<std::string> dump_after;
    bool verify = true;  ///< run verify() after every pass
};

struct PassDump {
    std::string label;  ///< e.g. "fold-constants (simplify, iteration 1)"
    std::string text;   ///< print(g) at that point
};

struct PassRunResult {
    bool changed = false;
    bool converged = true;  ///< every fixed-point group stopped changing within its bound
    std::vector<PassDump> dumps;
    std::vector<std::string> trace;  ///< "fold-constants: changed" per pass run, in order
};

class PassManager {
public:
    explicit PassManager(std::string name) : name_(std::move(name)) {}

    PassManager &add(std::string name, PassFn fn);
    /** Run `passes` in order repeatedly until none changes the graph, at most max_iterations
     * times; if it still changes after that, the result reports converged = false. */
    PassManager &add_fixed_point(std::string group, std::vector<Pass> passes, int max_iterations);

    PassRunResult run(Graph &g, const PassRunOptions &options = {}, RewriteLog *log = nullptr) const;
    /** Every pass and group name, for validating --dump-after. */
    std::vector<std::string> names() const;
    const std::string &name() const { return name_; }

private:
    struct Stage {
        std::string name;
        std::vector<Pass> passes;  ///< one pass, or the group's passes
        int max_iterations = 1;
        bool fixed_point = false;
    };
    std::string name_;
    std::vector<Stage> stages_;
};

}  // namespace tessel::dsl
