/** Parser map: Lexer (tokens with line:col) -> Parser::parse_graph -> parse_statement ->
 * parse_expr / parse_term / parse_unary / parse_postfix / parse_primary -> parse_call. Nodes are
 * appended to the graph as soon as they are parsed, so operands always precede users. */
#include "dsl/ir/Parser.h"

#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "dsl/ir/Numerics.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TypeInference.h"

namespace tessel::dsl {

namespace {

enum class Tok { End, Ident, Value, Int, Float, String, LParen, RParen, LBracket, RBracket,
                 LBrace, RBrace, Comma, Equal, Colon, Plus, Minus, Star, Slash };

struct Token {
    Tok kind = Tok::End;
    std::string text;
    double num = 0;
    /** Tok::Int: the literal as an integer, exact; int_fits is false past 2^63 - 1. */
    int64_t inum = 0;
    bool int_fits = true;
    SourceLoc loc;
};

std::string describe(const Token &t) {
    switch (t.kind) {
    case Tok::End: return "end of file";
    case Tok::Value: return "'%" + t.text + "'";
    case Tok::String: return "string \"" + escape_bytes(t.text) + "\"";
    default: return "'" + escape_bytes(t.text) + "'";
    }
}

class Lexer {
public:
    Lexer(const std::string &text, const std::string &file) : s_(text), file_(file) {}

    std::vector<Token> run() {
        std::vector<Token> out;
        for (;;) {
            skip_space();
            Token t;
            t.loc = {line_, col_};
            if (i_ >= s_.size()) { out.push_back(t); return out; }
            char c = s_[i_];
            if (std::isalpha((unsigned char)c) || c == '_') {
                t.kind = Tok::Ident;
                t.text = take_word();
            } else if (c == '%') {
                advance();
                t.kind = Tok::Value;
                t.text = take_word();
                if (t.text.empty()) throw ParseError(file_, t.loc, "expected a value name after '%'");
            } else if (std::isdigit((unsigned char)c) || (c == '.' && i_ + 1 < s_.size() && std::isdigit((unsigned char)s_[i_ + 1]))) {
                lex_number(t);
            } else if (c == '"') {
                lex_string(t);
            } else {
                static const std::string punct = "()[]{},=:+-*/";
                static const Tok kinds[] = {Tok::LParen, Tok::RParen, Tok::LBracket, Tok::RBracket,
                                            Tok::LBrace, Tok::RBrace, Tok::Comma, Tok::Equal,
                                            Tok::Colon, Tok::Plus, Tok::Minus, Tok::Star, Tok::Slash};
                size_t k = punct.find(c);
                if (k == std::string::npos)
                    throw ParseError(file_, t.loc, "unexpected character '" + escape_bytes(std::string(1, c)) + "'" +
                                                       (c == '\0' || (unsigned char)c >= 0x80 ? " (is this a binary file?)" : ""));
                t.kind = kinds[k];
                t.text = std::string(1, c);
                advance();
            }
            out.push_back(t);
        }
    }

private:
    void advance() {
        if (s_[i_] == '\n') ++line_, col_ = 1;
        else ++col_;
        ++i_;
    }
    void skip_space() {
        while (i_ < s_.size()) {
            if (std::isspace((unsigned char)s_[i_])) advance();
            else if (s_[i_] == '#') { while (i_ < s_.size() && s_[i_] != '\n') advance(); }
            else break;
        }
    }
    std::string take_word() {
        std::string w;
        while (i_ < s_.size() && (std::isalnum((unsigned char)s_[i_]) || s_[i_] == '_' || s_[i_] == '.'))
            w += s_[i_], advance();
        return w;
    }
    void lex_number(Token &t) {
        std::string w;
        bool is_float = false;
        while (i_ < s_.size()) {
            char c = s_[i_];
            if (std::isdigit((unsigned char)c)) w += c;
            else if (c == '.') is_float = true, w += c;
            else if ((c == 'e' || c == 'E')) {
                is_float = true;
                w += c;
                advance();
                if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) w += s_[i_], advance();
                continue;
            } else break;
            advance();
        }
        char *end = nullptr;
        t.num = std::strtod(w.c_str(), &end);
        if (*end != '\0') throw ParseError(file_, t.loc, "malformed number '" + w + "'");
        t.kind = is_float ? Tok::Float : Tok::Int;
        t.text = w;
        if (!is_float) {
            // Integers are read as integers (not through the double above, which would drop
            // bits past 2^53); the range is checked where the literal is used.
            auto [ptr, ec] = std::from_chars(w.data(), w.data() + w.size(), t.inum);
            t.int_fits = ec == std::errc() && ptr == w.data() + w.size();
        }
    }
    void lex_string(Token &t) {
        advance();
        std::string v;
        while (i_ < s_.size() && s_[i_] != '"') {
            if (s_[i_] == '\n') break;
            if (s_[i_] == '\\' && i_ + 1 < s_.size()) {
                advance();
                v += s_[i_] == 'n' ? '\n' : s_[i_];
            } else v += s_[i_];
            advance();
        }
        if (i_ >= s_.size() || s_[i_] != '"') throw ParseError(file_, t.loc, "unterminated string");
        advance();
        t.kind = Tok::String;
        t.text = v;
    }

