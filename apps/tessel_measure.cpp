// tessel-measure: the child process IsolatedMeasurer (autoscheduler/Measurer.h) runs for every
// candidate. Reads {"task": MeasureTask, "schedule": ScheduleSpec} as JSON on stdin, writes one
// Measurement as JSON on stdout, and exits 0 (or {"task", "schedules": [...]}: the candidates
// timed together, interleaved, answered as {"measurements": [...]}); exit status 2 for a request it cannot read and 3
// when memory ran out (the parent then records a Crash with this program's stderr). It is the
// only program that runs candidate schedules; whatever goes wrong in one stays in this process.
// The parent sets its process group, its address-space limit and its parent-death signal
// before exec (autoscheduler/Measurer.cpp).
#include "autoscheduler/MeasureTask.h"
#include "schedules/ScheduleJson.h"

#include <iostream>
#include <iterator>
#include <new>

int main() {
    using namespace tessel;
    autosched::MeasureTask task;
    sched::ScheduleSpec schedule;
    std::vector<sched::ScheduleSpec> interleaved;  // {"schedules": [...]}: timed together
    try {
        const std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
        const nlohmann::json request = nlohmann::json::parse(text);
        task = autosched::measure_task_from_json(request.at("task"));
        if (request.contains("schedules"))
            for (const auto &s : request.at("schedules")) interleaved.push_back(sched::schedule_from_json(s));
        else
            schedule = sched::schedule_from_json(request.at("schedule"));
    } catch (const std::exception &e) {
        std::cerr << "tessel-measure: bad request: " << e.what() << "\n";
        return 2;
    }
    try {
        if (!interleaved.empty()) {
            nlohmann::json all = nlohmann::json::array();
            for (const auto &m : autosched::run_interleaved_measurement(task, interleaved)) all.push_back(autosched::to_json(m));
            std::cout << nlohmann::json{{"measurements", all}}.dump() << std::endl;
            return 0;
        }
        const autosched::Measurement m = autosched::run_measurement(task, schedule);
        std::cout << autosched::to_json(m).dump() << std::endl;
    } catch (const std::bad_alloc &) {
        std::cerr << "tessel-measure: out of memory (address-space limit " << task.memory_limit_bytes << " bytes)\n";
        return 3;
    }
    // Test hook: a valid answer with a failing exit status, which the parent must not accept.
    if (task.fault_for(schedule.name) == autosched::Fault::BadExit) return 3;
    return 0;
}
