/** \file
 * The rewrite log: every change a simplification pass makes is recorded with the rule that fired,
 * the value(s) before and after, and why the rewrite was legal. `tessel simplify` prints it.
 *
 *   [algebraic-simplify] transpose-pair-identity: %4 = transpose(%3, perm=[1, 0]) : f32[K, %hidden]
 *       -> %w   because perms [1, 0] then [1, 0] compose to the identity; ...
 */
#pragma once

#include <string>
#include <vector>

namespace tessel::dsl {

struct RewriteRecord {
    std::string pass;    ///< e.g. "cse"
    std::string rule;    ///< e.g. "cse-pure"
    std::string before;  ///< the statement that was rewritten or removed
    std::string after;   ///< its replacement ("%w", a new statement, or "(removed)")
    std::string why;     ///< the legality argument
};

class RewriteLog {
public:
    void record(RewriteRecord r) { records_.push_back(std::move(r)); }
    const std::vector<RewriteRecord> &records() const { return records_; }
    size_t size() const { return records_.size(); }
    bool empty() const { return records_.empty(); }
    /** Records whose rule is `rule`. */
    std::vector<RewriteRecord> with_rule(const std::string &rule) const;
    /** One entry per record, in order: "[pass] rule: before\n    -> after\n    why: ...\n". */
    std::string to_string() const;

private:
    std::vector<RewriteRecord> records_;
};

}  // namespace tessel::dsl
