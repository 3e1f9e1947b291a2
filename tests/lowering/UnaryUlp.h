// The error of a compiled unary op in float32 ulps against the interpreter's formula (computed
// in double and rounded once to float32: correctly rounded but for the rare double results
// within 2^-29 of a float32 rounding boundary). The op runs the way a graph runs it: a one-op
// graph `%y = op(%x)` lowered, scheduled (vectorized) and JIT-compiled by CompiledGraph.
//
// Special values are exact requirements, not ulps: where the reference is NaN the kernel must
// give NaN, where it is an infinity or a zero, the same infinity or zero with the same sign.
// Used by tests/lowering/test_strict_math.cpp (a dense sweep) and bench/math_ulp.cpp (every
// float32).
#pragma once

#include "dsl/Simplify.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/passes/FusionPolicy.h"
#include "lowering/CompiledGraph.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace tessel::testing {

/** Largest error found over some inputs of one op. */
struct UlpReport {
    int64_t checked = 0;
    int64_t max_ulp = 0;            ///< over normal references (|want| >= FLT_MIN)
    int64_t max_subnormal_ulp = 0;  ///< over subnormal references (one ulp there is 2^-149 absolute)
    float worst_x = 0, worst_got = 0, worst_want = 0;
    int64_t special_mismatches = 0;  ///< NaN, infinity or signed zero differing from the reference
    std::string first_special;       ///< "f(x) = got, want w" of the first one
    /** Counts of errors 0, 1, 2, 3, 4-15, 16-255, >= 256 ulps (normal and subnormal references). */
    int64_t histogram[7] = {};

    void merge(const UlpReport &o) {
        checked += o.checked;
        max_subnormal_ulp = std::max(max_subnormal_ulp, o.max_subnormal_ulp);
        if (o.max_ulp > max_ulp) {
            max_ulp = o.max_ulp;
            worst_x = o.worst_x, worst_got = o.worst_got, worst_want = o.worst_want;
        }
        if (first_special.empty()) first_special = o.first_special;
        special_mismatches += o.special_mismatches;
        for (int i = 0; i < 7; i++) histogram[i] += o.histogram[i];
    }
};

/** Distance in float32 steps between two finite floats (-0 and +0 are one value here). */
inline int64_t ulp_distance(float a, float b) {
    auto key = [](float f) {
        int32_t bits;
        std::memcpy(&bits, &f, sizeof bits);
        return bits < 0 ? -(int64_t)(bits & 0x7fffffff) : (int64_t)bits;
    };
    const int64_t d = key(a) - key(b);
    return d < 0 ? -d : d;
}

/** One op compiled once in `mode` ("strict" or "fast"), run on chunks of inputs. */
class UnaryUlpProbe {
public:
    UnaryUlpProbe(dsl::Op op, const std::string &mode, const std::string &target = "host") : op_(op) {
        const std::string text =
            "graph unary mode=" + mode + " {\n  %x = input : f32[N]\n  %y = " + dsl::to_string(op) + "(%x)\n  output %y\n}\n";
        graph_ = dsl::simplify_text(text, "<unary>").graph;
        program_ = std::make_unique<CompiledGraph>(graph_, dsl::plan_fusion(graph_), parse_target(target));
    }

    UlpReport measure(const std::vector<float> &xs) const {
        Halide::Buffer<float> in((int)xs.size()), out((int)xs.size());
        std::memcpy(in.data(), xs.data(), xs.size() * sizeof(float));
        program_->run_buffers({}, {{"x", Halide::Buffer<>(in)}, {"y", Halide::Buffer<>(out)}});
        UlpReport r;
        for (size_t i = 0; i < xs.size(); i++) check(xs[i], out(i), r);
        return r;
    }

private:
    void check(float x, float got, UlpReport &r) const {
        const float want = (float)dsl::unary_formula(op_, (double)x);
        r.checked++;
        const bool special = std::isnan(want) || std::isinf(want) || want == 0.0f;
        if (special) {
            const bool same = std::isnan(want) ? std::isnan(got) : got == want && std::signbit(got) == std::signbit(want);
            if (!same) {
                if (r.first_special.empty())
                    r.first_special =
                        std::string(dsl::to_string(op_)) + "(" + show(x) + ") = " + show(got) + ", want " + show(want);
                r.special_mismatches++;
            }
            return;
        }
        const int64_t ulp = std::isfinite(got) ? ulp_distance(got, want) : int64_t(1) << 32;
        r.histogram[ulp < 4 ? ulp : ulp < 16 ? 4 : ulp < 256 ? 5 : 6]++;
        if (std::fabs(want) < FLT_MIN) {
            r.max_subnormal_ulp = std::max(r.max_subnormal_ulp, ulp);
        } else if (ulp > r.max_ulp) {
            r.max_ulp = ulp;
            r.worst_x = x, r.worst_got = got, r.worst_want = want;
        }
    }

    static std::string show(float f) {
        char s[48];
        std::snprintf(s, sizeof s, "%.9g", (double)f);
        return s;
    }

    dsl::Op op_;
    dsl::Graph graph_;
    std::unique_ptr<CompiledGraph> program_;
};

/** The float32 values with bits lo, lo + stride, ... below hi (as unsigned bit patterns). */
inline std::vector<float> floats_by_bits(uint64_t lo, uint64_t hi, uint64_t stride) {
    std::vector<float> v;
    v.reserve((size_t)((hi - lo + stride - 1) / stride));
    for (uint64_t b = lo; b < hi; b += stride) {
        const uint32_t bits = (uint32_t)b;
        float f;
        std::memcpy(&f, &bits, sizeof f);
        v.push_back(f);
    }
    return v;
}

}  // namespace tessel::testing
