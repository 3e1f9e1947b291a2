/** \file
 * The Parser's expressions (TextParser.h): `+ -` over `* /` over unary minus over primaries,
 * left-associative. binary() gives a numeric literal the other operand's dtype; two integer
 * scalars make shape arithmetic (ShapeAdd, ShapeSub, ShapeMul, ShapeFloorDiv for `/`), anything
 * else the elementwise op. Calls, parentheses and unary minus count against kMaxNestingDepth.
 */
#include <climits>
#include <cmath>

#include "dsl/ir/TextParser.h"

namespace tessel::dsl::tsl {

Operand Parser::parse_expr() {
    Operand l = parse_term();
    while (peek().kind == Tok::Plus || peek().kind == Tok::Minus) {
        Token op = next();
        Operand r = parse_term();
        l = binary(op, l, r);
    }
    return l;
}

Operand Parser::parse_term() {
    Operand l = parse_unary();
    while (peek().kind == Tok::Star || peek().kind == Tok::Slash) {
        Token op = next();
        Operand r = parse_unary();
        l = binary(op, l, r);
    }
    return l;
}

Operand Parser::parse_unary() {
    if (peek().kind == Tok::Minus) {
        Token m = next();
        NestingGuard depth(*this, m);
        Operand v = parse_unary();
        if (v.literal) {
            v.value = -v.value;
            v.loc = m.loc;
            v.text = "-" + v.text;
            if (v.is_int) {
                if (v.ivalue == INT64_MIN)
                    v.int_fits = false;
                else
                    v.ivalue = -v.ivalue;
            }
            return v;
        }
        return Operand{false, add_node(Op::Neg, {v.id}, {}, m.loc), 0, false, m.loc};
    }
    return parse_primary();
}

Operand Parser::parse_primary() {
    Token t = next();
    switch (t.kind) {
    case Tok::Value: return Operand{false, lookup(t), 0, false, t.loc};
    case Tok::Int: return Operand{true, kNoValue, t.num, true, t.loc, t.inum, t.int_fits, t.text};
    case Tok::Float: return Operand{true, kNoValue, t.num, false, t.loc, 0, true, t.text};
    case Tok::LParen: {
        NestingGuard depth(*this, t);
        Operand e = parse_expr();
        expect(Tok::RParen, "')'");
        return e;
    }
    case Tok::Ident:
        if (t.text == "nan" || t.text == "inf") return Operand{true, kNoValue, t.text == "nan" ? NAN : INFINITY, false, t.loc};
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
    default: error(t.loc, "expected a value (%name), a number or an op call, got " + describe(t));
    }
}

Operand Parser::binary(const Token &op_tok, Operand l, Operand r) {
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

}  // namespace tessel::dsl::tsl
