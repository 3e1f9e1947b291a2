/** \file
 * Error kinds of the graph front-end. UserError is the user's fault (bad text, bad shapes, a
 * failed assert); InternalError is a bug in Tessel (a pass produced an invalid graph). Every error
 * carries a reason string; parse errors also carry file:line:col.
 */
#pragma once

#include <stdexcept>
#include <string>

namespace tessel::dsl {

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

/** A syntax, type or shape error in a .tsl file. what() reads "file:line:col: error: message". */
class ParseError : public UserError {
public:
    ParseError(std::string file, SourceLoc loc, std::string message)
        : UserError(file + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) +
                    ": error: " + message),
          file(std::move(file)), loc(loc), message(std::move(message)) {}
    std::string file;
    SourceLoc loc;
    std::string message;  ///< The message without the location prefix.
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

}  // namespace tessel::dsl
