/** \file
 * Measurer: compile and time candidate schedules (TVM MetaSchedule's builder + runner role).
 *
 * IsolatedMeasurer is the one the tuner uses: every candidate runs in its own child process,
 * the `tessel-measure` executable (apps/tessel_measure.cpp), which receives the task and the
 * schedule as JSON on stdin and answers a Measurement as JSON on stdout. The child gets its own
 * process group, a deadline (on expiry the whole group is killed), the task's address-space
 * limit (RLIMIT_AS), a cap on its output (past it the group is killed) and SIGKILL as its
 * parent-death signal, so it never outlives the tuner, even one killed with SIGKILL. Children on
 * one host run one at a time, whichever process starts them (`tessel tune`, several `tessel
 * worker`s, tests): each holds the host's measuring lock (support/HostLock.h) while it runs. So a
 * candidate that crashes (Status::Crash, with the signal and the child's last stderr lines),
 * runs out of memory (Crash, exit status 3), hangs (Status::Timeout), that Halide rejects
 * (Status::CompileError with Halide's message), that computes wrong results (Status::WrongResult,
 * the child checks every candidate against the reference before timing it) or whose answer is
 * unusable (Status::InvalidResult: a non-zero exit status, a negative or non-finite time, output
 * past the cap) is recorded and the tuner carries on with the next one.
 *
 * The parent-death signal follows the thread that forked: call measure() from a thread that
 * lives as long as the measurement (the tuner calls it from its own).
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
#include <optional>
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
    /** The candidates timed together, call by call in turn (run_interleaved_measurement), so
     * their samples pair by round; one Measurement per candidate, in order. */
    virtual std::vector<Measurement> measure_interleaved(const MeasureTask &task,
                                                         const std::vector<sched::ScheduleSpec> &candidates) = 0;
};

/** Each candidate in a fresh `tessel-measure` child process, sequentially, with the task's timeout. */
class IsolatedMeasurer : public Measurer {
public:
    /** `child_path` "" = find_measure_executable(). Throws std::runtime_error when not found.
     * `max_output_bytes`: stdout plus stderr a child may write before it is killed. */
    explicit IsolatedMeasurer(std::string child_path = "", size_t max_output_bytes = kMaxChildOutputBytes);
    std::vector<Measurement> measure(const MeasureTask &task, const std::vector<sched::ScheduleSpec> &candidates,
                                     const ProgressFn &progress = {}) override;
    /** One child for all of them (a crash or timeout fails every one; its timeout is the
     * task's per candidate, one more for the rounds). */
    std::vector<Measurement> measure_interleaved(const MeasureTask &task,
                                                 const std::vector<sched::ScheduleSpec> &candidates) override;
    /** One candidate in one child; what measure() does per candidate. */
    Measurement measure_one(const MeasureTask &task, const sched::ScheduleSpec &candidate) const;
    const std::string &child_path() const { return child_path_; }

    /** Default output cap of a measuring child (1 MiB; a result is a few hundred bytes). */
    static constexpr size_t kMaxChildOutputBytes = 1 << 20;

private:
    std::string child_path_;
    size_t max_output_bytes_;
    /** Runs one child on `request`: a failure Measurement (crash, timeout, flood, non-zero
     * exit), or nullopt with its standard output in `answer`. */
    std::optional<Measurement> exchange(const std::string &request, double timeout_seconds, int64_t memory_limit_bytes,
                                        std::string *answer) const;
};

/** run_measurement() in this process, then validate_measurement(); no isolation, no timeout
 * (faults are honored: do not give it Crash, Hang, Flood or OutOfMemory). */
class InProcessMeasurer : public Measurer {
public:
    std::vector<Measurement> measure(const MeasureTask &task, const std::vector<sched::ScheduleSpec> &candidates,
                                     const ProgressFn &progress = {}) override;
    std::vector<Measurement> measure_interleaved(const MeasureTask &task,
                                                 const std::vector<sched::ScheduleSpec> &candidates) override;
};

/** Whether a measuring child's address-space limit (RLIMIT_AS) is applied. Not in an
 * AddressSanitizer build: ASan reserves terabytes of address space for its shadow memory at
 * start-up, and a limited child could not start (the limit is then ignored, and a runaway
 * candidate is stopped by its timeout alone). */
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSpaceLimits = false;
#else
constexpr bool kAddressSpaceLimits = true;
#endif

/** The tuner's default address-space limit for a measuring child: the machine's physical
 * memory, at least 8 GiB (virtual reservations of JIT and thread arenas count too), so a
 * runaway candidate fails its own allocation instead of starving the tuner. */
int64_t default_child_memory_limit();

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
