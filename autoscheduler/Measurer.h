/** \file
 * Measurer: compile and time candidate schedules (TVM MetaSchedule's builder + runner role).
 *
 * IsolatedMeasurer is the one the tuner uses: every candidate runs in its own child process,
 * the `tessel-measure` executable (apps/tessel_measure.cpp), which receives the task and the
 * schedule as JSON on stdin and answers a Measurement as JSON on stdout. The child gets its own
 * process group and a deadline; on expiry the whole group is killed. So a candidate that
 * crashes (Status::Crash, with the signal and the child's last stderr lines), hangs
 * (Status::Timeout) or that Halide rejects (Status::CompileError with Halide's message) is
 * recorded and the tuner carries on with the next one.
 *
 *   IsolatedMeasurer m;   // finds tessel-measure next to this executable
 *   auto results = m.measure(task, candidates, progress_bar(std::cerr));
 *
 * InProcessMeasurer runs the same code (run_measurement) without a child: faster to start, for
 * tests and tools that trust their candidates; a crash there is the caller's crash.
 */
#pragma once

#include "autoscheduler/MeasureTask.h"
#include "schedules/Schedule.h"

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace tessel::autosched {

/** Called after each candidate: `done` of `total` measured, the best Ok median so far in ms
 * (0 while none is Ok), and the estimated seconds left (mean time per candidate so far times
 * the number left). */
using ProgressFn = std::function<void(int done, int total, double best_ms, double eta_seconds)>;

class Measurer {
public:
    virtual ~Measurer() = default;
    /** One Measurement per candidate, in candidate order. Never throws for a bad candidate. */
    virtual std::vector<Measurement> measure(const MeasureTask &task, const std::vector<sched::ScheduleSpec> &candidates,
                                             const ProgressFn &progress = {}) = 0;
};

/** Each candidate in a fresh `tessel-measure` child process, sequentially, with the task's timeout. */
class IsolatedMeasurer : public Measurer {
public:
    /** `child_path` "" = find_measure_executable(). Throws std::runtime_error when not found. */
    explicit IsolatedMeasurer(std::string child_path = "");
    std::vector<Measurement> measure(const MeasureTask &task, const std::vector<sched::ScheduleSpec> &candidates,
                                     const ProgressFn &progress = {}) override;
    /** One candidate in one child; what measure() does per candidate. */
    Measurement measure_one(const MeasureTask &task, const sched::ScheduleSpec &candidate) const;
    const std::string &child_path() const { return child_path_; }

private:
    std::string child_path_;
};

/** run_measurement() in this process; no isolation, no timeout (faults are honored: do not
 * give it Crash or Hang). */
class InProcessMeasurer : public Measurer {
public:
    std::vector<Measurement> measure(const MeasureTask &task, const std::vector<sched::ScheduleSpec> &candidates,
                                     const ProgressFn &progress = {}) override;
};

/** Where `tessel-measure` is: next to the running executable, else in ../apps/ of it (build
 * tree: tests/autoscheduler/ -> apps/), else the path the build configured. "" if none exists. */
std::string find_measure_executable();

/** A ProgressFn that redraws one line on `out` with '\r':
 *   [#####-----] 5/10 best 1.23 ms eta 12 s
 * and ends it with '\n' when done == total. `width` is the number of bar cells. */
ProgressFn progress_bar(std::ostream &out, int width = 20);

/** The bar line itself, without '\r' (for tests and logs). */
std::string format_progress(int done, int total, double best_ms, double eta_seconds, int width = 20);

}  // namespace tessel::autosched
