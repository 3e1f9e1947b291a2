/** \file
 * Time since the process started, for cold-start figures ("process start to first correct
 * result"). The origin is taken during static initialization of the program, after the dynamic
 * loader has run: loading the executable and its shared libraries (libHalide's ~150 MB included)
 * is not counted, and the figure says so where it is printed.
 */
#pragma once

#include <chrono>

namespace tessel {

inline const std::chrono::steady_clock::time_point kProcessStart = std::chrono::steady_clock::now();

/** Seconds since kProcessStart. */
inline double seconds_since_process_start() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - kProcessStart).count();
}

}  // namespace tessel
