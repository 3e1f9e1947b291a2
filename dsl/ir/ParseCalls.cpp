/** \file
 * The Parser's op calls (TextParser.h): `op(operands, key=value...)`, the arity and required
 * attributes checked against the op's OpInfo, numeric literal operands given the dtype of the
 * other operands (i64 when all are integers), transpose's default permutation, `shape_of(%x)[i]`,
 * and the attribute values: integer lists, axes, seeds, quoted strings, layouts, keepdims and
 * constant value lists.
 */
#include <cmath>
#include <string>

#include "dsl/ir/Numerics.h"
#include "dsl/ir/Printer.h"
#include "dsl/ir/TextParser.h"

namespace tessel::dsl::tsl {

Operand Parser::parse_call(const Token &name) {
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
            if (peek().kind == Tok::Comma) {
                next();
                continue;
            }
            expect(Tok::RParen, "',' or ')' in call to '" + name.text + "'");
            break;
        }
    } else
        next();
    if (op == Op::ShapeOf && peek().kind == Tok::LBracket) {
        next();
        attrs.axis = small_int(expect(Tok::Int, "an axis index"), false);
        expect(Tok::RBracket, "']'");
        has_axis = true;
    }
    if ((int)args.size() != info.arity)
        error(name.loc, name.text + " expects " + std::to_string(info.arity) + " operand(s), got " + std::to_string(args.size()));
    if ((info.attrs & kAttrAxis) && !has_axis) error(name.loc, name.text + " needs axis=");
    if ((info.attrs & kAttrAxes) && !has_axes) error(name.loc, name.text + " needs axes=[...]");
    if ((info.attrs & kAttrRepeats) && attrs.repeats < 1) error(name.loc, name.text + " needs repeats=");
    if ((info.attrs & kAttrValue) && !has_value) error(name.loc, name.text + " needs value=[...]");
    DType lit = DType::F32;
    bool all_int = true;
    for (const Operand &a : args) all_int &= a.literal && a.is_int;
    for (const Operand &a : args)
        if (!a.literal) {
            lit = g_.node(a.id).type.dtype;
            all_int = false;
            break;
        }
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

void Parser::check_layout_rank(const Layout &l, int rank, const SourceLoc &loc) {
    if (const std::string bad = check_layout(l, rank); !bad.empty()) error(loc, "layout \"" + to_string(l) + "\": " + bad);
}

void Parser::parse_attr(Op op, const Token &key, Attrs &a, Layout &layout, bool &has_perm, bool &has_axis, bool &has_axes,
                        bool &has_value) {
    unsigned m = op_info(op).attrs;
    const std::string &k = key.text;
    auto want = [&](unsigned bit) {
        if (!(m & bit)) error(key.loc, std::string(to_string(op)) + " has no attribute '" + k + "'");
    };
    if (k == "perm") {
        want(kAttrPerm);
        a.perm = int_list();
        has_perm = true;
    } else if (k == "axes") {
        want(kAttrAxes);
        a.axes = int_list();
        has_axes = true;
    } else if (k == "axis") {
        want(kAttrAxis);
        a.axis = signed_int();
        has_axis = true;
    } else if (k == "start") {
        want(kAttrStart);
        a.start = signed_int();
    } else if (k == "repeats") {
        want(kAttrRepeats);
        const Token t = peek();
        a.repeats = signed_int();
        if (a.repeats < 1) error(t.loc, "repeats=" + std::to_string(a.repeats) + " must be at least 1");
    } else if (k == "seed") {
        want(kAttrSeed);
        Token t = expect(Tok::Int, "an integer seed");
        try {
            a.seed = std::stoull(t.text);
        } catch (const std::exception &) {
            error(t.loc, "seed " + t.text + " does not fit in 64 bits");
        }
    } else if (k == "var") {
        want(kAttrVar);
        a.var = expect(Tok::String, "a quoted variable name").text;
    } else if (k == "label") {
        want(kAttrLabel);
        a.text = expect(Tok::String, "a quoted label").text;
    } else if (k == "msg") {
        want(kAttrMsg);
        a.text = expect(Tok::String, "a quoted message").text;
    } else if (k == "layout") {
        const Token t = expect(Tok::String, "a quoted layout");
        std::string why;
        const auto parsed = parse_layout(t.text, &why);
        if (!parsed) error(t.loc, why);
        layout = *parsed;
    } else if (k == "keepdims") {
        want(kAttrKeepDims);
        Token b = expect(Tok::Ident, "true or false");
        if (b.text != "true" && b.text != "false") error(b.loc, "expected true or false, got " + describe(b));
        a.keepdims = b.text == "true";
    } else if (k == "value") {
        want(kAttrValue);
        has_value = true;
        if (peek().kind != Tok::LBracket) {
            a.value = {number()};
            return;
        }
        next();
        while (peek().kind != Tok::RBracket) {
            a.value.push_back(number());
            if (peek().kind == Tok::Comma)
                next();
            else if (peek().kind != Tok::RBracket)
                error(peek().loc, "expected ',' or ']' in value list, got " + describe(peek()));
        }
        next();
    } else
        error(key.loc, std::string(to_string(op)) + " has no attribute '" + k + "'");
}

int64_t Parser::signed_int() {
    bool neg = peek().kind == Tok::Minus && (next(), true);
    return small_int(expect(Tok::Int, "an integer"), neg);
}

int64_t Parser::small_int(const Token &t, bool negative) {
    if (!t.int_fits || t.inum > (int64_t(1) << 31))
        error(t.loc, "integer " + std::string(negative ? "-" : "") + t.text + " is out of range for an axis (at most 2^31)");
    return negative ? -t.inum : t.inum;
}

std::vector<int64_t> Parser::int_list() {
    expect(Tok::LBracket, "'['");
    std::vector<int64_t> v;
    while (peek().kind != Tok::RBracket) {
        v.push_back(signed_int());
        if (peek().kind == Tok::Comma)
            next();
        else if (peek().kind != Tok::RBracket)
            error(peek().loc, "expected ',' or ']' in list, got " + describe(peek()));
    }
    next();
    return v;
}

double Parser::number() {
    bool neg = peek().kind == Tok::Minus && (next(), true);
    Token t = next();
    double v;
    if (t.kind == Tok::Int && (!t.int_fits || t.inum > kMaxExactInteger) && !inexact_int_)
        inexact_int_ = t;  // fine for a float constant; refused by infer() for an integer one
    if (t.kind == Tok::Int || t.kind == Tok::Float)
        v = t.num;
    else if (t.kind == Tok::Ident && t.text == "nan")
        v = NAN;
    else if (t.kind == Tok::Ident && t.text == "inf")
        v = INFINITY;
    else
        error(t.loc, "expected a number, got " + describe(t));
    return neg ? -v : v;
}

}  // namespace tessel::dsl::tsl