    const std::string &s_;
    std::string file_;
    size_t i_ = 0;
    int line_ = 1, col_ = 1;
};

/** An expression result: an existing value, or a numeric literal not yet given a dtype. */
struct Operand {
    bool literal = false;
    ValueId id = kNoValue;
    double value = 0;
    bool is_int = false;
    SourceLoc loc;
    /** An integer literal exactly (is_int), with its text for messages; int_fits is false when
     * it does not fit in 64 bits. */
    int64_t ivalue = 0;
    bool int_fits = true;
    std::string text;
};

class Parser {
public:
    Parser(const std::string &text, std::string file) : file_(std::move(file)) {
        toks_ = Lexer(text, file_).run();
    }

    Graph parse_graph() {
        expect_ident("graph");
        g_.name = expect(Tok::Ident, "a graph name").text;
        if (peek().kind == Tok::Ident && peek().text == "mode") {
            next();
            expect(Tok::Equal, "'='");
            Token m = expect(Tok::Ident, "'exact', 'strict' or 'fast'");
            if (m.text == "exact") g_.mode = NumericMode::Exact;
            else if (m.text == "strict") g_.mode = NumericMode::Strict;
            else if (m.text == "fast") g_.mode = NumericMode::Fast;
            else error(m.loc, "expected 'exact', 'strict' or 'fast', got " + describe(m));
        }
        expect(Tok::LBrace, "'{'");
        while (peek().kind != Tok::RBrace) {
            if (peek().kind == Tok::End) error(peek().loc, "expected '}' to close graph '" + g_.name + "'");
            parse_statement();
        }
        Token close = next();
        if (peek().kind != Tok::End) error(peek().loc, "expected end of file after '}', got " + describe(peek()));
        if (g_.outputs.empty())
            error(close.loc, "graph '" + g_.name + "' has no output; add 'output %value' before '}'");
        check_output_names();
        g_.source = file_;
        return std::move(g_);
    }

private:
    // ---- token helpers ----
    const Token &peek(int k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
    Token next() { Token t = peek(); if (pos_ < toks_.size() - 1) ++pos_; return t; }
    [[noreturn]] void error(SourceLoc loc, const std::string &msg) { throw ParseError(file_, loc, msg); }
    Token expect(Tok k, const std::string &what) {
        if (peek().kind != k) error(peek().loc, "expected " + what + ", got " + describe(peek()));
        return next();
    }
    void expect_ident(const std::string &w) {
        if (peek().kind != Tok::Ident || peek().text != w)
            error(peek().loc, "expected '" + w + "', got " + describe(peek()));
        next();
    }

    // ---- statements ----
    void parse_statement() {
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
            error(r.loc, "expected an operation after '=', got existing value %" +
                             g_.display_name(r.id) + " (aliases are not allowed)");
        } else if (!g_.node(r.id).has_result()) {
            error(r.loc, std::string("'") + to_string(g_.node(r.id).op) + "' has no result to name");
        } else if (pending_ == r.id) {
            if (!ann) error(peek().loc, std::string("expected ':' and a result type after '") +
                                            to_string(g_.node(r.id).op) + "(...)'");
            Node &n = g_.node(r.id);
            n.type = *ann;
            infer(n);
            if (!n.layout.empty()) check_layout_rank(n.layout, n.type.rank(), ann_loc), n.layout = n.layout.canonical();
            pending_ = kNoValue;
        } else if (ann) {
            Node &n = g_.node(r.id);
            if (!same_type(g_, n.type, *ann))
                error(ann_loc, std::string(to_string(n.op)) + ": declared type " +
                                   print_type(g_, *ann) + " does not match inferred type " +
                                   print_type(g_, n.type));
            n.type = *ann;
        }
        check_pending(r.id);
        define(name, r.id);
    }

