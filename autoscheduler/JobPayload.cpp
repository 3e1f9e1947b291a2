#include "autoscheduler/JobPayload.h"

#include "support/JsonField.h"

#include <algorithm>
#include <cctype>

namespace tessel::autosched {

nlohmann::json TuneJobPayload::to_json() const {
    nlohmann::json j = {{"graph", graph}, {"file", file}, {"symbols", symbols}, {"group", group}, {"shape", shape}};
    if (budget) j["budget"] = *budget;
    if (repeats) j["repeats"] = *repeats;
    if (timeout_seconds) j["timeout_seconds"] = *timeout_seconds;
    if (verify) j["verify"] = *verify;
    if (measure) j["measure"] = *measure;
    return j;
}

namespace {

template <typename T>
void optional_field(const nlohmann::json &j, const char *name, const std::string &path, std::optional<T> *out) {
    if (j.contains(name)) *out = json_field<T, JobPayloadError>(j, name, path);
}

}  // namespace

TuneJobPayload TuneJobPayload::from_json(const nlohmann::json &j, const std::string &path) {
    TuneJobPayload p;
    p.graph = json_field<std::string, JobPayloadError>(j, "graph", path);
    p.group = json_field<std::string, JobPayloadError>(j, "group", path);
    if (j.contains("file")) p.file = json_field<std::string, JobPayloadError>(j, "file", path);
    if (j.contains("shape")) p.shape = json_field<std::string, JobPayloadError>(j, "shape", path);
    const nlohmann::json symbols = json_field<nlohmann::json, JobPayloadError>(j, "symbols", path);
    if (!symbols.is_object())
        throw JobPayloadError(path + ".symbols: expected an object, found " + json_kind(symbols) + " (" + json_quote(symbols) +
                              ")");
    for (const auto &[name, value] : symbols.items()) {
        const bool identifier =
            !name.empty() && !std::isdigit((unsigned char)name[0]) &&
            std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum((unsigned char)c) || c == '_'; });
        if (!identifier) throw JobPayloadError(path + ".symbols: " + json_quote(nlohmann::json(name)) + " is not a symbol name");
        const int64_t size = json_field<int64_t, JobPayloadError>(symbols, name.c_str(), path + ".symbols");
        if (size < 1) throw JobPayloadError(path + ".symbols." + name + ": " + std::to_string(size) + " is not a size (>= 1)");
        p.symbols[name] = size;
    }
    optional_field(j, "budget", path, &p.budget);
    optional_field(j, "repeats", path, &p.repeats);
    optional_field(j, "timeout_seconds", path, &p.timeout_seconds);
    optional_field(j, "verify", path, &p.verify);
    optional_field(j, "measure", path, &p.measure);
    for (const auto &[field, value] : {std::pair{"budget", p.budget}, std::pair{"repeats", p.repeats}})
        if (value && *value < 1) throw JobPayloadError(path + "." + field + ": " + std::to_string(*value) + " is below 1");
    if (p.timeout_seconds && !(*p.timeout_seconds > 0))
        throw JobPayloadError(path + ".timeout_seconds: " + json_quote(j.at("timeout_seconds")) + " is not a positive time");
    return p;
}

}  // namespace tessel::autosched
