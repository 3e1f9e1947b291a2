#include "schedules/ScheduleJson.h"
#include "dsl/ir/Diagnostics.h"
#include "support/JsonField.h"

#include "tessel_runtime.h"

#include <climits>
#include <cstdint>
#include <fstream>

namespace tessel::sched {

using nlohmann::json;

NLOHMANN_JSON_SERIALIZE_ENUM(Tail, {{Tail::Auto, "auto"},
                                    {Tail::GuardWithIf, "guard_with_if"},
                                    {Tail::ShiftInwards, "shift_inwards"},
                                    {Tail::RoundUp, "round_up"},
                                    {Tail::Predicate, "predicate"}})
NLOHMANN_JSON_SERIALIZE_ENUM(MemoryLevel, {{MemoryLevel::Auto, "auto"},
                                           {MemoryLevel::Register, "register"},
                                           {MemoryLevel::Stack, "stack"},
                                           {MemoryLevel::Heap, "heap"},
                                           {MemoryLevel::GpuShared, "gpu_shared"},
                                           {MemoryLevel::GpuGlobal, "gpu_global"}})

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StageRef, func, update)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Split, stage, var, outer, inner, factor, tail)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Fuse, stage, inner, outer, fused)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Reorder, stage, vars)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Vectorize, stage, var)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Unroll, stage, var)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Parallel, stage, var)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GpuBlocks, stage, vars)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GpuThreads, stage, vars)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ComputeAt, func, at, var)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ComputeRoot, func)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ComputeInline, func)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StoreAt, func, at, var)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StoreIn, func, level)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StageInput, input, wrapper, consumer)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RFactor, stage, rvar, new_var, intermediate)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Bound, func, var, min, extent)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Prefetch, stage, input, var, distance)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(BoundExtent, func, var, extent)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(AssumeAligned, buffer, lanes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ReorderStorage, func, vars)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ComputeWith, stage, with, var)
void to_json(nlohmann::json &j, GuardOp op) { j = to_string(op); }
void from_json(const nlohmann::json &j, GuardOp &op) {
    const std::string text = j.get<std::string>();
    try {
        op = parse_guard_op(text);
    } catch (const std::invalid_argument &) {
        throw ScheduleJsonError("guard operator '" + text + "' is not one of ==, <=, >=, %");
    }
}
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Guard, extent, op, value)

namespace {

/** The "op" name of each Directive alternative, in variant order. */
constexpr const char *kOpNames[] = {
    "split",       "fuse",       "reorder",      "vectorize",      "unroll",         "parallel",        "gpu_blocks",
    "gpu_threads", "compute_at", "compute_root", "compute_inline", "store_at",       "store_in",        "stage_input",
    "rfactor",     "bound",      "prefetch",     "bound_extent",   "assume_aligned", "reorder_storage", "compute_with"};
static_assert(std::size(kOpNames) == std::variant_size_v<Directive>, "every directive needs a JSON op name");

json directive_to_json(const Directive &d) {
    json j = std::visit([](const auto &v) { return json(v); }, d);
    j["op"] = kOpNames[d.index()];
    return j;
}

template <size_t I = 0>
Directive directive_from_json(size_t index, const json &j) {
    if constexpr (I < std::variant_size_v<Directive>) {
        if (index == I) return j.get<std::variant_alternative_t<I, Directive>>();
        return directive_from_json<I + 1>(index, j);
    } else {
        throw ScheduleJsonError("internal: directive index out of range");
    }
}

/** The JSON form of directive alternative `index`, default-constructed: its fields and their types. */
template <size_t I = 0>
json directive_prototype(size_t index) {
    if constexpr (I < std::variant_size_v<Directive>) {
        if (index == I) return json(std::variant_alternative_t<I, Directive>{});
        return directive_prototype<I + 1>(index);
    } else {
        return json::object();
    }
}

/** Each field of directive `j` that its prototype has must be of the prototype's JSON type (and
 * a list's elements names): the message names the field's path, e.g.
 * `steps[1].factor: expected a number, found a string ("8")`, not the JSON library's words. */
void check_field_types(const json &j, const json &proto, const std::string &where, const std::string &path) {
    auto kind_differs = [](const json &want, const json &got) {
        return !want.is_null() && !(want.is_number() && got.is_number()) && want.type() != got.type();
    };
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (it.key() == "op" || !proto.contains(it.key())) continue;
        const json &want = proto[it.key()], &got = it.value();
        const std::string field = path + "." + it.key();
        if (kind_differs(want, got))
            throw ScheduleJsonError(where + ": " + field + ": expected " + json_kind(want) + ", found " + json_kind(got) + " (" +
                                    got.dump() + ")");
        // Every list field of a directive is a list of loop names (Schedule.h).
        const json element = want.is_array() && !want.empty() ? want[0] : json("");
        if (got.is_array() && want.is_array())
            for (size_t e = 0; e < got.size(); e++)
                if (kind_differs(element, got[e]))
                    throw ScheduleJsonError(where + ": " + field + "[" + std::to_string(e) + "]: expected " + json_kind(element) +
                                            ", found " + json_kind(got[e]) + " (" + got[e].dump() + ")");
    }
}

