/** \file
 * The one wall clock of measurements: `seconds_since(t0)` on std::chrono::steady_clock, and
 * `steady_seconds()`, the same clock as a number (the default clock of the interleaved harness,
 * support/Interleaved.h, whose tests inject their own). Monotonic, so legal for any interval
 * within one process; not comparable across processes.
 */
#pragma once

#include <chrono>

namespace tessel {

using SteadyClock = std::chrono::steady_clock;

/** Seconds from `t0` to now. */
inline double seconds_since(SteadyClock::time_point t0) { return std::chrono::duration<double>(SteadyClock::now() - t0).count(); }

/** Now, in seconds since the clock's (arbitrary) epoch: for differences only. */
inline double steady_seconds() { return std::chrono::duration<double>(SteadyClock::now().time_since_epoch()).count(); }

}  // namespace tessel
