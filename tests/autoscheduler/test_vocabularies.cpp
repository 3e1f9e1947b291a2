// The autoscheduler's typed vocabularies: every nest family and shape class round-trips through
// its text form (the words tuning databases and `tessel tune` use), unknown words are refused
// with the valid ones named, and the cost model's TargetModel is read from sched::TargetFacts.
#include "autoscheduler/NestFamily.h"
#include "autoscheduler/SearchSpace.h"
#include "autoscheduler/ShapeClass.h"
#include "autoscheduler/TargetModel.h"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

using namespace tessel;
using namespace tessel::autosched;

TEST_CASE("NestFamily: every family's text round-trips; the words are the stored ones") {
    const NestFamily all[] = {
        NestFamily::None,
#define NEST_FAMILY(E, text, device) NestFamily::E,
#include "autoscheduler/NestFamilies.def"
#undef NEST_FAMILY
    };
    for (NestFamily f : all) {
        INFO(to_string(f));
        CHECK(parse_nest_family(to_string(f)) == f);
    }
    // The words existing databases' descriptions and JSON hold.
    CHECK(std::string(to_string(NestFamily::Splitk)) == "splitk");
    CHECK(std::string(to_string(NestFamily::CudaTiled)) == "cuda_tiled");
    CHECK(nest_device(NestFamily::CudaDecode) == sched::Device::Cuda);
    CHECK(nest_device(NestFamily::Gemv) == sched::Device::Cpu);
    CHECK_THROWS_WITH_AS(parse_nest_family("gem"), doctest::Contains("unknown nest family 'gem' (valid: none, gemm, splitk"),
                         std::invalid_argument);
    CHECK_THROWS_AS(parse_nest_family(""), std::invalid_argument);

    CandidateParams p;
    p.nest = NestFamily::Gemm, p.mr = 8, p.nr_vectors = 3, p.panel_blocks = 1;
    CHECK(p.to_string() == "gemm mr=8 nr=3v panel=1");
    CHECK(p.to_json().at("nest") == "gemm");
}

TEST_CASE("ShapeClass: every class's text round-trips; workloads classify as before") {
    const ShapeClass all[] = {
#define SHAPE_CLASS(E, text) ShapeClass::E,
#include "autoscheduler/ShapeClasses.def"
#undef SHAPE_CLASS
    };
    for (ShapeClass c : all) {
        INFO(to_string(c));
        CHECK(parse_shape_class(to_string(c)) == c);
    }
    CHECK_THROWS_WITH_AS(parse_shape_class("tall"), doctest::Contains("unknown shape class 'tall' (valid: decode, square, mlp"),
                         std::invalid_argument);
    Workload w;
    w.M = 16, w.K = 4096, w.N = 4096;
    CHECK(w.shape_class() == ShapeClass::Decode);
    w.M = 512, w.K = 512, w.N = 1024;
    CHECK(w.shape_class() == ShapeClass::Square);
    CHECK(std::string(to_string(w.shape_class())) == "square");
    w.N = 4096;
    CHECK(w.shape_class() == ShapeClass::Mlp);
}

TEST_CASE("TargetModel reads TargetFacts: CPU vector facts, and the CUDA architecture from the target") {
    const Halide::Target avx2("x86-64-linux-sse41-avx-f16c-fma-avx2");
    const sched::TargetFacts f = sched::TargetFacts::for_target(avx2);
    const TargetModel m = TargetModel::for_target(avx2);
    CHECK(m.device == sched::Device::Cpu);
    CHECK(m.cpu.lanes == f.cpu.f32_lanes);
    CHECK(m.cpu.vector_registers == f.cpu.vector_registers);
    CHECK(m.cpu.l2_bytes == f.cpu.l2_bytes);
    CHECK(m.cpu.cores == f.cpu.cores);

    const Halide::Target cuda = avx2.with_feature(Halide::Target::CUDA).with_feature(Halide::Target::CUDACapability86);
    const TargetModel g = TargetModel::for_target(cuda);
    CHECK(g.device == sched::Device::Cuda);
    CHECK(g.cuda.ptx_arch() == "sm_86");
    CHECK(g.to_string().find("CUDA sm_86 model") == 0);
}
