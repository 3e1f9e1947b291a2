/** \file
 * The TSL lexer (Lexer.h): one pass over the text, tracking line and column.
 */
#include "dsl/ir/Lexer.h"

#include <cctype>
#include <charconv>
#include <cstdlib>

namespace tessel::dsl::tsl {

std::string describe(const Token &t) {
    switch (t.kind) {
    case Tok::End: return "end of file";
    case Tok::Value: return "'%" + t.text + "'";
    case Tok::String: return "string \"" + escape_bytes(t.text) + "\"";
    default: return "'" + escape_bytes(t.text) + "'";
    }
}

namespace {

class Lexer {
public:
    Lexer(const std::string &text, const std::string &file) : s_(text), file_(file) {}

    std::vector<Token> run() {
        std::vector<Token> out;
        for (;;) {
            skip_space();
            Token t;
            t.loc = {line_, col_};
            if (i_ >= s_.size()) {
                out.push_back(t);
                return out;
            }
            char c = s_[i_];
            if (std::isalpha((unsigned char)c) || c == '_') {
                t.kind = Tok::Ident;
                t.text = take_word();
            } else if (c == '%') {
                advance();
                t.kind = Tok::Value;
                t.text = take_word();
                if (t.text.empty()) throw ParseError(file_, t.loc, "expected a value name after '%'");
            } else if (std::isdigit((unsigned char)c) ||
                       (c == '.' && i_ + 1 < s_.size() && std::isdigit((unsigned char)s_[i_ + 1]))) {
                lex_number(t);
            } else if (c == '"') {
                lex_string(t);
            } else {
                static const std::string punct = "()[]{},=:+-*/";
                static const Tok kinds[] = {Tok::LParen, Tok::RParen, Tok::LBracket, Tok::RBracket, Tok::LBrace,
                                            Tok::RBrace, Tok::Comma,  Tok::Equal,    Tok::Colon,    Tok::Plus,
                                            Tok::Minus,  Tok::Star,   Tok::Slash};
                size_t k = punct.find(c);
                if (k == std::string::npos)
                    throw ParseError(file_, t.loc,
                                     "unexpected character '" + escape_bytes(std::string(1, c)) + "'" +
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
        if (s_[i_] == '\n')
            ++line_, col_ = 1;
        else
            ++col_;
        ++i_;
    }
    void skip_space() {
        while (i_ < s_.size()) {
            if (std::isspace((unsigned char)s_[i_]))
                advance();
            else if (s_[i_] == '#') {
                while (i_ < s_.size() && s_[i_] != '\n') advance();
            } else
                break;
        }
    }
    std::string take_word() {
        std::string w;
        while (i_ < s_.size() && (std::isalnum((unsigned char)s_[i_]) || s_[i_] == '_' || s_[i_] == '.')) w += s_[i_], advance();
        return w;
    }
    void lex_number(Token &t) {
        std::string w;
        bool is_float = false;
        while (i_ < s_.size()) {
            char c = s_[i_];
            if (std::isdigit((unsigned char)c))
                w += c;
            else if (c == '.')
                is_float = true, w += c;
            else if ((c == 'e' || c == 'E')) {
                is_float = true;
                w += c;
                advance();
                if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) w += s_[i_], advance();
                continue;
            } else
                break;
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
            } else
                v += s_[i_];
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

}  // namespace

std::vector<Token> lex(const std::string &text, const std::string &file) { return Lexer(text, file).run(); }

}  // namespace tessel::dsl::tsl
