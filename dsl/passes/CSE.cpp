#include "dsl/passes/CSE.h"

#include <cstring>
#include <map>
#include <sstream>

#include "dsl/ir/Printer.h"

namespace tessel::dsl {

namespace {

/** Structural key: op, operand ids, attributes and type (dims by kind and id, not by name). */
std::string key_of(const Node &n) {
    std::ostringstream os;
    os << (int)n.op << '|';
    for (ValueId v : n.inputs) os << v << ',';
    os << '|' << (int)n.type.dtype << '[';
    for (const Dim &d : n.type.dims) os << (int)d.kind << ':' << d.size << ':' << d.symbol << ':' << d.value << ',';
    os << "]|";
    const Attrs &a = n.attrs;
    for (double v : a.value) {
        uint64_t b;
        std::memcpy(&b, &v, sizeof b);
        os << std::hex << b << std::dec << ',';
    }
    os << '|' << a.axis << '|' << a.start << '|' << a.repeats << '|' << a.keepdims << '|' << a.seed << '|';
    for (int64_t x : a.axes) os << x << ',';
    os << '|';
    for (int64_t x : a.perm) os << x << ',';
    os << '|' << a.var.size() << ':' << a.var << '|' << a.text << '|' << a.weight << '|' << to_string(n.layout);
    return os.str();
}

}  // namespace

bool eliminate_common_subexpressions(Graph &g, RewriteLog *log) {
    bool changed = false;
    std::map<std::string, ValueId> seen;
    std::map<std::string, int> writes;  // state variable -> writes seen so far in program order
    std::vector<ValueId> order = g.order();
    for (ValueId id : order) {
        const Node &n = g.node(id);
        std::string key, why;
        if (n.op == Op::StateWrite) {
            ++writes[n.attrs.var];
            continue;
        }
        if (n.is_pure() && n.op != Op::Input) {
            key = "pure|" + key_of(n);
            why = "pure op with identical op, attributes, operands and type computes the same value";
        } else if (n.op == Op::StateRead) {
            key = "read|" + std::to_string(writes[n.attrs.var]) + "|" + key_of(n);
            why = "both read state \"" + n.attrs.var + "\" with no write to it between them in program order";
        } else {
            continue;  // inputs, random draws, state writes, print and assert are never merged
        }
        auto it = seen.find(key);
        if (it == seen.end()) {
            seen.emplace(key, id);
            continue;
        }
        std::string before = print_node(g, id);
        g.replace_all_uses(id, it->second);
        g.erase(id);
        if (log)
            log->record(
                {"cse", n.op == Op::StateRead ? "cse-state-read" : "cse-pure", before, "%" + g.display_name(it->second), why});
        changed = true;
    }
    return changed;
}

}  // namespace tessel::dsl
