/** \file
 * MeasureTask and Measurement: what one candidate measurement is asked to do and what it
 * reports, plus the single code path that compiles and times a candidate (TVM's builder +
 * runner in one function). The tuner never calls `run_measurement` itself: IsolatedMeasurer
 * (Measurer.h) runs it in the child executable `tessel-measure`, so a crash, a hang or a
 * Halide error in one candidate cannot take the tuner down.
 *
 * The child's protocol: one JSON object on stdin, {"task": MeasureTask, "schedule":
 * ScheduleSpec JSON}; one JSON Measurement on stdout. Both directions are plain JSON so the
 * protocol can be exercised by hand:
 *
 *   echo '{"task": {...}, "schedule": {...}}' | build/apps/tessel-measure
 */
#pragma once

#include "schedules/Schedule.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tessel::autosched {

/** Test hook only: a fault the measuring child injects on purpose, to prove isolation.
 * Crash: abort() after compiling; Hang: sleep forever; HalideError: apply, instead of the
 * candidate, a schedule that passes Tessel's checks but that Halide itself rejects. */
enum class Fault { None, Crash, Hang, HalideError };

/** One group of one graph at one shape on one target: everything a candidate needs. */
struct MeasureTask {
    std::string graph_text;                 ///< the .tsl file's contents
    std::string graph_name = "graph.tsl";   ///< labels parse errors
    std::string group;                      ///< fusion group name ("g0_y"); "" = first matmul+epilogue group
    std::map<std::string, int64_t> symbols; ///< sizes of the graph's symbolic dims (M, K, N)
    std::string target = "host";            ///< codegen/Compile.h parse_target syntax
    int repeats = 5;                        ///< timed runs (median reported)
    int warmup = 1;                         ///< untimed runs before them
    double timeout_seconds = 60;            ///< per candidate, compile included (IsolatedMeasurer)
    uint32_t seed = 1;                      ///< random inputs
    /** Before every timed run (untimed), write and read a buffer of this many bytes so the
     * inputs start cold, as in the benchmark's decode rows; 0 = warm runs. The tuner flushes
     * for memory-bound (decode) shapes, whose weights only partly fit the last-level cache. */
    int64_t flush_bytes = 0;
    Fault fault = Fault::None;              ///< test hook, every candidate; never set by the tuner
    /** Test hook: a fault for the candidate of this schedule name only (wins over `fault`), so
     * one batch can mix good and faulty candidates. */
    std::map<std::string, Fault> fault_by_schedule;
    /** The fault the candidate named `schedule_name` gets. */
    Fault fault_for(const std::string &schedule_name) const {
        auto it = fault_by_schedule.find(schedule_name);
        return it == fault_by_schedule.end() ? fault : it->second;
    }
};

enum class Status { Ok, CompileError, RuntimeError, Crash, Timeout };

struct Measurement {
    Status status = Status::Ok;
    double median_ms = 0;              ///< of `samples`; 0 unless Ok
    std::vector<double> samples;       ///< timed runs in ms, in run order
    std::string message;               ///< why it failed ("" when Ok)
    double compile_seconds = 0;        ///< lower + schedule + JIT (0 when it did not get there)
    bool ok() const { return status == Status::Ok; }
};

std::string to_string(Status s);
std::string to_string(Fault f);
/** Parses the names to_string prints; throws std::invalid_argument naming the value. */
Status parse_status(const std::string &s);
Fault parse_fault(const std::string &s);

nlohmann::json to_json(const MeasureTask &t);
MeasureTask measure_task_from_json(const nlohmann::json &j);
nlohmann::json to_json(const Measurement &m);
Measurement measurement_from_json(const nlohmann::json &j);

/** Compiles `schedule` for the task's group and times it, in this process: parse + simplify
 * the graph, plan fusion with the task's symbol sizes, lower the group, apply the schedule
 * variant whose guards hold for the shape (ScheduleError -> CompileError with its message),
 * JIT compile, fill the inputs with uniform values from `seed`, run `warmup` times untimed,
 * then `repeats` times timed. Halide errors while compiling are CompileError, while running
 * RuntimeError. Never throws for a bad candidate; a malformed task (no such group, a symbol
 * left unbound) is a CompileError too. Honors task.fault (so Crash and Hang do exactly that
 * to the calling process: only the child executable should see those). Does not enforce the
 * timeout. Example:
 *   Measurement m = run_measurement(task, sched::library_schedule("cpu_blocked", t));
 */
Measurement run_measurement(const MeasureTask &task, const sched::ScheduleSpec &schedule);

/** Median of a non-empty sample list (the upper median for even sizes); 0 when empty. */
double median(std::vector<double> samples);

}  // namespace tessel::autosched
