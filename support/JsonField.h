// Reading a field of a JSON document in Tessel's words: the field's path (`records[3].key.
// space_version`), the expected kind and the found one (`expected an integer, found a string
// ("8")`), never the JSON library's message. Integers must be integral and fit the C++ type
// (nlohmann would truncate 2.5 to 2 and narrow 2^40). Header-only; nlohmann-json is the parser.
#pragma once

#include <nlohmann/json.hpp>

#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace tessel {

/** "a number", "a string", "a boolean", "an array", "an object" or "null". */
inline const char *json_kind(const nlohmann::json &j) {
    if (j.is_number()) return "a number";
    if (j.is_string()) return "a string";
    if (j.is_boolean()) return "a boolean";
    if (j.is_array()) return "an array";
    if (j.is_object()) return "an object";
    return "null";
}

/** What `j` holds as a short quote for messages: at most 40 characters of its JSON. */
inline std::string json_quote(const nlohmann::json &j) {
    std::string s = j.dump();
    return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

namespace json_detail {
template <typename T>
struct is_vector : std::false_type {};
template <typename T>
struct is_vector<std::vector<T>> : std::true_type {};
}  // namespace json_detail

/** `j` as T, or "" into *why naming what was expected and found; `path` names `j`. */
template <typename T>
bool json_as(const nlohmann::json &j, const std::string &path, T *out, std::string *why) {
    auto wrong = [&](const char *expected) {
        *why = path + ": expected " + expected + ", found " + json_kind(j) + " (" + json_quote(j) + ")";
        return false;
    };
    if constexpr (std::is_same_v<T, nlohmann::json>) {
        *out = j;
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (!j.is_string()) return wrong("a string");
        *out = j.get<std::string>();
    } else if constexpr (std::is_same_v<T, bool>) {
        if (!j.is_boolean()) return wrong("a boolean");
        *out = j.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
        if (!j.is_number_integer()) return wrong("an integer");
        const bool fits = j.is_number_unsigned()
                              ? j.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
                              : j.get<int64_t>() >= int64_t(std::numeric_limits<T>::min()) &&
                                    (std::is_unsigned_v<T> || j.get<int64_t>() <= int64_t(std::numeric_limits<T>::max()));
        if (!fits) {
            *why = path + ": " + json_quote(j) + " is out of range (" + std::to_string(std::numeric_limits<T>::min()) + " to " +
                   std::to_string(std::numeric_limits<T>::max()) + ")";
            return false;
        }
        *out = j.get<T>();
    } else if constexpr (std::is_floating_point_v<T>) {
        if (!j.is_number()) return wrong("a number");
        *out = j.get<T>();
    } else if constexpr (json_detail::is_vector<T>::value) {
        if (!j.is_array()) return wrong("an array");
        out->clear();
        for (size_t i = 0; i < j.size(); i++) {
            typename T::value_type e{};
            if (!json_as(j[i], path + "[" + std::to_string(i) + "]", &e, why)) return false;
            out->push_back(std::move(e));
        }
    } else {
        static_assert(!sizeof(T), "json_as: no reader for this type");
    }
    return true;
}

/** Field `name` of object `j` (at `path`) as T; throws Error(path.name: missing / expected ...). */
template <typename T, typename Error>
T json_field(const nlohmann::json &j, const char *name, const std::string &path) {
    const std::string field = path.empty() ? std::string(name) : path + "." + name;
    if (!j.is_object()) throw Error(path + ": expected an object, found " + json_kind(j) + " (" + json_quote(j) + ")");
    auto it = j.find(name);
    if (it == j.end()) throw Error(field + ": missing");
    T v{};
    std::string why;
    if (!json_as(*it, field, &v, &why)) throw Error(why);
    return v;
}

}  // namespace tessel
