/** \file
 * tessel_bench's own flags (the rest of argv goes to Google Benchmark): BenchOptions, parsed by
 * parse_options, which takes our flags out of argv and leaves Google Benchmark's.
 */
#pragma once

#include <string>

namespace tessel::bench {

struct BenchOptions {
    int threads = 2;
    std::string shapes = TESSEL_BENCH_SHAPES;
    std::string schedule = "cpu_blocked";
    double seconds_per_repetition = 0.3;  ///< timed work per benchmark repetition
    std::string mode_shape = "mlp_up";    ///< where tanh strict/fast and erf are compared
    /** Shapes where the same work also runs as a two-output group and as x @ w.T (GroupVariants.h). */
    std::string variant_shapes = "mlp_up,decode_1";
    /** Which of those variants to build and time (GroupVariants.h labels; "" = all). */
    std::string variants;
    std::string error_shape = "odd_bert";  ///< where errors vs float64 are measured
    std::string baseline;                  ///< a second schedule timed beside `schedule` ("" = none)
    std::string save_schedule;             ///< write `schedule` as JSON here and exit
    std::string target = "host";           ///< what Tessel's kernels are compiled for (and the FMA probe's width)
};

void print_usage();

/** Takes our flags out of argv, leaving Google Benchmark's; throws std::invalid_argument on a
 * flag without its value or a bad --threads. */
BenchOptions parse_options(int &argc, char **argv);

}  // namespace tessel::bench