    /** An output name bound to another value must not also name a value: `%a` would then read
     * as two things. Checked at the end, since values may be defined after the output line. An
     * unnamed value that merely prints as that number is renamed, as define() does; effects
     * without a result have no printed name to clash with. */
    void check_output_names() {
        // Through the name index (names are unique here: define() refuses duplicates), so many
        // bound outputs stay linear.
        for (const auto &[i, tok] : output_locs_) {
            const ValueId other = g_.find(tok.text);
            if (other == kNoValue || other == g_.outputs[i] || !g_.node(other).has_result()) continue;
            if (!g_.node(other).name.empty())
                error(tok.loc, "output name %" + tok.text + " is the name of another value; write 'output %" +
                                   tok.text + "' or bind another name");
            g_.respell_unnamed(other);
        }
    }

    void check_pending(ValueId root) {
        (void)root;
        if (pending_ == kNoValue) return;
        const Node &n = g_.node(pending_);
        error(n.loc, std::string("'") + to_string(n.op) +
                         "' needs a result type: write it as its own statement '%v = " +
                         to_string(n.op) + "(...) : type'");
    }

    void define(const Token &name, ValueId id) {
        ValueId other = g_.find(name.text);
        if (other != kNoValue && other != id) {
            Node &o = g_.node(other);
            if (!o.name.empty()) {
                auto it = def_loc_.find(name.text);
                std::string where = it == def_loc_.end() ? "" :
                    " (first defined at line " + std::to_string(it->second.line) + ")";
                error(name.loc, "redefinition of %" + name.text + where);
            }
            g_.respell_unnamed(other);  // an unnamed value printed as this number
        }
        g_.set_name(id, name.text);
        def_loc_[name.text] = name.loc;
    }

    ValueId lookup(const Token &v) {
        ValueId id = g_.find(v.text);
        if (id == kNoValue || !def_loc_.count(v.text))
            error(v.loc, "use of undefined value %" + v.text);
        if (!g_.node(id).has_result()) error(v.loc, "%" + v.text + " has no value");
        return id;
    }