/** Every number under `j` must be an integer within [lo, hi]: the fields are C++ ints (longs
 * for guard values), and nlohmann would otherwise truncate 2.5 to 2 and narrow 2^40 to 0. */
void check_integers(const json &j, const std::string &where, const std::string &field, int64_t lo, int64_t hi, int depth = 0) {
    if (depth > 16) throw ScheduleJsonError(where + ": field \"" + field + "\" is nested too deeply");
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it) check_integers(it.value(), where, it.key(), lo, hi, depth + 1);
    } else if (j.is_array()) {
        for (const json &e : j) check_integers(e, where, field, lo, hi, depth + 1);
    } else if (j.is_number_float()) {
        throw ScheduleJsonError(where + ": field \"" + field + "\" = " + j.dump() + " is not an integer");
    } else if (j.is_number_unsigned()) {
        if (j.get<uint64_t>() > (uint64_t)hi)
            throw ScheduleJsonError(where + ": field \"" + field + "\" = " + j.dump() + " is out of range (at most " +
                                    std::to_string(hi) + ")");
    } else if (j.is_number_integer()) {
        const int64_t v = j.get<int64_t>();
        if (v < lo || v > hi)
            throw ScheduleJsonError(where + ": field \"" + field + "\" = " + j.dump() + " is out of range (" +
                                    std::to_string(lo) + " to " + std::to_string(hi) + ")");
    }
}

Directive parse_directive(const json &j, const std::string &where, const std::string &path) {
    if (!j.is_object() || !j.contains("op") || !j["op"].is_string())
        throw ScheduleJsonError(where + ": a directive must be an object with a string field \"op\"");
    const std::string op = j["op"];
    std::string known;
    for (size_t i = 0; i < std::size(kOpNames); i++) {
        if (op == kOpNames[i]) {
            check_field_types(j, directive_prototype(i), where + " (" + op + ")", path);
            check_integers(j, where + " (" + op + ")", "", INT32_MIN, INT32_MAX);
            try {
                return directive_from_json(i, j);
            } catch (const json::out_of_range &e) {  // a required field is missing
                throw ScheduleJsonError(where + " (" + op + "): " + path + ": a field is missing (" + e.what() + ")");
            } catch (const json::exception &e) {
                throw ScheduleJsonError(where + " (" + op + "): " + path + ": " + e.what());
            }
        }
        known += (known.empty() ? "" : ", ") + std::string(kOpNames[i]);
    }
    throw ScheduleJsonError(where + ": unknown op '" + op + "' (known: " + known + ")");
}

std::vector<Directive> parse_steps(const json &j, const std::string &where, const std::string &path) {
    if (!j.is_array()) throw ScheduleJsonError(where + ": \"steps\" must be an array");
    std::vector<Directive> steps;
    for (size_t i = 0; i < j.size(); i++)
        steps.push_back(
            parse_directive(j[i], where + " step " + std::to_string(i + 1), path + "steps[" + std::to_string(i) + "]"));
    return steps;
}

json steps_to_json(const std::vector<Directive> &steps) {
    json a = json::array();
    for (const auto &d : steps) a.push_back(directive_to_json(d));
    return a;
}

}  // namespace

