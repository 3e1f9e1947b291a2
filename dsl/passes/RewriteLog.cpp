#include "dsl/passes/RewriteLog.h"

namespace tessel::dsl {

std::vector<RewriteRecord> RewriteLog::with_rule(const std::string &rule) const {
    std::vector<RewriteRecord> r;
    for (const auto &x : records_)
        if (x.rule == rule) r.push_back(x);
    return r;
}

std::string RewriteLog::to_string() const {
    std::string s;
    for (const auto &r : records_)
        s += "[" + r.pass + "] " + r.rule + ": " + r.before + "\n    -> " + r.after + "\n    why: " + r.why + "\n";
    return s;
}

}  // namespace tessel::dsl