    // ---- types ----
    TensorType parse_type() {
        Token d = expect(Tok::Ident, "a dtype (f32, f16, bf16, i32, i64)");
        auto dt = parse_dtype(d.text);
        if (!dt) error(d.loc, "expected a dtype (f32, f16, bf16, i32, i64), got " + describe(d));
        TensorType t{*dt, {}};
        if (peek().kind != Tok::LBracket) return t;
        next();
        if (peek().kind == Tok::RBracket) { next(); return t; }
        for (;;) {
            Token x = next();
            if (x.kind == Tok::Int) t.dims.push_back(Dim::fixed(extent(x, x.loc, false)));
            else if (x.kind == Tok::Minus && peek().kind == Tok::Int) t.dims.push_back(Dim::fixed(extent(next(), x.loc, true)));
            else if (x.kind == Tok::Ident) t.dims.push_back(Dim::sym(x.text));
            else if (x.kind == Tok::Value) t.dims.push_back(Dim::ref(lookup(x)));
            else error(x.loc, "expected a dimension (integer, symbol or %value), got " + describe(x));
            if (peek().kind == Tok::Comma) { next(); continue; }
            expect(Tok::RBracket, "',' or ']' in shape");
            return t;
        }
    }

    /** A static extent as written (`at`: where it starts, the '-' of a negative one): refused
     * unless it is in [1, 2^62]. Zero-size tensors are not supported (docs/TSL.md); larger
     * values would overflow element counts. */
    int64_t extent(const Token &x, SourceLoc at, bool negative) {
        const std::string written = (negative ? "-" : "") + x.text;
        if (negative || (x.int_fits && x.inum < 1))
            error(at, "extent " + written + " is not positive (extents must be >= 1; zero-size tensors are not supported)");
        if (!x.int_fits || x.inum > kMaxElements)
            error(at, "extent " + written + " is too large (at most 2^62 = " + std::to_string(kMaxElements) + ")");
        return x.inum;
    }

    // ---- expressions ----
    Operand parse_expr() {
        Operand l = parse_term();
        while (peek().kind == Tok::Plus || peek().kind == Tok::Minus) {
            Token op = next();
            Operand r = parse_term();
            l = binary(op, l, r);
        }
        return l;
    }
    Operand parse_term() {
        Operand l = parse_unary();
        while (peek().kind == Tok::Star || peek().kind == Tok::Slash) {
            Token op = next();
            Operand r = parse_unary();
            l = binary(op, l, r);
        }
        return l;
    }
    Operand parse_unary() {
        if (peek().kind == Tok::Minus) {
            Token m = next();
            NestingGuard depth(*this, m);
            Operand v = parse_unary();
            if (v.literal) {
                v.value = -v.value;
                v.loc = m.loc;
                v.text = "-" + v.text;
                if (v.is_int) {
                    if (v.ivalue == INT64_MIN) v.int_fits = false;
                    else v.ivalue = -v.ivalue;
                }
                return v;
            }
            return Operand{false, add_node(Op::Neg, {v.id}, {}, m.loc), 0, false, m.loc};
        }
        return parse_primary();
    }
    Operand parse_primary() {
        Token t = next();
        switch (t.kind) {
        case Tok::Value: return Operand{false, lookup(t), 0, false, t.loc};
        case Tok::Int: return Operand{true, kNoValue, t.num, true, t.loc, t.inum, t.int_fits, t.text};
        case Tok::Float: return Operand{true, kNoValue, t.num, false, t.loc};
        case Tok::LParen: {
            NestingGuard depth(*this, t);
            Operand e = parse_expr();
            expect(Tok::RParen, "')'");
            return e;
        }
        case Tok::Ident:
            if (t.text == "nan" || t.text == "inf")
                return Operand{true, kNoValue, t.text == "nan" ? NAN : INFINITY, false, t.loc};
            if ((t.text == "input" || t.text == "weight") && peek().kind != Tok::LParen) {
                Attrs attrs;
                attrs.weight = t.text == "weight";
                return Operand{false, add_node(Op::Input, {}, attrs, t.loc), 0, false, t.loc};
            }
            if (t.text == "weight") {  // weight(layout="...")
                Token as_input = t;
                as_input.text = "input";
                Operand o = parse_call(as_input);
                g_.node(o.id).attrs.weight = true;
                return o;
            }
            return parse_call(t);
        default:
            error(t.loc, "expected a value (%name), a number or an op call, got " + describe(t));
        }
    }

