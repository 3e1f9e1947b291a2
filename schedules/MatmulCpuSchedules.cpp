// Map: CpuBlocking::for_target (register block per ISA) -> one function per loop nest
// (gemm, split-K gemm, gemv, decode, general) -> matmul_cpu_blocked / matmul_cpu_decode, which combine the
// nests with the guards under which each is valid.
#include "schedules/MatmulCpuSchedules.h"

#include "schedules/TargetFacts.h"

#include <algorithm>

namespace tessel::sched {

namespace {

const StageRef kY{"y"}, kInit{"matmul"}, kUpdate{"matmul", 0};

/** Halide names the loops of an input's in() wrapper after its implicit vars. */
const char *const kWrapperN = "_0";

}  // namespace

CpuBlocking CpuBlocking::for_target(const Halide::Target &target) {
    const TargetFacts facts = TargetFacts::for_target(target);
    CpuBlocking b;
    b.lanes = facts.cpu.f32_lanes;
    // Register budget: MR x 3 accumulators + 3 vectors of w + 1 broadcast of x.
    // AVX-512 has 32 vector registers (8 x 3 + 4 = 28), AVX2 has 16 (4 x 3 + 4 = 16).
    b.mr = facts.cpu.vector_registers >= 32 ? 8 : 4;
    b.nr = 3 * b.lanes;
    b.panel_blocks = 1;
    // The gemm's k loop unrolled by 2: the loop's counter, compare and branch (which share
    // ports with the FMAs) are paid once per 48 FMAs, not 24 (docs/results/measurement_notes.md,
    // cpu-blocking).
    b.gemm_k_unroll = 2;
    // Decode: 512 rows of w per task (8 tasks for K = 4096, so a descheduled thread's
    // share is picked up by the other), 8 rows read together.
    b.decode_max_m = 16;
    b.k_chunk = 512;
    b.k_unroll = 8;
    // M = 1: the chunk is read as 8 row streams 64 rows apart, which measured faster than 8
    // adjacent rows (measurement_notes.md, cpu-blocking).
    b.gemv_streams = 8;
    // Its tasks are half the decode nest's, so that K of a few thousand rows still splits into
    // enough tasks to balance two cores (K = 1600: 512-row chunks leave 1024 rows on one core and
    // 576 on the other; 256-row chunks 832 and 768). Measured: docs/results/gemv_chunks_intel.txt.
    b.gemv_k_chunk = 256;
    // Split-K gemm in place: per block of 16 rows of w and column tile, register tiles add the
    // rows and the chunk's sums in memory add the tiles. This beat both keeping the sums in
    // memory across the rows (LLVM does not promote them to registers) and copying whole rows
    // per K block, on AVX-512 and AVX2, so no target copies (k_block 0); 16-row blocks were
    // the best size (measurement_notes.md, cpu-blocking).
    b.k_block = 0;
    b.k_block_max_m = 0;
    b.sums_block = kSumsBlock;
    return b;
}

std::vector<Directive> matmul_cpu_gemm_steps(const CpuBlocking &b, int panel_blocks) {
    ScheduleSpec s;
    // Output: register tiles of nr x mr; all row tiles of one panel of columns run in a row,
    // so the packed panel of w for those columns is reused from cache by every row tile.
    s.split(kY, "n", "no", "ni", b.nr, Tail::ShiftInwards)
        .split(kY, "m", "mo", "mi", b.mr, Tail::ShiftInwards)
        .split(kY, "no", "np", "nb", panel_blocks, Tail::GuardWithIf)
        .reorder(kY, {"ni", "mi", "mo", "nb", "np"})
        .split(kY, "ni", "nv", "nl", b.lanes)
        .vectorize(kY, "nl")
        .unroll(kY, "nv")
        .unroll(kY, "mi")
        .parallel(kY, "np");
    // The tile's extents are nr x mr by bounds inference; the splits by exactly nr and mr
    // (outer loops of extent 1) state those extents so unroll can check them.
    s.compute_at("matmul", "y", "mo").store_in("matmul", MemoryLevel::Register);
    for (const StageRef &stage : {kInit, kUpdate}) {
        s.split(stage, "n", "nt", "nr", b.nr).split(stage, "nr", "nv", "nl", b.lanes).split(stage, "m", "mt", "mr", b.mr);
    }
    s.reorder(kInit, {"nl", "nv", "mr", "nt", "mt"}).vectorize(kInit, "nl").unroll(kInit, "nv").unroll(kInit, "mr");
    if (b.gemm_k_unroll > 1) {
        s.split(kUpdate, "k", "ko", "ki", b.gemm_k_unroll, Tail::GuardWithIf)
            .reorder(kUpdate, {"nl", "nv", "mr", "ki", "ko", "nt", "mt"})
            .unroll(kUpdate, "ki");
    } else {
        s.reorder(kUpdate, {"nl", "nv", "mr", "k", "nt", "mt"});
    }
    s.vectorize(kUpdate, "nl").unroll(kUpdate, "nv").unroll(kUpdate, "mr");
    // Packed panel of w: the nr columns of this block for every k, contiguous, copied
    // once per column block (a strided read of w becomes one sequential stream).
    s.stage_input("w", "w_panel", "matmul")
        .compute_at("w_panel", "y", "np")
        .split(StageRef{"w_panel"}, kWrapperN, "pv", "pl", b.lanes)
        .vectorize(StageRef{"w_panel"}, "pl");
    return s.steps;
}

namespace {

/** The split-K nests' epilogue: per tile of NR outputs, the chunks' partial sums are added
 * (matmul's update over kt) and bias+GELU applied, vectorized; every tail guarded. */
void add_split_k_epilogue(ScheduleSpec &s, const CpuBlocking &b) {
    s.split(kY, "n", "no", "ni", b.nr, Tail::GuardWithIf)
        .split(kY, "ni", "nv", "nl", b.lanes)
        .vectorize(kY, "nl")
        .compute_at("matmul", "y", "no")
        .store_in("matmul", MemoryLevel::Stack)
        .split(kInit, "n", "nv", "nl", b.lanes)
        .vectorize(kInit, "nl")
        .split(kUpdate, "n", "nv", "nl", b.lanes)
        .reorder(kUpdate, {"nl", "nv", "m", "kt"})
        .vectorize(kUpdate, "nl");
}

}  // namespace

namespace {

/** The split-K nests' partial sums (the rfactor over chunks, "partial"): computed at root, one
 * parallel task per chunk ("u"), initialized with guarded vectors. */
void add_partial_sums_at_root(ScheduleSpec &s, const CpuBlocking &b) {
    const StageRef kPartial{"partial"};
    s.compute_root("partial")
        .split(kPartial, "n", "nv", "nl", b.lanes, Tail::GuardWithIf)
        .vectorize(kPartial, "nl")
        .parallel(kPartial, "u");
}

/** The streaming split-K nest behind decode and gemv. K is split into chunks of k_chunk rows
 * of w (rfactor); each chunk is a parallel task that streams its rows of w into partial sums
 * of all M x N outputs (L2-resident). `rows` rows of w ("kg", unrolled) update 4 vectors of
 * partial sums held in registers, for each row of x in turn (w comes from L1 after the first
 * row); "ks" steps along them. Adjacent rows (decode), or rows k_chunk / rows apart (gemv):
 * the same bytes, but far-apart streams were measured faster from DRAM for M = 1 and slower
 * for M = 3. The chunks' partial sums are added in the epilogue's tile. Every split guards
 * its tail, so the nest is correct for any extents. */
std::vector<Directive> split_k_stream_steps(const CpuBlocking &b, int rows, bool far_apart) {
    ScheduleSpec s;
    const StageRef kPartialUpdate{"partial", 0};
    s.split(kUpdate, "k", "kt", "kc", b.k_chunk, Tail::GuardWithIf).rfactor(kUpdate, "kt", "u", "partial");
    add_partial_sums_at_root(s, b);
    s.split(kPartialUpdate, "n", "nv", "nl", b.lanes, Tail::GuardWithIf)
        .split(kPartialUpdate, "nv", "nvo", "nvi", 4, Tail::GuardWithIf);
    if (far_apart)
        s.split(kPartialUpdate, "kc", "kg", "ks", std::max(1, b.k_chunk / rows), Tail::GuardWithIf);
    else
        s.split(kPartialUpdate, "kc", "ks", "kg", rows, Tail::GuardWithIf);
    s.reorder(kPartialUpdate, {"nl", "nvi", "kg", "m", "nvo", "ks", "u"})
        .vectorize(kPartialUpdate, "nl")
        .unroll(kPartialUpdate, "nvi")
        .unroll(kPartialUpdate, "kg")
        .parallel(kPartialUpdate, "u");
    add_split_k_epilogue(s, b);
    return s.steps;
}

}  // namespace

std::vector<Directive> matmul_cpu_decode_steps(const CpuBlocking &b) { return split_k_stream_steps(b, b.k_unroll, false); }

std::vector<Directive> matmul_cpu_gemv_steps(const CpuBlocking &b) {
    CpuBlocking gemv = b;
    gemv.k_chunk = b.gemv_k_chunk;
    return split_k_stream_steps(gemv, b.gemv_streams, true);
}

namespace {

/** The split-K gemm's register block (MR rows x 3 vectors, accumulated over the reduction in
 * registers) as the stages `tile` (init and update 0) computed at `at`'s loop "mo", whose
 * pure wrapper `at` tiles the outputs with shifted tails (legal on a pure stage: a shifted
 * tile recomputes values, it does not add them twice), so every tile has constant extents. */
void add_register_tile(ScheduleSpec &s, const CpuBlocking &b, const std::string &tile, const std::string &at,
                       const std::string &reduction) {
    const StageRef wrapper{at}, init{tile}, update{tile, 0};
    s.split(wrapper, "n", "no", "ni", b.nr, Tail::ShiftInwards)
        .split(wrapper, "m", "mo", "mi", b.mr, Tail::ShiftInwards)
        .reorder(wrapper, {"ni", "mi", "mo", "no"})
        .split(wrapper, "ni", "nv", "nl", b.lanes)
        .vectorize(wrapper, "nl")
        .unroll(wrapper, "nv")
        .unroll(wrapper, "mi")
        .compute_at(tile, at, "mo")
        .store_in(tile, MemoryLevel::Register);
    for (const StageRef &stage : {init, update})
        s.split(stage, "n", "nt", "nr", b.nr).split(stage, "nr", "nv", "nl", b.lanes).split(stage, "m", "mt", "mr", b.mr);
    s.reorder(init, {"nl", "nv", "mr", "nt", "mt"})
        .vectorize(init, "nl")
        .unroll(init, "nv")
        .unroll(init, "mr")
        .reorder(update, {"nl", "nv", "mr", reduction, "nt", "mt"})
        .vectorize(update, "nl")
        .unroll(update, "nv")
        .unroll(update, "mr");
}

}  // namespace

std::vector<Directive> matmul_cpu_splitk_gemm_steps(const CpuBlocking &b) {
    ScheduleSpec s;
    const StageRef kPartialUpdate{"partial", 0};
    // Split K into chunks of k_chunk rows of w, one parallel task each (rfactor), as in the
    // decode nest; but inside a task the partial sums are computed by the gemm register block.
    s.split(kUpdate, "k", "kt", "kr", b.k_chunk, Tail::GuardWithIf).rfactor(kUpdate, "kt", "u", "partial");
    if (b.k_block <= 0) {
        // The chunk's sums live in memory; per block of sums_block rows and per column tile
        // of nr, the register tiles of block_tiles (the pure wrapper of "block", the rfactor
        // over blocks) add the block's rows in registers, and partial adds the tile's sums,
        // vectorized. The block's rows of w are read in place, side by side, front to back;
        // row tiles are innermost, so the next row tile reads them from L1. Every tail of an
        // update is guarded (an update may not recompute), so any M, K, N is correct.
        add_partial_sums_at_root(s, b);
        s.split(kPartialUpdate, "kr", "kb", "kk", b.sums_block, Tail::GuardWithIf)
            .rfactor(kPartialUpdate, "kb", "v", "block")
            .split(kPartialUpdate, "n", "nt", "nn", b.nr, Tail::GuardWithIf)
            .split(kPartialUpdate, "nn", "nv", "nl", b.lanes, Tail::GuardWithIf)
            .reorder(kPartialUpdate, {"nl", "nv", "m", "nt", "kb", "u"})
            .vectorize(kPartialUpdate, "nl")
            .parallel(kPartialUpdate, "u")
            .stage_input("block", "block_tiles", "partial")
            .compute_at("block_tiles", "partial", "nt")
            .store_in("block_tiles", MemoryLevel::Stack);
        add_register_tile(s, b, "block", "block_tiles", "kk");
        add_split_k_epilogue(s, b);
        return s.steps;
    }
    // K blocks: the chunk's partial sums live in memory and take one K block's sums at a time
    // (a second rfactor, over the blocks: "block"). Per block, its k_block rows of w are copied
    // whole (w_rows: a sequential read), then the register tiles of block_tiles, the pure
    // wrapper of "block", sweep them from L2; partial adds block_tiles, vectorized.
    add_partial_sums_at_root(s, b);
    s.split(kPartialUpdate, "kr", "kb", "kk", b.k_block, Tail::GuardWithIf)
        .rfactor(kPartialUpdate, "kb", "v", "block")
        .split(kPartialUpdate, "n", "nv", "nl", b.lanes, Tail::GuardWithIf)
        .reorder(kPartialUpdate, {"nl", "nv", "m", "kb", "u"})
        .vectorize(kPartialUpdate, "nl")
        .parallel(kPartialUpdate, "u")
        .stage_input("block", "block_tiles", "partial")
        .compute_at("block_tiles", "partial", "kb");
    add_register_tile(s, b, "block", "block_tiles", "kk");
    s.stage_input("w", "w_rows", "block")
        .compute_at("w_rows", "partial", "kb")
        .split(StageRef{"w_rows"}, kWrapperN, "rv", "rl", b.lanes, Tail::GuardWithIf)
        .vectorize(StageRef{"w_rows"}, "rl");
    add_split_k_epilogue(s, b);
    return s.steps;
}

std::vector<Directive> matmul_cpu_panel_steps(const CpuBlocking &b, int rows) {
    ScheduleSpec s;
    // w is stored in panels of nr columns ([N/nr][K][nr], the last one padded): the gemm nest
    // without its packing. The output's indices start at 0, so every column tile of nr starts
    // on a panel boundary and Halide turns the view's n / nr and n % nr into the panel's base
    // address and a dense vector offset. The matmul tile always spans the whole panel (its
    // extent bound to nr): the last tile computes the padding's columns too, and only the
    // output's guarded tail stores are partial. Rows are shifted inwards (M >= rows).
    s.assume_aligned("y", 1)
        .split(kY, "n", "no", "ni", b.nr, Tail::GuardWithIf)
        .split(kY, "m", "mo", "mi", rows, Tail::ShiftInwards)
        .reorder(kY, {"ni", "mi", "mo", "no"})
        .split(kY, "ni", "nv", "nl", b.lanes)
        .vectorize(kY, "nl")
        .unroll(kY, "nv")
        .unroll(kY, "mi")
        .parallel(kY, "no");
    s.compute_at("matmul", "y", "mo").bound_extent("matmul", "n", b.nr).store_in("matmul", MemoryLevel::Register);
    for (const StageRef &stage : {kInit, kUpdate}) s.split(stage, "n", "nv", "nl", b.lanes).split(stage, "m", "mt", "mr", rows);
    s.reorder(kInit, {"nl", "nv", "mr", "mt"})
        .vectorize(kInit, "nl")
        .unroll(kInit, "nv")
        .unroll(kInit, "mr")
        .reorder(kUpdate, {"nl", "nv", "mr", "k", "mt"})
        .vectorize(kUpdate, "nl")
        .unroll(kUpdate, "nv")
        .unroll(kUpdate, "mr");
    return s.steps;
}

std::vector<ScheduleSpec::Variant> matmul_cpu_panel_variants(const CpuBlocking &b) {
    // Row blocks of mr, mr / 2, ... 2 for the M that have at least that many rows; M = 1 takes
    // the one-row nest, the fallback, so no M reads the panels through index arithmetic.
    std::vector<ScheduleSpec::Variant> v;
    for (int rows = b.mr; rows >= 2; rows /= 2) v.push_back({{{"M", GuardOp::Ge, rows}}, matmul_cpu_panel_steps(b, rows)});
    return v;
}

std::vector<Directive> matmul_cpu_general_steps(const CpuBlocking &b) {
    ScheduleSpec s;
    // One vector of outputs per tile, every tail guarded: correct for any extents.
    s.split(kY, "n", "no", "ni", b.lanes, Tail::GuardWithIf).vectorize(kY, "ni").parallel(kY, "m");
    s.compute_at("matmul", "y", "no")
        .split(kInit, "n", "nv", "nl", b.lanes, Tail::GuardWithIf)
        .vectorize(kInit, "nl")
        .split(kUpdate, "n", "nv", "nl", b.lanes, Tail::GuardWithIf)
        .reorder(kUpdate, {"nl", "nv", "m", "k"})
        .vectorize(kUpdate, "nl");
    return s.steps;
}

ScheduleSpec matmul_cpu_decode(const Halide::Target &target) {
    const CpuBlocking b = CpuBlocking::for_target(target);
    ScheduleSpec s("cpu_decode", Device::Cpu);
    s.description = "split-K decode nest for every shape: w streamed once, one sequential stream per thread";
    s.steps = matmul_cpu_decode_steps(b);
    return s;
}

ScheduleSpec matmul_cpu_blocked(const Halide::Target &target, int64_t rhs_panel_width) {
    const CpuBlocking b = CpuBlocking::for_target(target);
    ScheduleSpec s("cpu_blocked", Device::Cpu);
    if (rhs_panel_width == b.nr) {
        s.description = "w stored in panels of " + std::to_string(b.nr) + " columns, read in place: " + std::to_string(b.mr) +
                        " rows x 3 vectors register block (fewer rows for M < " + std::to_string(b.mr) + "), fused epilogue";
        s.variants = matmul_cpu_panel_variants(b);
        s.steps = matmul_cpu_panel_steps(b, 1);  // the one-row nest is correct for every M
        return s;
    }
    s.description = std::to_string(b.mr) +
                    " rows x 3 vectors register block, packed w panel, fused epilogue; "
                    "split-K with the register block for " +
                    std::to_string(b.mr) + " <= M <= " + std::to_string(b.decode_max_m) + " (" +
                    (b.k_block > 0 ? "w copied in blocks of " + std::to_string(b.k_block) +
                                         " rows up to M = " + std::to_string(b.k_block_max_m) + ", then "
                                   : std::string()) +
                    "blocks of " + std::to_string(b.sums_block) + " rows added in registers, then into the chunk's sums)" +
                    ", split-K gemv streams for M == 1, split-K decode nest for other M < " + std::to_string(b.mr);
    if (b.k_block > 0)
        s.variants.push_back({{{"M", GuardOp::Ge, b.mr}, {"M", GuardOp::Le, b.k_block_max_m}, {"N", GuardOp::Ge, b.nr}},
                              matmul_cpu_splitk_gemm_steps(b)});
    if (b.k_block_max_m < b.decode_max_m) {
        CpuBlocking in_place = b;
        in_place.k_block = 0;
        s.variants.push_back({{{"M", GuardOp::Ge, b.mr}, {"M", GuardOp::Le, b.decode_max_m}, {"N", GuardOp::Ge, b.nr}},
                              matmul_cpu_splitk_gemm_steps(in_place)});
    }
    s.variants.push_back({{{"M", GuardOp::Eq, 1}}, matmul_cpu_gemv_steps(b)});
    s.variants.push_back({{{"M", GuardOp::Le, b.decode_max_m}}, matmul_cpu_decode_steps(b)});
    s.variants.push_back({{{"M", GuardOp::Ge, b.mr}, {"N", GuardOp::Ge, b.nr}}, matmul_cpu_gemm_steps(b, b.panel_blocks)});
    s.steps = matmul_cpu_general_steps(b);
    return s;
}

ScheduleSpec matmul_cpu_tiled(const Halide::Target &target) {
    const int lanes = TargetFacts::for_target(target).cpu.f32_lanes;
    const StageRef y{"y"}, init{"matmul"}, update{"matmul", 0};
    ScheduleSpec s("cpu_tiled", Device::Cpu);
    s.description = "2 vectors x 8 rows register tile, epilogue fused per tile, parallel row tiles";
    s.split(y, "n", "no", "ni", 2 * lanes, Tail::GuardWithIf)
        .split(y, "m", "mo", "mi", 8, Tail::GuardWithIf)
        .reorder(y, {"ni", "mi", "no", "mo"})
        .split(y, "ni", "niv", "nil", lanes, Tail::GuardWithIf)
        .vectorize(y, "nil")
        .parallel(y, "mo")
        .compute_at("matmul", "y", "no")
        .split(init, "n", "nv", "nl", lanes, Tail::GuardWithIf)
        .vectorize(init, "nl")
        .split(update, "n", "nt", "nr", 2 * lanes, Tail::GuardWithIf)
        .split(update, "nr", "nv", "nl", lanes, Tail::GuardWithIf)
        .split(update, "m", "mv", "ml", 8, Tail::GuardWithIf)
        .reorder(update, {"nl", "nv", "ml", "k", "nt", "mv"})
        .vectorize(update, "nl")
        .unroll(update, "nv")
        .unroll(update, "ml");
    return s;
}

}  // namespace tessel::sched
