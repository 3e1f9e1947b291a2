/** \file
 * The payload of a tuning job (autoscheduler/JobQueue.h): what `tessel tune --enqueue` writes and
 * a `tessel worker` plans and tunes from: the graph's text and file name, the symbols' sizes, the
 * group to tune, the shape's name and the tuner's budget. Job rows come from a shared server, so
 * every field is checked when read, and a bad one is refused in Tessel's words with its path
 * (`payload.symbols.M: expected an integer, found a string ("8")`), never the JSON library's.
 * to_json() and from_json() round-trip.
 */
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace tessel::autosched {

/** A payload field missing, of the wrong kind or out of range. */
class JobPayloadError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct TuneJobPayload {
    std::string graph;                       ///< the graph's text (the TSL printer's form)
    std::string file = "job";                ///< where the text came from, for diagnostics
    std::map<std::string, int64_t> symbols;  ///< every symbol the group's sizes use, each >= 1
    std::string group;                       ///< the fusion group's name in the planned graph
    std::string shape;                       ///< the shape's name in the tuning suite, or ""
    // The tuner's settings (autosched::TunerParams); unset fields keep the worker's defaults.
    std::optional<int> budget, repeats;
    std::optional<double> timeout_seconds;
    std::optional<bool> verify, measure;

    nlohmann::json to_json() const;
    /** Throws JobPayloadError naming the field under `path`. */
    static TuneJobPayload from_json(const nlohmann::json &j, const std::string &path = "payload");
};

}  // namespace tessel::autosched
