#include "dsl/PassManager.h"

#include "dsl/ir/Printer.h"
#include "dsl/ir/Verifier.h"

namespace tessel::dsl {

PassManager &PassManager::add(std::string name, PassFn fn) {
    stages_.push_back({name, {Pass{name, std::move(fn)}}, 1, false});
    return *this;
}

PassManager &PassManager::add_fixed_point(std::string group, std::vector<Pass> passes, int max_iterations) {
    stages_.push_back({std::move(group), std::move(passes), max_iterations, true});
    return *this;
}

std::vector<std::string> PassManager::names() const {
    std::vector<std::string> r;
    for (const Stage &s : stages_) {
        r.push_back(s.name);
        if (s.fixed_point)
            for (const Pass &p : s.passes) r.push_back(p.name);
    }
    return r;
}

PassRunResult PassManager::run(Graph &g, const PassRunOptions &opt, RewriteLog *log) const {
    PassRunResult res;
    auto wants = [&](const std::string &n) { return opt.dump_after.count("all") || opt.dump_after.count(n); };
    bool verified = false;  // a pass that changed nothing leaves the graph last verified
    auto run_pass = [&](const Pass &p, const std::string &label) {
        bool changed = p.run(g, log);
        res.trace.push_back(label + (changed ? ": changed" : ": no change"));
        if (opt.verify && (changed || !verified)) verify_or_throw(g, "after pass " + label);
        verified = verified || opt.verify;
        if (wants(p.name)) res.dumps.push_back({label, print(g)});
        return changed;
    };
    for (const Stage &s : stages_) {
        if (!s.fixed_point) {
            res.changed |= run_pass(s.passes[0], s.name);
            continue;
        }
        bool changed = true;
        int it = 0;
        for (; changed && it < s.max_iterations; ++it) {
            changed = false;
            for (const Pass &p : s.passes)
                changed |= run_pass(p, p.name + " (" + s.name + ", iteration " + std::to_string(it + 1) + ")");
            res.changed |= changed;
        }
        if (changed) {
            res.converged = false;
            res.trace.push_back(s.name + ": stopped after " + std::to_string(s.max_iterations) +
                                " iterations without reaching a fixed point");
        }
        if (wants(s.name) && !opt.dump_after.count("all")) res.dumps.push_back({s.name, print(g)});
    }
    return res;
}

}  // namespace tessel::dsl