    Operand parse_call(const Token &name) {
        Op op;
        if (!parse_op(name.text, &op)) error(name.loc, "unknown op '" + name.text + "'");
        const OpInfo &info = op_info(op);
        expect(Tok::LParen, "'(' after '" + name.text + "'");
        NestingGuard depth(*this, name);
        std::vector<Operand> args;
        if (op == Op::Constant) inexact_int_.reset();
        Attrs attrs;
        Layout layout;
        bool has_perm = false, has_axis = false, has_axes = false, has_value = false;
        if (peek().kind != Tok::RParen) {
            for (;;) {
                if (peek().kind == Tok::Ident && peek(1).kind == Tok::Equal) {
                    Token key = next();
                    next();
                    parse_attr(op, key, attrs, layout, has_perm, has_axis, has_axes, has_value);
                } else {
                    args.push_back(parse_expr());
                }
                if (peek().kind == Tok::Comma) { next(); continue; }
                expect(Tok::RParen, "',' or ')' in call to '" + name.text + "'");
                break;
            }
        } else next();
        if (op == Op::ShapeOf && peek().kind == Tok::LBracket) {
            next();
            attrs.axis = small_int(expect(Tok::Int, "an axis index"), false);
            expect(Tok::RBracket, "']'");
            has_axis = true;
        }
        if ((int)args.size() != info.arity)
            error(name.loc, name.text + " expects " + std::to_string(info.arity) +
                                " operand(s), got " + std::to_string(args.size()));
        if ((info.attrs & kAttrAxis) && !has_axis) error(name.loc, name.text + " needs axis=");
        if ((info.attrs & kAttrAxes) && !has_axes) error(name.loc, name.text + " needs axes=[...]");
        if ((info.attrs & kAttrValue) && !has_value) error(name.loc, name.text + " needs value=[...]");
        DType lit = DType::F32;
        bool all_int = true;
        for (const Operand &a : args) all_int &= a.literal && a.is_int;
        for (const Operand &a : args)
            if (!a.literal) { lit = g_.node(a.id).type.dtype; all_int = false; break; }
        if (all_int) lit = DType::I64;
        std::vector<ValueId> ins;
        for (Operand &a : args) ins.push_back(a.literal ? add_constant(a, TensorType{lit, {}}) : a.id);
        if (op == Op::Transpose && !has_perm) {
            int r = g_.node(ins[0]).type.rank();
            for (int i = r - 1; i >= 0; --i) attrs.perm.push_back(i);
        }
        ValueId id = add_node(op, ins, attrs, name.loc);
        if (!layout.empty()) {
            const Node &made = g_.node(id);
            // Annotated ops (inputs, casts...) get their type later: checked when it is read.
            if (!(info.attrs & kTypeFromAnnotation)) check_layout_rank(layout, made.type.rank(), name.loc);
            g_.node(id).layout = info.attrs & kTypeFromAnnotation ? layout : layout.canonical();
        }
        return Operand{false, id, 0, false, name.loc};
    }

    void check_layout_rank(const Layout &l, int rank, const SourceLoc &loc) {
        if (const std::string bad = check_layout(l, rank); !bad.empty()) error(loc, "layout \"" + to_string(l) + "\": " + bad);
    }

