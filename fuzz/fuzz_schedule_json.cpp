// Fuzz target: schedule JSON (schedules/ScheduleJson.h), the format of --schedule files, tuning
// records and imports. Every input is refused with a ScheduleJsonError naming the field (no raw
// control bytes) or read into a ScheduleSpec whose JSON reads back to the same JSON.
#include "fuzz/FuzzTarget.h"

#include "schedules/ScheduleJson.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const nlohmann::json j = nlohmann::json::parse(tessel::fuzz::input_text(data, size), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return 0;  // not JSON: the JSON library's refusal, not Tessel's
    tessel::sched::ScheduleSpec s;
    try {
        s = tessel::sched::schedule_from_json(j);
    } catch (const tessel::sched::ScheduleJsonError &e) {
        const std::string what = e.what();
        if (what.empty()) std::abort();
        for (char c : what)
            if ((unsigned char)c < 0x20 && c != '\n') std::abort();  // a raw byte in a message
        return 0;
    }
    const nlohmann::json once = tessel::sched::to_json(s);
    if (tessel::sched::to_json(tessel::sched::schedule_from_json(once)) != once) std::abort();  // must round-trip
    return 0;
}