json to_json(const ScheduleSpec &s) {
    json j;
    j["name"] = s.name;
    j["device"] = to_string(s.device);
    j["group"] = dsl::to_string(s.group);
    j["description"] = s.description;
    j["steps"] = steps_to_json(s.steps);
    if (s.program) j["program"] = true;
    j["variants"] = json::array();
    for (const auto &v : s.variants) j["variants"].push_back({{"guards", v.guards}, {"steps", steps_to_json(v.steps)}});
    return j;
}

namespace {
ScheduleSpec read_schedule(const json &j);
}

ScheduleSpec schedule_from_json(const json &j) {
    try {
        return read_schedule(j);
    } catch (const ScheduleJsonError &e) {
        // Messages quote the document's strings (a name, an op, a guard): never raw control bytes.
        throw ScheduleJsonError(dsl::escape_bytes(e.what(), /*keep_newlines=*/true));
    }
}

namespace {
ScheduleSpec read_schedule(const json &j) {
    if (!j.is_object()) throw ScheduleJsonError("schedule: expected a JSON object");
    ScheduleSpec s;
    try {
        s.name = json_field<std::string, ScheduleJsonError>(j, "name", "schedule");
        s.device =
            parse_device(j.contains("device") ? json_field<std::string, ScheduleJsonError>(j, "device", "schedule") : "cpu");
        s.description = j.contains("description") ? json_field<std::string, ScheduleJsonError>(j, "description", "schedule") : "";
        const std::string group =
            j.contains("group") ? json_field<std::string, ScheduleJsonError>(j, "group", "schedule") : "matmul+epilogue";
        const auto kind = dsl::parse_group_kind(group);
        if (!kind)
            throw ScheduleJsonError("\"group\": unknown fusion group kind '" + group +
                                    "' (expected one of: " + dsl::group_kind_names() + ")");
        s.group = *kind;
        s.program = j.contains("program") && json_field<bool, ScheduleJsonError>(j, "program", "schedule");
    } catch (const ScheduleJsonError &) {
        throw;
    } catch (const std::exception &e) {
        throw ScheduleJsonError(std::string("schedule: ") + e.what());
    }
    const std::string where = "schedule '" + s.name + "'";
    if (!j.contains("steps")) throw ScheduleJsonError(where + ": missing \"steps\"");
    s.steps = parse_steps(j["steps"], where, "");
    if (j.contains("variants")) {
        const json &vs = j["variants"];
        if (!vs.is_array()) throw ScheduleJsonError(where + ": \"variants\" must be an array");
        for (size_t i = 0; i < vs.size(); i++) {
            const std::string vw = where + " variant " + std::to_string(i + 1);
            ScheduleSpec::Variant v;
            if (!vs[i].is_object()) throw ScheduleJsonError(vw + ": a variant must be an object with \"guards\" and \"steps\"");
            if (vs[i].contains("guards")) check_integers(vs[i]["guards"], vw + " guards", "guards", INT64_MIN, INT64_MAX);
            try {
                v.guards = vs[i].at("guards").get<std::vector<Guard>>();
            } catch (const json::exception &e) {
                throw ScheduleJsonError(vw + " guards: " + e.what());
            } catch (const ScheduleJsonError &e) {  // an operator GuardOp does not name
                throw ScheduleJsonError(vw + ": " + e.what());
            }
            if (!vs[i].contains("steps")) throw ScheduleJsonError(vw + ": missing \"steps\"");
            v.steps = parse_steps(vs[i]["steps"], vw, "variants[" + std::to_string(i) + "].");
            s.variants.push_back(std::move(v));
        }
    }
    return s;
}
}  // namespace

ScheduleSpec load_schedule(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw ScheduleJsonError("cannot open schedule file '" + path + "'");
    json j;
    try {
        j = json::parse(in);
    } catch (const json::parse_error &e) {
        throw ScheduleJsonError(path + ": " + e.what());
    }
    try {
        return schedule_from_json(j);
    } catch (const ScheduleJsonError &e) {
        throw ScheduleJsonError(path + ": " + e.what());
    }
}

void save_schedule(const ScheduleSpec &s, const std::string &path) {
    std::ofstream out(path);
    if (!out) throw ScheduleJsonError("cannot write schedule file '" + path + "'");
    out << to_json(s).dump(2) << "\n";
}

}  // namespace tessel::sched