    void parse_attr(Op op, const Token &key, Attrs &a, Layout &layout, bool &has_perm,
                    bool &has_axis, bool &has_axes, bool &has_value) {
        unsigned m = op_info(op).attrs;
        const std::string &k = key.text;
        auto want = [&](unsigned bit) {
            if (!(m & bit)) error(key.loc, std::string(to_string(op)) + " has no attribute '" + k + "'");
        };
        if (k == "perm") { want(kAttrPerm); a.perm = int_list(); has_perm = true; }
        else if (k == "axes") { want(kAttrAxes); a.axes = int_list(); has_axes = true; }
        else if (k == "axis") { want(kAttrAxis); a.axis = signed_int(); has_axis = true; }
        else if (k == "seed") {
            want(kAttrSeed);
            Token t = expect(Tok::Int, "an integer seed");
            try {
                a.seed = std::stoull(t.text);
            } catch (const std::exception &) {
                error(t.loc, "seed " + t.text + " does not fit in 64 bits");
            }
        }
        else if (k == "var") { want(kAttrVar); a.var = expect(Tok::String, "a quoted variable name").text; }
        else if (k == "label") { want(kAttrLabel); a.text = expect(Tok::String, "a quoted label").text; }
        else if (k == "msg") { want(kAttrMsg); a.text = expect(Tok::String, "a quoted message").text; }
        else if (k == "layout") {
            const Token t = expect(Tok::String, "a quoted layout");
            std::string why;
            const auto parsed = parse_layout(t.text, &why);
            if (!parsed) error(t.loc, why);
            layout = *parsed;
        }
        else if (k == "keepdims") {
            want(kAttrKeepDims);
            Token b = expect(Tok::Ident, "true or false");
            if (b.text != "true" && b.text != "false") error(b.loc, "expected true or false, got " + describe(b));
            a.keepdims = b.text == "true";
        } else if (k == "value") {
            want(kAttrValue);
            has_value = true;
            if (peek().kind != Tok::LBracket) { a.value = {number()}; return; }
            next();
            while (peek().kind != Tok::RBracket) {
                a.value.push_back(number());
                if (peek().kind == Tok::Comma) next();
                else if (peek().kind != Tok::RBracket) error(peek().loc, "expected ',' or ']' in value list, got " + describe(peek()));
            }
            next();
        } else error(key.loc, std::string(to_string(op)) + " has no attribute '" + k + "'");
    }
    int64_t signed_int() {
        bool neg = peek().kind == Tok::Minus && (next(), true);
        return small_int(expect(Tok::Int, "an integer"), neg);
    }
    /** An axis or permutation entry: |v| <= 2^31 (no tensor has that many axes). */
    int64_t small_int(const Token &t, bool negative) {
        if (!t.int_fits || t.inum > (int64_t(1) << 31))
            error(t.loc, "integer " + std::string(negative ? "-" : "") + t.text + " is out of range for an axis (at most 2^31)");
        return negative ? -t.inum : t.inum;
    }
    std::vector<int64_t> int_list() {
        expect(Tok::LBracket, "'['");
        std::vector<int64_t> v;
        while (peek().kind != Tok::RBracket) {
            v.push_back(signed_int());
            if (peek().kind == Tok::Comma) next();
            else if (peek().kind != Tok::RBracket) error(peek().loc, "expected ',' or ']' in list, got " + describe(peek()));
        }
        next();
        return v;
    }
    double number() {
        bool neg = peek().kind == Tok::Minus && (next(), true);
        Token t = next();
        double v;
        if (t.kind == Tok::Int && (!t.int_fits || t.inum > kMaxExactInteger) && !inexact_int_)
            inexact_int_ = t;  // fine for a float constant; refused by infer() for an integer one
        if (t.kind == Tok::Int || t.kind == Tok::Float) v = t.num;
        else if (t.kind == Tok::Ident && t.text == "nan") v = NAN;
        else if (t.kind == Tok::Ident && t.text == "inf") v = INFINITY;
        else error(t.loc, "expected a number, got " + describe(t));
        return neg ? -v : v;
    }

