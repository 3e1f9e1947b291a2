/** \file
 * Tokens of the TSL text form (docs/TSL.md) and the lexer that reads them, for the parser
 * (TextParser.h). Internal to dsl/ir. Identifiers may contain '.', values are written `%name`,
 * numbers are Int (kept exactly in 64 bits when they fit) or Float, strings are double-quoted
 * with backslash escapes, '#' starts a comment to the end of the line.
 *
 * Legal on any text: anything that is not a token is a ParseError "file:line:col: error: ...".
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dsl/ir/Diagnostics.h"

namespace tessel::dsl::tsl {

enum class Tok {
    End,
    Ident,
    Value,
    Int,
    Float,
    String,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Equal,
    Colon,
    Plus,
    Minus,
    Star,
    Slash
};

struct Token {
    Tok kind = Tok::End;
    std::string text;
    double num = 0;
    /** Tok::Int: the literal as an integer, exact; int_fits is false past 2^63 - 1. */
    int64_t inum = 0;
    bool int_fits = true;
    SourceLoc loc;
};

/** A token as messages name it: "end of file", '%x', string "..." or the quoted text. */
std::string describe(const Token &t);

/** The tokens of `text`, the last one Tok::End; `file` is only used in error messages. Throws
 * ParseError on a character that starts no token, a malformed number or an unterminated
 * string. */
std::vector<Token> lex(const std::string &text, const std::string &file);

}  // namespace tessel::dsl::tsl
