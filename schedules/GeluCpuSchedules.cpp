// Map: CpuBlocking::for_target (register block per ISA) -> one function per loop nest
// (gemm, gemv, skinny, general) -> gelu_cpu_blocked / gelu_cpu_decode, which combine the
// nests with the guards under which each is valid.
#include "schedules/GeluCpuSchedules.h"

#include <algorithm>

namespace tessel::sched {

namespace {

const StageRef kY{"y"}, kInit{"matmul"}, kUpdate{"matmul", 0};

/** Halide names the loops of an input's in() wrapper after its implicit vars. */
const char *const kWrapperN = "_0";

}  // namespace

CpuBlocking CpuBlocking::for_target(const Halide::Target &target) {
    CpuBlocking b;
    b.lanes = std::max(4, target.natural_vector_size<float>());
    // Register budget: MR x 3 accumulators + 3 vectors of w + 1 broadcast of x.
    // AVX-512 has 32 vector registers (8 x 3 + 4 = 28), AVX2 has 16 (4 x 3 + 4 = 16).
    b.mr = target.has_feature(Halide::Target::AVX512) ? 8 : 4;
    b.nr = 3 * b.lanes;
    // 64 vectors: a 4 KiB run of each row of w per task, accumulators in L1.
    b.gemv_block = 64 * b.lanes;
    b.skinny_block = 16 * b.lanes;
    return b;
}

std::vector<Directive> gelu_cpu_gemm_steps(const CpuBlocking &b) {
    ScheduleSpec s;
    // Output: register tiles of nr x mr; all row tiles of one column block run in a row,
    // so the packed panel of w for that block is reused from L2 by every row tile.
    s.split(kY, "n", "no", "ni", b.nr, Tail::ShiftInwards)
        .split(kY, "m", "mo", "mi", b.mr, Tail::ShiftInwards)
        .reorder(kY, {"ni", "mi", "mo", "no"})
        .split(kY, "ni", "nv", "nl", b.lanes)
        .vectorize(kY, "nl")
        .unroll(kY, "nv")
        .unroll(kY, "mi")
        .parallel(kY, "no");
    // The matmul tile is the register block: k outermost inside it, everything else
    // unrolled, so its mr x 3 vectors never leave registers until bias+GELU reads them.
    // The tile's extents are nr x mr by bounds inference; the splits by exactly nr and mr
    // (outer loops of extent 1) state those extents so unroll can check them.
    s.compute_at("matmul", "y", "mo").store_in("matmul", MemoryLevel::Register);
    for (const StageRef &stage : {kInit, kUpdate}) {
        s.split(stage, "n", "nt", "nr", b.nr)
            .split(stage, "nr", "nv", "nl", b.lanes)
            .split(stage, "m", "mt", "mr", b.mr);
    }
    s.reorder(kInit, {"nl", "nv", "mr", "nt", "mt"})
        .vectorize(kInit, "nl")
        .unroll(kInit, "nv")
        .unroll(kInit, "mr")
        .reorder(kUpdate, {"nl", "nv", "mr", "k", "nt", "mt"})
        .vectorize(kUpdate, "nl")
        .unroll(kUpdate, "nv")
        .unroll(kUpdate, "mr");
    // Packed panel of w: the nr columns of this block for every k, contiguous, copied
    // once per column block (a strided read of w becomes one sequential stream).
    s.stage_input("w", "w_panel", "matmul")
        .compute_at("w_panel", "y", "no")
        .split(StageRef{"w_panel"}, kWrapperN, "pv", "pl", b.lanes)
        .vectorize(StageRef{"w_panel"}, "pl");
    return s.steps;
}

std::vector<Directive> gelu_cpu_gemv_steps(const CpuBlocking &b) {
    ScheduleSpec s;
    s.split(kY, "n", "no", "ni", b.gemv_block, Tail::ShiftInwards)
        .split(kY, "ni", "nv", "nl", b.lanes)
        .vectorize(kY, "nl")
        .parallel(kY, "no");
    // Per column block: for each k, one contiguous run of gemv_block floats of w, FMA'd
    // into accumulators that stay in L1. w is read exactly once, in long runs.
    s.compute_at("matmul", "y", "no")
        .split(kInit, "n", "nv", "nl", b.lanes)
        .vectorize(kInit, "nl")
        .split(kUpdate, "n", "nv", "nl", b.lanes)
        .split(kUpdate, "nv", "nvo", "nvi", 8)
        .reorder(kUpdate, {"nl", "nvi", "nvo", "m", "k"})
        .vectorize(kUpdate, "nl")
        .unroll(kUpdate, "nvi");
    return s.steps;
}

std::vector<Directive> gelu_cpu_skinny_steps(const CpuBlocking &b) {
    ScheduleSpec s;
    s.split(kY, "n", "no", "ni", b.skinny_block, Tail::ShiftInwards)
        .split(kY, "ni", "nv", "nl", b.lanes)
        .reorder(kY, {"nl", "nv", "m", "no"})
        .vectorize(kY, "nl")
        .parallel(kY, "no");
    // Rows of x innermost but one: each vector of w loaded for k is used by all M rows
    // before the next k, so w is still read once.
    s.compute_at("matmul", "y", "no")
        .split(kInit, "n", "nv", "nl", b.lanes)
        .vectorize(kInit, "nl")
        .split(kUpdate, "n", "nt", "nb", b.skinny_block)
        .split(kUpdate, "nb", "nv", "nl", b.lanes)
        .reorder(kUpdate, {"nl", "m", "nv", "k", "nt"})
        .vectorize(kUpdate, "nl")
        .unroll(kUpdate, "nv");
    return s.steps;
}

std::vector<Directive> gelu_cpu_general_steps(const CpuBlocking &b) {
    ScheduleSpec s;
    // One vector of outputs per tile, every tail guarded: correct for any extents.
    s.split(kY, "n", "no", "ni", b.lanes, Tail::GuardWithIf)
        .vectorize(kY, "ni")
        .parallel(kY, "m");
    s.compute_at("matmul", "y", "no")
        .split(kInit, "n", "nv", "nl", b.lanes, Tail::GuardWithIf)
        .vectorize(kInit, "nl")
        .split(kUpdate, "n", "nv", "nl", b.lanes, Tail::GuardWithIf)
        .reorder(kUpdate, {"nl", "nv", "m", "k"})
        .vectorize(kUpdate, "nl");
    return s.steps;
}

ScheduleSpec gelu_cpu_decode(const Halide::Target &target) {
    const CpuBlocking b = CpuBlocking::for_target(target);
    ScheduleSpec s("cpu_decode", Device::Cpu);
    s.description = "small M only: w streamed once in contiguous runs, columns in parallel";
    s.variants.push_back({{{"M", "==", 1}, {"N", ">=", b.gemv_block}}, gelu_cpu_gemv_steps(b)});
    s.variants.push_back({{{"N", ">=", b.skinny_block}}, gelu_cpu_skinny_steps(b)});
    s.steps = gelu_cpu_general_steps(b);
    return s;
}

ScheduleSpec gelu_cpu_blocked(const Halide::Target &target) {
    const CpuBlocking b = CpuBlocking::for_target(target);
    ScheduleSpec s("cpu_blocked", Device::Cpu);
    s.description = std::to_string(b.mr) + " rows x 3 vectors register block, packed w panel, fused epilogue; "
                    "decode nests for M < " + std::to_string(b.mr);
    s.variants.push_back({{{"M", "==", 1}, {"N", ">=", b.gemv_block}}, gelu_cpu_gemv_steps(b)});
    s.variants.push_back({{{"M", "<=", b.mr - 1}, {"N", ">=", b.skinny_block}}, gelu_cpu_skinny_steps(b)});
    s.variants.push_back({{{"M", ">=", b.mr}, {"N", ">=", b.nr}}, gelu_cpu_gemm_steps(b)});
    s.steps = gelu_cpu_general_steps(b);
    return s;
}

}  // namespace tessel::sched
