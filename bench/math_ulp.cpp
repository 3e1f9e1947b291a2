// tessel_math_ulp: the error in float32 ulps of each compiled unary op over every float32 (or
// every `--stride`-th bit pattern), against the interpreter's formula in double rounded once
// (tests/lowering/UnaryUlp.h). Prints one row per op and mode: the largest error on normal
// results and where it is, the largest on subnormal results, the error histogram, and special
// values that differ.
//
//   tessel_math_ulp [--stride N] [--range LO HI] [--mode strict|fast] [--target T] [op ...]
//
// --range keeps the inputs x with LO <= x <= HI.
#include "tests/lowering/UnaryUlp.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace tessel;

int main(int argc, char **argv) {
    uint64_t stride = 1;
    std::string mode = "strict", target = "host";
    double range_lo = -INFINITY, range_hi = INFINITY;
    bool ranged = false;
    std::vector<dsl::Op> ops;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        if (a == "--stride" && i + 1 < argc)
            stride = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--range" && i + 2 < argc) {
            range_lo = std::strtod(argv[++i], nullptr), range_hi = std::strtod(argv[++i], nullptr);
            ranged = true;
        } else if (a == "--mode" && i + 1 < argc)
            mode = argv[++i];
        else if (a == "--target" && i + 1 < argc)
            target = argv[++i];
        else if (dsl::Op op; dsl::parse_op(a, &op))
            ops.push_back(op);
        else {
            std::fprintf(stderr, "tessel_math_ulp: unknown argument '%s'\n", a.c_str());
            return 2;
        }
    }
    if (stride == 0) stride = 1;
    if (ops.empty())
        ops = {dsl::Op::Exp, dsl::Op::Tanh, dsl::Op::Sigmoid, dsl::Op::Silu, dsl::Op::Gelu, dsl::Op::GeluTanh, dsl::Op::Log};
    std::printf("# every %llu-th float32 bit pattern%s, mode %s, target %s; error against the double formula rounded once\n",
                (unsigned long long)stride,
                ranged ? (" in [" + std::to_string(range_lo) + ", " + std::to_string(range_hi) + "]").c_str() : "", mode.c_str(),
                target.c_str());
    std::printf("%-10s %12s %8s %16s %16s %16s %9s %10s %10s %10s %10s %10s %10s %10s %8s\n", "op", "checked", "max_ulp", "at_x",
                "got", "want", "subnormal", "0", "1", "2", "3", "4-15", "16-255", ">=256", "special");
    const uint64_t chunk = uint64_t(1) << 22;
    for (dsl::Op op : ops) {
        testing::UnaryUlpProbe probe(op, mode, target);
        testing::UlpReport total;
        for (uint64_t lo = 0; lo < (uint64_t(1) << 32); lo += chunk * stride) {
            std::vector<float> xs = testing::floats_by_bits(lo, std::min(lo + chunk * stride, uint64_t(1) << 32), stride);
            if (ranged) std::erase_if(xs, [&](float x) { return !(x >= range_lo && x <= range_hi); });
            if (!xs.empty()) total.merge(probe.measure(xs));
        }
        std::printf("%-10s %12lld %8lld %16.9g %16.9g %16.9g %9lld", dsl::to_string(op), (long long)total.checked,
                    (long long)total.max_ulp, (double)total.worst_x, (double)total.worst_got, (double)total.worst_want,
                    (long long)total.max_subnormal_ulp);
        for (int64_t h : total.histogram) std::printf(" %10lld", (long long)h);
        std::printf(" %8lld\n", (long long)total.special_mismatches);
        if (!total.first_special.empty()) std::printf("  first special mismatch: %s\n", total.first_special.c_str());
        std::fflush(stdout);
    }
}
