// Fuzz target: a fleet job's row as a worker reads it from the shared server
// (autoscheduler/JobQueue.h): {"key": <key_json>, "payload": <payload_json>}. The key is read by
// TuningKey::from_json and the payload by TuneJobPayload::from_json (a tuning job) or
// VariantCostsRequest::from_json (a variant-costs job, "kind": "variant-costs"); each either reads it or
// refuses it with its own error naming the field (no raw control bytes in the message), and a
// payload read reads back to the same payload. A payload's graph text then goes through the
// parser, which refuses bad text with a UserError.
#include "fuzz/FuzzTarget.h"

#include "autoscheduler/JobPayload.h"
#include "autoscheduler/TuningKey.h"
#include "driver/VariantCostsPayload.h"
#include "schedules/ScheduleJson.h"
#include "dsl/ir/Parser.h"

#include <cstdlib>

namespace {

void check_message(const std::string &what) {
    if (what.empty()) std::abort();
    for (char c : what)
        if ((unsigned char)c < 0x20 && c != '\n') std::abort();  // a raw byte in a message
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace tessel;
    const nlohmann::json row = nlohmann::json::parse(fuzz::input_text(data, size), nullptr, /*allow_exceptions=*/false);
    if (row.is_discarded() || !row.is_object()) return 0;  // not a row: the JSON library's refusal, not Tessel's
    if (row.contains("key")) {
        try {
            const autosched::TuningKey key = autosched::TuningKey::from_json(row["key"], "key");
            if (!(autosched::TuningKey::from_json(key.to_json(), "key") == key)) std::abort();  // must round-trip
        } catch (const autosched::TuningKeyError &e) {
            check_message(e.what());
        }
    }
    if (!row.contains("payload")) return 0;
    if (is_variant_costs_payload(row["payload"])) {
        try {
            const VariantCostsRequest r = VariantCostsRequest::from_json(row["payload"]);
            if (VariantCostsRequest::from_json(r.to_json()).to_json() != r.to_json()) std::abort();  // must round-trip
            dsl::parse(r.graph_text, "variant-costs job");
        } catch (const autosched::JobPayloadError &e) {
            check_message(e.what());
        } catch (const std::invalid_argument &e) {  // the group's reader
            check_message(e.what());
        } catch (const sched::ScheduleJsonError &e) {
            check_message(e.what());
        } catch (const dsl::UserError &) {
        }
        return 0;
    }
    autosched::TuneJobPayload p;
    try {
        p = autosched::TuneJobPayload::from_json(row["payload"]);
    } catch (const autosched::JobPayloadError &e) {
        check_message(e.what());
        return 0;
    }
    if (autosched::TuneJobPayload::from_json(p.to_json()).to_json() != p.to_json()) std::abort();  // must round-trip
    try {
        dsl::parse(p.graph, p.file);
    } catch (const dsl::UserError &) {}
    return 0;
}
