/** \file
 * parse() and parse_file() (Parser.h), and the Parser (TextParser.h) reading the graph, its
 * statements, names, result types and shapes, and building nodes. Map: Lexer (tokens with
 * line:col) -> Parser::parse_graph -> parse_statement -> parse_expr / parse_term / parse_unary /
 * parse_primary (ParseExpressions.cpp) -> parse_call (ParseCalls.cpp). Nodes are appended to the
 * graph as soon as they are parsed, so operands always precede users. */
#include "dsl/ir/Parser.h"

#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dsl/ir/Numerics.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TextParser.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

namespace tsl {

Parser::Parser(const std::string &text, std::string file) : file_(std::move(file)) { toks_ = lex(text, file_); }

Graph Parser::parse_graph() {
    expect_ident("graph");
    g_.name = expect(Tok::Ident, "a graph name").text;
    if (peek().kind == Tok::Ident && peek().text == "mode") {
        next();
        expect(Tok::Equal, "'='");
        Token m = expect(Tok::Ident, "'exact', 'strict' or 'fast'");
        if (m.text == "exact")
            g_.mode = NumericMode::Exact;
        else if (m.text == "strict")
            g_.mode = NumericMode::Strict;
        else if (m.text == "fast")
            g_.mode = NumericMode::Fast;
        else
            error(m.loc, "expected 'exact', 'strict' or 'fast', got " + describe(m));
    }
    expect(Tok::LBrace, "'{'");
    while (peek().kind != Tok::RBrace) {
        if (peek().kind == Tok::End) error(peek().loc, "expected '}' to close graph '" + g_.name + "'");
        parse_statement();
    }
    Token close = next();
    if (peek().kind != Tok::End) error(peek().loc, "expected end of file after '}', got " + describe(peek()));
    if (g_.outputs.empty()) error(close.loc, "graph '" + g_.name + "' has no output; add 'output %value' before '}'");
    check_output_names();
    g_.source = file_;
    return std::move(g_);
}

void Parser::parse_statement() {
    const Token &t = peek();
    if (t.kind == Tok::Ident && t.text == "output") {
        next();
        // `output %y` exports %y under its own name; `output %y = %x` exports %x as y.
        do {
            Token v = expect(Tok::Value, "a value to output");
            if (peek().kind == Tok::Equal) {
                next();
                Token bound = expect(Tok::Value, "the value bound to output %" + v.text);
                g_.add_output(lookup(bound), v.text);
                if (g_.output_name(g_.outputs.size() - 1) != g_.display_name(g_.outputs.back()))
                    output_locs_.push_back({g_.outputs.size() - 1, v});
            } else {
                g_.add_output(lookup(v));
            }
        } while (peek().kind == Tok::Comma && (next(), true));
        return;
    }
    if (t.kind == Tok::Ident) {
        size_t first_new = g_.size();
        Operand r = parse_expr();
        if (r.literal || g_.size() == first_new || g_.node(r.id).has_result())
            error(t.loc, "the result of '" + t.text + "' must be named: write '%v = " + t.text + "(...)'");
        check_pending(r.id);
        return;
    }
    Token name = expect(Tok::Value, "a statement ('%name = ...', 'output', or an effect op)");
    expect(Tok::Equal, "'=' after '%" + name.text + "'");
    size_t first_new = g_.size();
    Operand r = parse_expr();
    std::optional<TensorType> ann;
    SourceLoc ann_loc = peek().loc;
    if (peek().kind == Tok::Colon) {
        next();
        ann_loc = peek().loc;
        ann = parse_type();
    }
    if (r.literal) {
        TensorType t = ann ? *ann : TensorType{r.is_int ? DType::I64 : DType::F32, {}};
        r.id = add_constant(r, t);
    } else if (g_.size() == first_new) {
        error(r.loc,
              "expected an operation after '=', got existing value %" + g_.display_name(r.id) + " (aliases are not allowed)");
    } else if (!g_.node(r.id).has_result()) {
        error(r.loc, std::string("'") + to_string(g_.node(r.id).op) + "' has no result to name");
    } else if (pending_ == r.id) {
        if (!ann)
            error(peek().loc, std::string("expected ':' and a result type after '") + to_string(g_.node(r.id).op) + "(...)'");
        Node &n = g_.node(r.id);
        n.type = *ann;
        infer(n);
        if (!n.layout.empty()) check_layout_rank(n.layout, n.type.rank(), ann_loc), n.layout = n.layout.canonical();
        pending_ = kNoValue;
    } else if (ann) {
        Node &n = g_.node(r.id);
        if (!same_type(g_, n.type, *ann))
            error(ann_loc, std::string(to_string(n.op)) + ": declared type " + print_type(g_, *ann) +
                               " does not match inferred type " + print_type(g_, n.type));
        n.type = *ann;
    }
    check_pending(r.id);
    define(name, r.id);
}

void Parser::check_output_names() {
    // Through the name index (names are unique here: define() refuses duplicates), so many
    // bound outputs stay linear.
    for (const auto &[i, tok] : output_locs_) {
        const ValueId other = g_.find(tok.text);
        if (other == kNoValue || other == g_.outputs[i] || !g_.node(other).has_result()) continue;
        if (!g_.node(other).name.empty())
            error(tok.loc, "output name %" + tok.text + " is the name of another value; write 'output %" + tok.text +
                               "' or bind another name");
        g_.respell_unnamed(other);
    }
}

void Parser::check_pending(ValueId root) {
    (void)root;
    if (pending_ == kNoValue) return;
    const Node &n = g_.node(pending_);
    error(n.loc, std::string("'") + to_string(n.op) +
                     "' needs a result type: write it as its own statement '%v = " + to_string(n.op) + "(...) : type'");
}

void Parser::define(const Token &name, ValueId id) {
    ValueId other = g_.find(name.text);
    if (other != kNoValue && other != id) {
        Node &o = g_.node(other);
        if (!o.name.empty()) {
            auto it = def_loc_.find(name.text);
            std::string where = it == def_loc_.end() ? "" : " (first defined at line " + std::to_string(it->second.line) + ")";
            error(name.loc, "redefinition of %" + name.text + where);
        }
        g_.respell_unnamed(other);  // an unnamed value printed as this number
    }
    g_.set_name(id, name.text);
    def_loc_[name.text] = name.loc;
}

ValueId Parser::lookup(const Token &v) {
    ValueId id = g_.find(v.text);
    if (id == kNoValue || !def_loc_.count(v.text)) error(v.loc, "use of undefined value %" + v.text);
    if (!g_.node(id).has_result()) error(v.loc, "%" + v.text + " has no value");
    return id;
}

TensorType Parser::parse_type() {
    Token d = expect(Tok::Ident, "a dtype (f32, f16, bf16, i32, i64)");
    auto dt = parse_dtype(d.text);
    if (!dt) error(d.loc, "expected a dtype (f32, f16, bf16, i32, i64), got " + describe(d));
    TensorType t{*dt, {}};
    if (peek().kind != Tok::LBracket) return t;
    next();
    if (peek().kind == Tok::RBracket) {
        next();
        return t;
    }
    for (;;) {
        Token x = next();
        if (x.kind == Tok::Int)
            t.dims.push_back(Dim::fixed(extent(x, x.loc, false)));
        else if (x.kind == Tok::Minus && peek().kind == Tok::Int)
            t.dims.push_back(Dim::fixed(extent(next(), x.loc, true)));
        else if (x.kind == Tok::Ident)
            t.dims.push_back(Dim::sym(x.text));
        else if (x.kind == Tok::Value)
            t.dims.push_back(Dim::ref(lookup(x)));
        else
            error(x.loc, "expected a dimension (integer, symbol or %value), got " + describe(x));
        if (peek().kind == Tok::Comma) {
            next();
            continue;
        }
        expect(Tok::RBracket, "',' or ']' in shape");
        return t;
    }
}

int64_t Parser::extent(const Token &x, SourceLoc at, bool negative) {
    const std::string written = (negative ? "-" : "") + x.text;
    if (negative || (x.int_fits && x.inum < 1))
        error(at, "extent " + written + " is not positive (extents must be >= 1; zero-size tensors are not supported)");
    if (!x.int_fits || x.inum > kMaxElements)
        error(at, "extent " + written + " is too large (at most 2^62 = " + std::to_string(kMaxElements) + ")");
    return x.inum;
}

ValueId Parser::add_constant(const Operand &lit, const TensorType &t) {
    if (is_int(t.dtype) && (std::isnan(lit.value) || std::isinf(lit.value) || std::trunc(lit.value) != lit.value))
        error(lit.loc, "literal " + print_number(lit.value) + " is not an integer, but type is " + print_type(g_, t));
    // A float literal with an integral value (22222222222222222.5 reads as 22222222222222224)
    // meets the same limit as the integer it prints as.
    if (is_int(t.dtype) && !lit.is_int) {
        const double limit = t.dtype == DType::I32 ? (double)INT32_MAX : (double)kMaxExactInteger;
        if (std::fabs(lit.value) > limit)
            error(lit.loc, "literal " + lit.text + " is out of range for " + to_string(t.dtype) +
                               (t.dtype == DType::I32
                                    ? " (32 bits)"
                                    : " (integer constants are exact up to 2^53 = " + std::to_string(kMaxExactInteger) + ")"));
    }
    Attrs a;
    a.value = {round_to(t.dtype, lit.value)};
    if (is_int(t.dtype) && lit.is_int) {
        // Integer literals keep every bit or are refused: constants hold exact integers up
        // to 2^53 in magnitude (docs/TSL.md, "Limits"), i32 ones within 32 bits.
        const int64_t lo = t.dtype == DType::I32 ? INT32_MIN : -kMaxExactInteger;
        const int64_t hi = t.dtype == DType::I32 ? INT32_MAX : kMaxExactInteger;
        if (!lit.int_fits || lit.ivalue < lo || lit.ivalue > hi)
            error(lit.loc, "integer literal " + lit.text + " is out of range for " + to_string(t.dtype) +
                               (t.dtype == DType::I32
                                    ? " (32 bits)"
                                    : " (integer constants are exact up to 2^53 = " + std::to_string(kMaxExactInteger) + ")"));
        a.value = {(double)lit.ivalue};
    }
    Node n = Node::make(Op::Constant, {}, t, {}, a);
    n.loc = lit.loc;
    ValueId id = g_.add(std::move(n));
    infer(g_.node(id));
    return id;
}

ValueId Parser::add_node(Op op, std::vector<ValueId> ins, Attrs attrs, SourceLoc loc) {
    if (pending_ != kNoValue) check_pending(kNoValue);
    Node n = Node::make(op, std::move(ins), {}, {}, std::move(attrs));
    n.loc = loc;
    ValueId id = g_.add(std::move(n));
    if (op_info(op).attrs & kTypeFromAnnotation)
        pending_ = id;
    else
        infer(g_.node(id));
    return id;
}

void Parser::infer(Node &n) {
    try {
        n.type = infer_type(g_, n);
        const std::optional<Token> big = n.op == Op::Constant ? std::exchange(inexact_int_, std::nullopt) : std::nullopt;
        if (big && is_int(n.type.dtype))
            error(big->loc, "integer value " + big->text + " is out of range for " + to_string(n.type.dtype) +
                                " (integer constants are exact up to 2^53)");
        if (n.op == Op::Constant)
            for (double &v : n.attrs.value) {
                if (is_int(n.type.dtype) && (std::isnan(v) || std::trunc(v) != v))
                    error(n.loc,
                          "constant value " + print_number(v) + " is not an integer, but type is " + print_type(g_, n.type));
                v = round_to(n.type.dtype, v);
            }
    } catch (const TypeError &e) {
        error(n.loc, e.what());
    }
}

}  // namespace tsl

Graph parse(const std::string &text, const std::string &filename) { return tsl::Parser(text, filename).parse_graph(); }

Graph parse_file(const std::string &path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw ParseError(path, {}, "is a directory, not a graph file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ParseError(path, {}, "cannot open file");
    std::stringstream ss;
    ss << in.rdbuf();
    return parse(ss.str(), path);
}

}  // namespace tessel::dsl