    // ---- building nodes ----
    Operand binary(const Token &op_tok, Operand l, Operand r) {
        if (l.literal && r.literal) {
            DType t = (l.is_int && r.is_int) ? DType::I64 : DType::F32;
            l.id = add_constant(l, TensorType{t, {}});
            r.id = add_constant(r, TensorType{t, {}});
        } else if (l.literal) {
            l.id = add_constant(l, TensorType{g_.node(r.id).type.dtype, {}});
        } else if (r.literal) {
            r.id = add_constant(r, TensorType{g_.node(l.id).type.dtype, {}});
        }
        const TensorType &lt = g_.node(l.id).type, &rt = g_.node(r.id).type;
        bool shape = lt.is_scalar() && rt.is_scalar() && is_int(lt.dtype) && is_int(rt.dtype);
        Op op;
        switch (op_tok.kind) {
        case Tok::Plus: op = shape ? Op::ShapeAdd : Op::Add; break;
        case Tok::Minus: op = shape ? Op::ShapeSub : Op::Sub; break;
        case Tok::Star: op = shape ? Op::ShapeMul : Op::Mul; break;
        default: op = shape ? Op::ShapeFloorDiv : Op::Div; break;
        }
        return Operand{false, add_node(op, {l.id, r.id}, {}, op_tok.loc), 0, false, op_tok.loc};
    }

    ValueId add_constant(const Operand &lit, const TensorType &t) {
        if (is_int(t.dtype) && (std::isnan(lit.value) || std::isinf(lit.value) || std::trunc(lit.value) != lit.value))
            error(lit.loc, "literal " + print_number(lit.value) + " is not an integer, but type is " + print_type(g_, t));
        Attrs a;
        a.value = {round_to(t.dtype, lit.value)};
        if (is_int(t.dtype) && lit.is_int) {
            // Integer literals keep every bit or are refused: constants hold exact integers up
            // to 2^53 in magnitude (docs/TSL.md, "Limits"), i32 ones within 32 bits.
            const int64_t lo = t.dtype == DType::I32 ? INT32_MIN : -kMaxExactInteger;
            const int64_t hi = t.dtype == DType::I32 ? INT32_MAX : kMaxExactInteger;
            if (!lit.int_fits || lit.ivalue < lo || lit.ivalue > hi)
                error(lit.loc, "integer literal " + lit.text + " is out of range for " + to_string(t.dtype) +
                                   (t.dtype == DType::I32 ? " (32 bits)" : " (integer constants are exact up to 2^53 = " +
                                                                               std::to_string(kMaxExactInteger) + ")"));
            a.value = {(double)lit.ivalue};
        }
        Node n = Node::make(Op::Constant, {}, t, {}, a);
        n.loc = lit.loc;
        ValueId id = g_.add(std::move(n));
        infer(g_.node(id));
        return id;
    }

    ValueId add_node(Op op, std::vector<ValueId> ins, Attrs attrs, SourceLoc loc) {
        if (pending_ != kNoValue) check_pending(kNoValue);
        Node n = Node::make(op, std::move(ins), {}, {}, std::move(attrs));
        n.loc = loc;
        ValueId id = g_.add(std::move(n));
        if (op_info(op).attrs & kTypeFromAnnotation) pending_ = id;
        else infer(g_.node(id));
        return id;
    }

    void infer(Node &n) {
        try {
            n.type = infer_type(g_, n);
            const std::optional<Token> big = n.op == Op::Constant ? std::exchange(inexact_int_, std::nullopt) : std::nullopt;
            if (big && is_int(n.type.dtype))
                error(big->loc, "integer value " + big->text + " is out of range for " + to_string(n.type.dtype) +
                                    " (integer constants are exact up to 2^53)");
            if (n.op == Op::Constant)
                for (double &v : n.attrs.value) {
                    if (is_int(n.type.dtype) && (std::isnan(v) || std::trunc(v) != v))
                        error(n.loc, "constant value " + print_number(v) + " is not an integer, but type is " + print_type(g_, n.type));
                    v = round_to(n.type.dtype, v);
                }
        } catch (const TypeError &e) {
            error(n.loc, e.what());
        }
    }

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

}  // namespace

Graph parse(const std::string &text, const std::string &filename) {
    return Parser(text, filename).parse_graph();
}

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
