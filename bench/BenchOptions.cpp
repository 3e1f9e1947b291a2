// tessel_bench's flags: the usage text and parse_options.
#include "bench/BenchOptions.h"

#include <iostream>
#include <stdexcept>

namespace tessel::bench {

void print_usage() {
    std::cout << "tessel_bench [--threads N] [--shapes FILE] [--schedule NAME] [--seconds S]\n"
                 "             [--mode-shape NAME] [--error-shape NAME] [--baseline NAME|FILE.json]\n"
                 "             [--save-schedule FILE.json] [--target T] [Google Benchmark flags]\n"
                 "  --threads N      threads for Tessel, OpenBLAS and the probes (default 2)\n"
                 "  --shapes FILE    shape suite (default bench/shapes.txt)\n"
                 "  --schedule NAME  Tessel CPU library schedule (or FILE.json) to time (default cpu_blocked)\n"
                 "  --baseline NAME  a second schedule (library name or FILE.json) timed in the same run,\n"
                 "                   e.g. the previous version of --schedule saved with --save-schedule\n"
                 "  --save-schedule FILE.json  write --schedule for this machine's target as JSON and exit\n"
                 "  --seconds S      timed seconds per benchmark repetition (default 0.3)\n"
                 "  --target T       Halide target of Tessel's kernels (default host); e.g.\n"
                 "                   x86-64-linux-avx-avx2-f16c-fma-sse41 for AVX2 on an AVX-512 machine.\n"
                 "                   The FMA probe runs the same vector width\n"
                 "  --variant-shapes A,B  shapes also timed as a two-output group and as x @ w.T\n"
                 "                   (default mlp_up,decode_1; \"\" for none)\n"
                 "  --variants A,B   only these of them (two_outputs, x_wT, x_wT_prepared, w_bf16, w_int8, w_int4, w_int4_g128,\n"
                 "                   w_panels, w_bf16_panels; default all); the others print as nan\n"
                 "JSON: --benchmark_format=json or --benchmark_out=FILE --benchmark_out_format=json\n";
}

BenchOptions parse_options(int &argc, char **argv) {
    BenchOptions o;
    int out = 1;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto value = [&](const std::string &flag) -> std::string {
            if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
            if (a == flag && i + 1 < argc) return argv[++i];
            throw std::invalid_argument(flag + " needs a value");
        };
        auto is = [&](const char *flag) { return a == flag || a.rfind(std::string(flag) + "=", 0) == 0; };
        if (is("--threads"))
            o.threads = std::stoi(value("--threads"));
        else if (is("--shapes"))
            o.shapes = value("--shapes");
        else if (is("--schedule"))
            o.schedule = value("--schedule");
        else if (is("--seconds"))
            o.seconds_per_repetition = std::stod(value("--seconds"));
        else if (is("--mode-shape"))
            o.mode_shape = value("--mode-shape");
        else if (is("--variant-shapes"))
            o.variant_shapes = value("--variant-shapes");
        else if (is("--variants"))
            o.variants = value("--variants");
        else if (is("--error-shape"))
            o.error_shape = value("--error-shape");
        else if (is("--baseline"))
            o.baseline = value("--baseline");
        else if (is("--save-schedule"))
            o.save_schedule = value("--save-schedule");
        else if (is("--target"))
            o.target = value("--target");
        else if (a == "--help" || a == "-h")
            print_usage(), argv[out++] = argv[i];
        else
            argv[out++] = argv[i];
    }
    argc = out;
    if (o.threads < 1) throw std::invalid_argument("--threads must be >= 1");
    return o;
}

}  // namespace tessel::bench
