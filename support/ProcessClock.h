/** \file
 * Time since the process started, for cold-start figures ("process start to first correct
 * result"). The origin is taken during static initialization of the program, after the dynamic
 * loader has run: loading the executable and its shared libraries (libHalide's ~150 MB included)
 * is not counted, and the figure says so where it is printed.
 */
#pragma once

#include "support/Clock.h"

namespace tessel {

inline const SteadyClock::time_point kProcessStart = SteadyClock::now();

/** Seconds since kProcessStart. */
inline double seconds_since_process_start() { return seconds_since(kProcessStart); }

}  // namespace tessel
