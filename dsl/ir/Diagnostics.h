/** \file
 * Error kinds of the graph front-end. UserError is the user's fault (bad text, bad shapes, a
 * failed assert); InternalError is a bug in Tessel (a pass produced an invalid graph). Every error
 * carries a reason string; errors at a place in a .tsl file (LocatedError: ParseError,
 * StaticFailure) also carry file:line:col and print as "file:line:col: error: message".
 * format_error() is how a command line prints any of them: "error:" appears once.
 */
#pragma once

#include <stdexcept>
#include <string>

namespace tessel::dsl {

/** `s` with every byte that is not printable ASCII written as an escape (\n, \t, \xNN), so a
 * diagnostic that quotes user text never prints raw control bytes (NUL, ESC, 0xFF). */
inline std::string escape_bytes(const std::string &s, bool keep_newlines = false) {
    static const char *hex = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        if (c == '\n' && keep_newlines)
            out += '\n';
        else if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (c >= 0x20 && c < 0x7f)
            out += (char)c;
        else
            out += std::string("\\x") + hex[c >> 4] + hex[c & 15];
    }
    return out;
}

/** A position in a source file; line and col are 1-based, 0 means unknown. */
struct SourceLoc {
    int line = 0;
    int col = 0;
};

/** Something is wrong with what the user wrote or ran. */
class UserError : public std::runtime_error {
public:
    explicit UserError(const std::string &msg) : std::runtime_error(msg) {}
};

/** An error at a place in a .tsl file. what() reads "file:line:col: error: message", or
 * "file: error: message" when the line is unknown (0); with no file (a graph built in C++) it is
 * the bare message, since there is no place to name. */
class LocatedError : public UserError {
public:
    LocatedError(std::string file, SourceLoc loc, std::string message)
        : UserError(located(file, loc, message)), file(std::move(file)), loc(loc), message(std::move(message)) {}
    std::string file;
    SourceLoc loc;
    std::string message;  ///< The message without the location prefix.
    /** Whether what() already names the place and says "error:". */
    bool has_location() const { return !file.empty(); }

private:
    static std::string located(const std::string &file, SourceLoc loc, const std::string &msg) {
        if (file.empty()) return msg;
        std::string where = escape_bytes(file);
        if (loc.line > 0) where += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
        return where + ": error: " + msg;
    }
};

/** A syntax, type or shape error in a .tsl file (or a file that cannot be read). */
class ParseError : public LocatedError {
public:
    using LocatedError::LocatedError;
};

/** An op that is certain to fail when the graph runs, found by a pass before it runs: shape code
 * dividing by zero, an assert whose condition is a constant with a zero, an extent that folds to
 * <= 0 (dsl/ir/RuntimeChecks.h). Reported rather than left for run time, and never removed. */
class StaticFailure : public LocatedError {
public:
    using LocatedError::LocatedError;
};

/** Shape or dtype mismatch found by type inference; the message names the op and both types. */
class TypeError : public UserError {
public:
    explicit TypeError(const std::string &msg) : UserError(msg) {}
};

/** A failure while interpreting a graph (bad input shapes, division by zero in shape code). */
class RuntimeError : public UserError {
public:
    explicit RuntimeError(const std::string &msg) : UserError(msg) {}
};

/** An `assert` op found a zero in its condition. */
class AssertionFailure : public RuntimeError {
public:
    explicit AssertionFailure(const std::string &msg) : RuntimeError(msg) {}
};

/** A bug in Tessel: e.g. the verifier rejected the output of a pass. */
class InternalError : public std::logic_error {
public:
    explicit InternalError(const std::string &msg) : std::logic_error(msg) {}
};

/** The one line a command line prints for `e`: a LocatedError with a file as it is
 * ("gelu.tsl:4:16: error: ..."), anything else after the tool's name ("tessel: error: ...").
 * Example: std::cerr << format_error(e) << "\n"; */
inline std::string format_error(const std::exception &e, const std::string &tool = "tessel") {
    if (auto *l = dynamic_cast<const LocatedError *>(&e); l && l->has_location()) return escape_bytes(e.what(), true);
    return tool + ": error: " + escape_bytes(e.what(), true);
}

}  // namespace tessel::dsl
