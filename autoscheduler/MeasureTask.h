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

#include "autoscheduler/MeasureGroup.h"
#include "dsl/ir/Graph.h"
#include "dsl/passes/Fusion.h"
#include "schedules/Schedule.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tessel::autosched {

/** Test hook only: a fault the measuring child injects on purpose, to prove isolation and
 * validation. Crash: abort() after compiling; Hang: sleep forever; HalideError: apply, instead
 * of the candidate, a schedule that passes Tessel's checks but that Halide itself rejects;
 * WrongResult: corrupt one output element after each run (the reference check must catch it);
 * NegativeTime / NanTime: report a negative / NaN time; Flood: write to stdout without end;
 * OutOfMemory: allocate until allocation fails (refuses to run without an address-space limit);
 * BadExit: print a valid result, then exit with status 3. */
enum class Fault { None, Crash, Hang, HalideError, WrongResult, NegativeTime, NanTime, Flood, OutOfMemory, BadExit };

/** One planned group of one graph at one shape on one target: everything a candidate needs.
 * The child parses `graph_text` — the graph the parent planned, already simplified and printed —
 * and lowers exactly `group`: it neither simplifies nor plans fusion again. */
struct MeasureTask {
    std::string graph_text;                ///< print(g) of the planned graph
    std::string graph_name = "graph.tsl";  ///< labels parse errors
    MeasureGroup group;
    std::map<std::string, int64_t> symbols;  ///< sizes of the graph's symbolic dims (M, K, N)
    std::string target = "host";             ///< a Halide target string (Target::to_string())
    int repeats = 5;                         ///< timed runs (median reported)
    int warmup = 1;                          ///< untimed runs before them
    double timeout_seconds = 60;             ///< per candidate, compile included (IsolatedMeasurer)
    uint32_t seed = 1;                       ///< random inputs
    /** Check the candidate's outputs against the reference (the group's default library
     * schedule, compiled in the same child) on the measured inputs before timing; a mismatch is
     * Status::WrongResult with the largest error. */
    bool verify = true;
    /** Largest relative error |got - want| / (1 + |want|) (support/ErrorStats.h) a verified
     * output may have. Two float32 summation orders of K <= 16384 products of [-1, 1] values
     * differ by about 1e-5 on that scale; a wrong index, tile or tail gives errors of order 1. */
    double verify_tolerance = 1e-3;
    /** Address-space limit of the measuring child in bytes (RLIMIT_AS); 0 = none. */
    int64_t memory_limit_bytes = 0;
    /** Before every timed run (untimed), write and read a buffer of this many bytes so the
     * inputs start cold, as in the benchmark's decode rows; 0 = warm runs. The tuner flushes
     * for memory-bound (decode) shapes, whose weights only partly fit the last-level cache. */
    int64_t flush_bytes = 0;
    /** Interleaved runs (run_interleaved_measurement): at least `repeats` rounds, then 5 more
     * at a time until the fastest candidate is separated from every other at `confidence`
     * (paired sign test: StoppingRule::until_separated, support/Interleaved.h) or `max_rounds` is reached (the rest tied). */
    int max_rounds = 40;
    double confidence = 0.95;
    Fault fault = Fault::None;  ///< test hook, every candidate; never set by the tuner
    /** Test hook: a fault for the candidate of this schedule name only (wins over `fault`), so
     * one batch can mix good and faulty candidates. */
    std::map<std::string, Fault> fault_by_schedule;
    /** The fault the candidate named `schedule_name` gets. */
    Fault fault_for(const std::string &schedule_name) const {
        auto it = fault_by_schedule.find(schedule_name);
        return it == fault_by_schedule.end() ? fault : it->second;
    }
};

/** WrongResult: the candidate ran but its outputs differ from the reference; InvalidResult:
 * the child's answer is unusable (non-finite or negative time, non-zero exit status, output past
 * the cap). */
enum class Status { Ok, CompileError, RuntimeError, Crash, Timeout, WrongResult, InvalidResult };

struct Measurement {
    Status status = Status::Ok;
    double median_ms = 0;         ///< of `samples`; 0 unless Ok
    std::vector<double> samples;  ///< timed runs in ms, in run order
    std::string message;          ///< why it failed ("" when Ok)
    double compile_seconds = 0;   ///< lower + schedule + JIT (0 when it did not get there)
    double max_error = 0;         ///< verification: largest relative error vs the reference
    bool ok() const { return status == Status::Ok; }
};

/** A Measurement whose times can be trusted: an Ok one with a non-finite or negative median or
 * sample, or no samples, becomes InvalidResult with a message saying which; others unchanged.
 * The measurer applies it to every child's answer and the tuner to every measurer's. */
Measurement validate_measurement(Measurement m);

std::string to_string(Status s);
std::string to_string(Fault f);
/** Parses the names to_string prints; throws std::invalid_argument naming the value. */
Status parse_status(const std::string &s);
Fault parse_fault(const std::string &s);

nlohmann::json to_json(const MeasureTask &t);
MeasureTask measure_task_from_json(const nlohmann::json &j);
nlohmann::json to_json(const Measurement &m);
Measurement measurement_from_json(const nlohmann::json &j);

/** The task for `group` of `g` (planned on g) at `symbols` on `target`, with defaults for the
 * timing fields. What the tuner sends; tests build tasks the same way. */
MeasureTask make_measure_task(const dsl::Graph &g, const dsl::FusionGroup &group, const std::map<std::string, int64_t> &symbols,
                              const std::string &target);

/** The group of a task resolved in the graph parsed from its text; throws std::invalid_argument
 * naming a member the graph does not have. */
dsl::FusionGroup resolve_group(const dsl::Graph &g, const MeasureGroup &group);

/** Compiles `schedule` for the task's group and times it, in this process: parse the graph,
 * resolve the group, build the CompiledKernel (lowering/CompiledKernel.h: the component every
 * command uses) for the variant whose guards hold at the shape (ScheduleError -> CompileError
 * with its message), fill the inputs with uniform values from `seed`, run once and (task.verify)
 * compare every output with the group's default library schedule on the same inputs
 * (WrongResult past verify_tolerance, naming the output, the element and both values), run
 * `warmup` times untimed, then `repeats` times timed. Halide errors while compiling are CompileError, while
 * running RuntimeError. Never throws for a bad candidate; a malformed task (no such group
 * member, a symbol left unbound) is a CompileError too. Honors task.fault (so Crash and Hang do exactly that
 * to the calling process: only the child executable should see those). Does not enforce the
 * timeout. Example:
 *   Measurement m = run_measurement(task, sched::library_schedule("cpu_blocked", t));
 */
Measurement run_measurement(const MeasureTask &task, const sched::ScheduleSpec &schedule);

/** Several candidates of one task in this process, timed call by call in turn: each is
 * compiled and verified as run_measurement does (a failure is that candidate's Measurement,
 * the others go on); then the interleaved harness (support/Interleaved.h) warms them up and
 * calls each candidate once a round, in an order drawn afresh each round, flushing before each
 * timed call when the task asks, until the stopping rule of MeasureTask::max_rounds. Sample i of every Ok Measurement is from round i, so two of them
 * compare pairwise (compare_paired). One Measurement per schedule, in order. */
std::vector<Measurement> run_interleaved_measurement(const MeasureTask &task, const std::vector<sched::ScheduleSpec> &schedules);

}  // namespace tessel::autosched
