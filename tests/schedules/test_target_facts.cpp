// sched::TargetFacts: the CUDA architecture comes from the target's capability feature
// (host-cuda is 8.6 -> sm_86), the CPU vector facts from its vector features, and the
// readers (CPU blocking, schedule limits) agree with the facts; schedule provenance's text form.
#include "schedules/ApplySchedule.h"
#include "schedules/MatmulCpuSchedules.h"
#include "schedules/ScheduleProvenance.h"
#include "schedules/TargetFacts.h"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <utility>

using namespace tessel;
using namespace tessel::sched;

namespace {

/** What codegen's parse_target makes of "host-cuda". */
Halide::Target host_cuda() {
    return Halide::get_host_target().with_feature(Halide::Target::CUDA).with_feature(Halide::Target::CUDACapability86);
}

}  // namespace

TEST_CASE("TargetFacts: the CUDA architecture is the target's capability feature") {
    const TargetFacts f = TargetFacts::for_target(host_cuda());
    CHECK(f.device == Device::Cuda);
    CHECK(f.cuda.capability == 86);
    CHECK(f.cuda.ptx_arch() == "sm_86");
    CHECK(TargetFacts::for_target(Halide::Target("x86-64-linux-avx2-fma-cuda-cuda_capability_80")).cuda.ptx_arch() == "sm_80");
    CHECK(TargetFacts::for_target(Halide::Target("x86-64-linux-avx2-fma-cuda-cuda_capability_75")).cuda.ptx_arch() == "sm_75");
    // Capability 9.0: where this Halide names it, the target gives sm_90; Halide 21 does not
    // name it, and refuses the target string (so no target can claim sm_90 while Halide
    // generates PTX for another architecture).
    if (Halide::Target::feature_from_name("cuda_capability_90") != Halide::Target::FeatureEnd) {
        CHECK(TargetFacts::for_target(Halide::Target("x86-64-linux-cuda-cuda_capability_90")).cuda.ptx_arch() == "sm_90");
    } else {
        CHECK_FALSE(Halide::Target::validate_target_string("x86-64-linux-cuda-cuda_capability_90"));
    }
    // No capability feature: Halide emits generic PTX; it is checked on the nominal chip.
    CHECK(cuda_capability(Halide::Target("x86-64-linux-cuda")) == kNominalCudaCapability);
    CHECK(TargetFacts::for_target(Halide::Target("x86-64-linux-cuda")).cuda.ptx_arch() == "sm_90");
    // A CPU target has no CUDA architecture.
    CHECK(TargetFacts::for_target(Halide::Target("x86-64-linux-avx2-fma")).cuda.capability == 0);
    CHECK(TargetFacts::for_target(Halide::Target("x86-64-linux-avx2-fma")).device == Device::Cpu);
}

TEST_CASE("TargetFacts: CPU vector facts from the target, read by the blocking and the limits") {
    const Halide::Target avx2("x86-64-linux-sse41-avx-f16c-fma-avx2");
    const Halide::Target avx512("x86-64-linux-sse41-avx-f16c-fma-avx2-avx512-avx512_skylake");
    const TargetFacts f2 = TargetFacts::for_target(avx2), f512 = TargetFacts::for_target(avx512);
    CHECK(f2.cpu.f32_lanes == 8);
    CHECK(f2.cpu.vector_registers == 16);
    CHECK_FALSE(f2.cpu.avx512);
    CHECK(f512.cpu.f32_lanes == 16);
    CHECK(f512.cpu.vector_registers == 32);
    CHECK(f512.cpu.avx512);
    CHECK(f2.cpu.cores >= 1);
    CHECK(f2.cpu.l1_bytes > 0);
    CHECK(f2.cpu.l2_bytes >= f2.cpu.l1_bytes);
    for (const auto &[t, f] : {std::pair{avx2, f2}, std::pair{avx512, f512}}) {
        const CpuBlocking b = CpuBlocking::for_target(t);
        CHECK(b.lanes == f.cpu.f32_lanes);
        CHECK(b.mr * 3 + 4 <= f.cpu.vector_registers);  // accumulators + w vectors + broadcast fit
        CHECK(TargetLimits::for_target(t).natural_f32_lanes == f.cpu.natural_f32_lanes);
    }
    const TargetLimits cuda = TargetLimits::for_target(host_cuda());
    const TargetFacts fc = TargetFacts::for_target(host_cuda());
    CHECK(cuda.max_threads_per_block == fc.cuda.max_threads_per_block);
    CHECK(cuda.max_shared_bytes == fc.cuda.shared_per_block);
}

TEST_CASE("ScheduleProvenance: every value's text round-trips; an unknown word is refused") {
    for (auto p : {ScheduleProvenance::User, ScheduleProvenance::Database, ScheduleProvenance::Measured,
                   ScheduleProvenance::Model, ScheduleProvenance::LibraryDefault, ScheduleProvenance::CompileBudget})
        CHECK(parse_schedule_provenance(to_string(p)) == p);
    CHECK(std::string(to_string(ScheduleProvenance::LibraryDefault)) == "library");
    CHECK(std::string(to_string(ScheduleProvenance::CompileBudget)) == "budget");
    CHECK_THROWS_WITH_AS(parse_schedule_provenance("tuned"),
                         "unknown schedule provenance 'tuned' (valid: user, database, measured, model, library, budget)",
                         std::invalid_argument);
}
