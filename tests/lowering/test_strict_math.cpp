// The compiled unary ops' error in ulps against the interpreter's double formula, on a dense
// sweep of float32 bit patterns plus the edges of every range the vector code selects between,
// for the host target and AVX2. The bounds are the largest errors measured over every float32
// (bench/math_ulp.cpp, docs/results/strict_math_ulp_intel.txt); a change that loses accuracy
// anywhere the sweep reaches fails here.
#include "tests/lowering/UnaryUlp.h"

#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstring>

using namespace tessel;
using testing::UlpReport;

namespace {

/** Every 65537th bit pattern (65,536 values across the whole float32 line) and the edges. */
std::vector<float> sweep() {
    std::vector<float> xs = testing::floats_by_bits(0, uint64_t(1) << 32, 65537);
    const float edges[] = {0.0f,        -0.0f,        INFINITY,  -INFINITY,  NAN,         -NAN,         FLT_MIN, -FLT_MIN,
                           FLT_MAX,     -FLT_MAX,     1e-45f,    -1e-45f,    1e-30f,      -1e-30f,      0.625f,  -0.625f,
                           0.62499994f, -0.62499994f, 9.1f,      -9.1f,      9.099999f,   -9.099999f,   14.5f,   -14.5f,
                           14.499999f,  -14.499999f,  88.72283f, 88.72284f,  88.72285f,   88.4f,        -87.33f, -87.34f,
                           -103.97f,    -103.98f,     -104.0f,   -104.01f,   0.34657359f, -0.34657359f, 1.0f,    -1.0f,
                           -2.8131375f, -5.5520682f,  -9.92553f, -91.39733f, 3.0f,        -3.0f,        1e10f,   -1e10f};
    for (float e : edges) {
        xs.push_back(e);
        xs.push_back(std::nextafter(e, INFINITY));
        xs.push_back(std::nextafter(e, -INFINITY));
    }
    return xs;
}

std::vector<float> at_least(std::vector<float> xs, float lo) {
    std::erase_if(xs, [&](float x) { return !(x >= lo); });
    return xs;
}

struct Bound {
    dsl::Op op;
    int64_t normal, subnormal;  ///< the largest error allowed, in ulps
};

void check(const UlpReport &r, const Bound &b, const std::string &target) {
    CAPTURE(dsl::to_string(b.op));
    CAPTURE(target);
    CAPTURE(r.worst_x);
    CAPTURE(r.worst_got);
    CAPTURE(r.worst_want);
    CHECK_MESSAGE(r.special_mismatches == 0, r.first_special);
    CHECK(r.max_ulp <= b.normal);
    CHECK(r.max_subnormal_ulp <= b.subnormal);
}

const char *const kAvx2 = "x86-64-linux-avx-avx2-f16c-fma-sse41";

}  // namespace

TEST_CASE("strict-mode unary ops: errors in ulps over a sweep of every float32 range, special values exact") {
    const std::vector<float> xs = sweep();
    const Bound bounds[] = {
        {dsl::Op::Exp, 1, 1},  {dsl::Op::Tanh, 1, 0},         {dsl::Op::Sigmoid, 3, 1}, {dsl::Op::Silu, 3, 1},
        {dsl::Op::Gelu, 6, 3}, {dsl::Op::GeluTanh, 250, 114}, {dsl::Op::Log, 3, 0},
    };
    for (const char *target : {"host", kAvx2})
        for (const Bound &b : bounds) check(testing::UnaryUlpProbe(b.op, "strict", target).measure(xs), b, target);
}

TEST_CASE("strict-mode tanh GELU: a tighter bound where its result is not in the far tail") {
    // 9 ulps for x >= -2; below, the rounding of u is amplified by |2u| in exp(2u).
    const std::vector<float> xs = at_least(sweep(), -2.0f);
    check(testing::UnaryUlpProbe(dsl::Op::GeluTanh, "strict").measure(xs), {dsl::Op::GeluTanh, 9, 0}, "host");
}

TEST_CASE("strict-mode ops whose results are subnormal: rounded once into the subnormals (no float op on a subnormal)") {
    // Where each result falls below FLT_MIN, every 7th bit pattern: the scaling by 2^k writes
    // these results from an integer count of 2^-149 steps (lowering/VectorMath.cpp), so its
    // rounding, the carry into FLT_MIN and the signed zeros are checked here.
    const auto between = [](float a, float b) {  // a, b of one sign, |a| < |b|
        uint32_t lo, hi;
        std::memcpy(&lo, &a, 4), std::memcpy(&hi, &b, 4);
        return testing::floats_by_bits(lo, uint64_t(hi) + 1, 7);
    };
    const struct {
        Bound bound;
        float from, to;
    } cases[] = {
        {{dsl::Op::Exp, 1, 1}, -86.0f, -104.5f},        {{dsl::Op::Sigmoid, 3, 1}, -86.0f, -104.5f},
        {{dsl::Op::Silu, 3, 1}, -86.0f, -120.5f},       {{dsl::Op::Gelu, 6, 3}, -12.5f, -14.75f},
        {{dsl::Op::GeluTanh, 250, 114}, -9.0f, -11.0f},
    };
    for (const char *target : {"host", kAvx2})
        for (const auto &c : cases) {
            CAPTURE(c.from);
            check(testing::UnaryUlpProbe(c.bound.op, "strict", target).measure(between(c.from, c.to)), c.bound, target);
        }
}

TEST_CASE("ulp_distance counts float32 steps across zero") {
    CHECK(testing::ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)) == 1);
    CHECK(testing::ulp_distance(-0.0f, 0.0f) == 0);
    CHECK(testing::ulp_distance(1e-45f, -1e-45f) == 2);
    CHECK(testing::ulp_distance(FLT_MAX, std::nextafter(FLT_MAX, 0.0f)) == 1);
}
