/** \file
 * Text forms of small enums: a table of (value, text) pairs, looked up both ways. Each typed
 * vocabulary (autosched::NestFamily, sched::GuardOp, sched::ScheduleProvenance,
 * autosched::ShapeClass) keeps its table in a .def X-macro list and calls these two functions
 * from its to_string / parse, so every parse error has the same shape:
 *   unknown nest family 'gem' (valid: gemm, splitk, ...)
 * Header-only; legal on every floor.
 */
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace tessel {

template <class E>
struct VocabularyEntry {
    E value;
    const char *text;
};

/** The text of `value` in `table`; "?" when the table lacks it (a table missing a value). */
template <class E, size_t N>
const char *vocabulary_text(const VocabularyEntry<E> (&table)[N], E value) {
    for (const auto &e : table)
        if (e.value == value) return e.text;
    return "?";
}

/** The value whose text is `text`; throws std::invalid_argument "unknown <what> '<text>' (valid:
 * a, b, ...)" otherwise. */
template <class E, size_t N>
E vocabulary_parse(const VocabularyEntry<E> (&table)[N], const std::string &text, const char *what) {
    std::string valid;
    for (const auto &e : table) {
        if (text == e.text) return e.value;
        valid += (valid.empty() ? "" : ", ") + std::string(e.text);
    }
    throw std::invalid_argument("unknown " + std::string(what) + " '" + text + "' (valid: " + valid + ")");
}

}  // namespace tessel
