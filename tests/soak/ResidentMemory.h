// Resident memory of this process in KiB (Linux /proc/self/statm), for the soak's flatness check;
// shared by test_soak.cpp and the driver it compiles.
#pragma once

#include <cstdio>

inline long resident_kib() {
    FILE *f = std::fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f && std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    if (f) std::fclose(f);
    return resident * 4;
}
