// The CPU targets of a generated library: parsing the list, the CPU features each needs.
#include "driver/LibraryTargets.h"

#include "codegen/Compile.h"

#include <set>
#include <sstream>
#include <stdexcept>

namespace tessel {

namespace {

using Feature = Halide::Target::Feature;

/** The x86 features a target's code may need, with __builtin_cpu_supports' names for them (the
 * runtime's tessel_cpu_supports knows each of these names). */
const std::pair<Feature, std::vector<const char *>> kCpuFeatures[] = {
    {Feature::SSE41, {"sse4.1"}},
    {Feature::AVX, {"avx"}},
    {Feature::AVX2, {"avx2"}},
    {Feature::FMA, {"fma"}},
    {Feature::F16C, {"f16c"}},
    {Feature::AVX512, {"avx512f", "avx512cd"}},
    {Feature::AVX512_Skylake, {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}},
    {Feature::AVX512_Cannonlake, {"avx512ifma", "avx512vbmi"}},
    {Feature::AVX512_Zen4, {"avx512bf16", "avx512vnni"}},
};

}  // namespace

std::vector<Halide::Target> library_targets(const std::string &text) {
    std::vector<Halide::Target> out;
    if (text == "x86-multi") {
        for (const char *t : {"x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41",
                              "x86-64-linux-avx-avx2-f16c-fma-sse41", "x86-64-linux"})
            out.push_back(parse_target(t));
        return out;
    }
    std::stringstream ss(text);
    for (std::string t; std::getline(ss, t, ',');) out.push_back(parse_target(t));
    if (out.empty()) throw std::invalid_argument("tessel lib: no target given");
    return out;
}

CpuRequirements cpu_requirements(const Halide::Target &t) {
    std::set<std::string> features;
    for (const auto &[f, names] : kCpuFeatures)
        if (t.has_feature(f)) features.insert(names.begin(), names.end());
    const std::string suffix = t.has_feature(Feature::AVX512)  ? "avx512"
                               : t.has_feature(Feature::AVX2)  ? "avx2"
                               : t.has_feature(Feature::AVX)   ? "avx"
                               : t.has_feature(Feature::SSE41) ? "sse41"
                                                               : "x86_64";
    return {{features.begin(), features.end()}, suffix};
}

bool host_runs(const Halide::Target &t) {
    const Halide::Target host = Halide::get_host_target();
    for (const auto &[f, names] : kCpuFeatures)
        if (t.has_feature(f) && !host.has_feature(f)) return false;
    return true;
}

}  // namespace tessel
