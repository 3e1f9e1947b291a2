/** \file
 * The TSL text parser's state (Parser.h is its interface): a recursive-descent Parser over the
 * tokens of Lexer.h that appends nodes to the graph as soon as they are parsed, so operands
 * always precede users. Internal to dsl/ir; parse() and parse_file() are what other code calls.
 * The definitions are split by what they read:
 *   Parser.cpp           the graph, statements, names, result types and shapes, building nodes;
 *   ParseExpressions.cpp infix + - * / (integer scalars become shape arithmetic), unary minus,
 *                        primaries (values, literals, parentheses, inputs and weights);
 *   ParseCalls.cpp       op calls and their attributes (perm=, axes=, layout=, value=...).
 *
 * Legal for one text: construct a Parser and call parse_graph() once. Every error is a
 * ParseError "file:line:col: error: ...".
 */
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dsl/ir/Graph.h"
#include "dsl/ir/Lexer.h"
#include "dsl/ir/Parser.h"

namespace tessel::dsl::tsl {

/** An expression result: an existing value, or a numeric literal not yet given a dtype. */
struct Operand {
    bool literal = false;
    ValueId id = kNoValue;
    double value = 0;
    bool is_int = false;
    SourceLoc loc;
    /** A literal's text, for messages; an integer literal exactly (is_int), int_fits false when
     * it does not fit in 64 bits. */
    int64_t ivalue = 0;
    bool int_fits = true;
    std::string text;
};

class Parser {
public:
    Parser(const std::string &text, std::string file);

    Graph parse_graph();

private:
    // ---- token helpers ----
    const Token &peek(int k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
    Token next() {
        Token t = peek();
        if (pos_ < toks_.size() - 1) ++pos_;
        return t;
    }
    [[noreturn]] void error(SourceLoc loc, const std::string &msg) { throw ParseError(file_, loc, msg); }
    Token expect(Tok k, const std::string &what) {
        if (peek().kind != k) error(peek().loc, "expected " + what + ", got " + describe(peek()));
        return next();
    }
    void expect_ident(const std::string &w) {
        if (peek().kind != Tok::Ident || peek().text != w) error(peek().loc, "expected '" + w + "', got " + describe(peek()));
        next();
    }

    // ---- statements (Parser.cpp) ----
    void parse_statement();
    /** An output name bound to another value must not also name a value: `%a` would then read
     * as two things. Checked at the end, since values may be defined after the output line. An
     * unnamed value that merely prints as that number is renamed, as define() does; effects
     * without a result have no printed name to clash with. */
    void check_output_names();
    void check_pending(ValueId root);
    void define(const Token &name, ValueId id);
    ValueId lookup(const Token &v);

    // ---- types (Parser.cpp) ----
    TensorType parse_type();
    /** A static extent as written (`at`: where it starts, the '-' of a negative one): refused
     * unless it is in [1, 2^62]. Zero-size tensors are not supported (docs/TSL.md); larger
     * values would overflow element counts. */
    int64_t extent(const Token &x, SourceLoc at, bool negative);

    // ---- expressions (ParseExpressions.cpp) ----
    Operand parse_expr();
    Operand parse_term();
    Operand parse_unary();
    Operand parse_primary();
    Operand binary(const Token &op_tok, Operand l, Operand r);

    // ---- op calls and attributes (ParseCalls.cpp) ----
    Operand parse_call(const Token &name);
    void check_layout_rank(const Layout &l, int rank, const SourceLoc &loc);
    void parse_attr(Op op, const Token &key, Attrs &a, Layout &layout, bool &has_perm, bool &has_axis, bool &has_axes,
                    bool &has_value);
    int64_t signed_int();
    /** An axis or permutation entry: |v| <= 2^31 (no tensor has that many axes). */
    int64_t small_int(const Token &t, bool negative);
    std::vector<int64_t> int_list();
    double number();

    // ---- building nodes (Parser.cpp) ----
    ValueId add_constant(const Operand &lit, const TensorType &t);
    ValueId add_node(Op op, std::vector<ValueId> ins, Attrs attrs, SourceLoc loc);
    void infer(Node &n);

    /** Counts one level of expression nesting (call, parenthesis, unary minus) for its scope;
     * past kMaxNestingDepth the parse stops with an error instead of exhausting the stack. */
    struct NestingGuard {
        NestingGuard(Parser &p, const Token &at) : p(p) {
            if (++p.depth_ > kMaxNestingDepth)
                p.error(at.loc, "expression nested too deeply (more than " + std::to_string(kMaxNestingDepth) +
                                    " levels of calls, parentheses or unary minus); split it into statements");
        }
        ~NestingGuard() { --p.depth_; }
        Parser &p;
    };

    std::string file_;
    std::vector<Token> toks_;
    size_t pos_ = 0;
    int depth_ = 0;
    std::optional<Token> inexact_int_;  ///< an integer in the current constant's value= beyond 2^53
    Graph g_;
    ValueId pending_ = kNoValue;  ///< a node whose type must come from this statement's annotation
    std::map<std::string, SourceLoc> def_loc_;
    std::vector<std::pair<size_t, Token>> output_locs_;  ///< outputs bound under another name
};

}  // namespace tessel::dsl::tsl
