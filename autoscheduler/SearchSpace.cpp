#include "autoscheduler/SearchSpace.h"

#include "autoscheduler/AttentionSpace.h"
#include "autoscheduler/GroupKindSpace.h"
#include "schedules/MatmulCpuSchedules.h"
#include "schedules/MatmulCudaSchedules.h"

#include <algorithm>
#include <sstream>

namespace tessel::autosched {

ShapeClass Workload::shape_class() const {
    if (kind == dsl::GroupKind::Attention) return attention_shape_class(attention);
    if (kind != dsl::GroupKind::MatmulEpilogue) return group_shape_class(group.shape);
    if (M <= 16) return ShapeClass::Decode;
    const int64_t lo = std::min({M, K, N}), hi = std::max({M, K, N});
    return hi <= 2 * lo ? ShapeClass::Square : ShapeClass::Mlp;
}

std::string Workload::to_string() const {
    if (kind != dsl::GroupKind::MatmulEpilogue) return group.sizes;
    return "M=" + std::to_string(M) + ",K=" + std::to_string(K) + ",N=" + std::to_string(N);
}

void add_epilogue_cost(const dsl::Graph &g, const std::vector<dsl::ValueId> &nodes, Workload &w) {
    using dsl::Op;
    const bool fast = g.mode == dsl::NumericMode::Fast;
    w.ordered_reductions = !dsl::allows_split_reductions(g.mode);
    for (dsl::ValueId v : nodes) {
        switch (g.node(v).op) {
        case Op::MatMul:
        case Op::Constant:
        case Op::Input: break;
        case Op::Sqrt:
        case Op::Rsqrt: w.epilogue_flops += 4; break;
        case Op::Exp: w.epilogue_flops += 20; break;
        case Op::Sigmoid:
        case Op::Silu: w.epilogue_flops += 24; break;  // exp, add, divide
        case Op::Log: w.epilogue_flops += 24; break;
        case Op::Tanh:
        case Op::Sin:
        case Op::Cos: w.epilogue_scalar_calls += 1; break;  // libm per lane
        case Op::Gelu: w.epilogue_flops += 30; break;       // Halide's vectorized erf polynomial
        case Op::GeluTanh:
            if (fast)
                w.epilogue_flops += 25;  // v / (1 + exp(-2u)), vectorized
            else
                w.epilogue_flops += 8, w.epilogue_scalar_calls += 1;  // libm tanhf per element
            break;
        default: w.epilogue_flops += 1; break;
        }
    }
}

std::string CandidateParams::to_string() const {
    std::ostringstream os;
    os << autosched::to_string(nest);
    if (nest == NestFamily::Gemm) os << " mr=" << mr << " nr=" << nr_vectors << "v panel=" << panel_blocks;
    if (nest == NestFamily::Panel) os << " mr=" << mr << " nr=" << nr_vectors << "v";
    if (nest == NestFamily::Splitk)
        os << " mr=" << mr << " nr=" << nr_vectors << "v kchunk=" << k_chunk
           << (k_block ? " kblock=" + std::to_string(k_block) : "");
    if (nest == NestFamily::Decode) os << " kchunk=" << k_chunk << " kunroll=" << k_unroll;
    if (nest == NestFamily::Gemv) os << " kchunk=" << k_chunk << " streams=" << k_unroll;
    if (nest == NestFamily::CudaTiled) os << " block=" << BN << "x" << BM << " thread=" << TN << "x" << TM << " kt=" << KT;
    if (nest == NestFamily::CudaDecode) os << " nb=" << NB << " ks=" << KS << " mb=" << MB;
    if (nest == NestFamily::Group) os << " " << group.to_string();
    if (nest == NestFamily::Attention) os << " " << attention.to_string();
    return os.str();
}

nlohmann::json CandidateParams::to_json() const {
    nlohmann::json j{{"nest", autosched::to_string(nest)}};
    auto put = [&](const char *k, int v) {
        if (v) j[k] = v;
    };
    put("mr", mr), put("nr_vectors", nr_vectors), put("panel_blocks", panel_blocks), put("k_unroll", k_unroll);
    put("k_chunk", k_chunk), put("k_block", k_block), put("BN", BN), put("BM", BM), put("TN", TN), put("TM", TM);
    put("KT", KT), put("NB", NB), put("KS", KS), put("MB", MB);
    if (nest == NestFamily::Group)
        j["group"] = {{"vectors", group.vectors},
                      {"rows_per_task", group.rows_per_task},
                      {"block", group.block},
                      {"parallel", group.parallel},
                      {"reductions_per_row", group.reductions_per_row},
                      {"vectorize_reductions", group.vectorize_reductions},
                      {"reduction_vectors", group.reduction_vectors}};
    if (nest == NestFamily::Attention)
        j["attention"] = {{"query_block", attention.query_block},
                          {"row_tile", attention.row_tile},
                          {"col_vectors", attention.col_vectors},
                          {"copy_kv_once", attention.copy_kv_once},
                          {"depth_vectors", attention.depth_vectors}};
    return j;
}

namespace {

/** The panel nests for a w stored in panels of `w.rhs_panel_width` columns, or false when the
 * vector width does not divide it (then no nest reads those panels in place). */
bool enumerate_panels(const Workload &w, const CpuModel &cpu, std::vector<CandidateParams> &out) {
    if (w.rhs_panel_width <= 0 || w.rhs_panel_width % cpu.lanes) return false;
    const int nv = (int)(w.rhs_panel_width / cpu.lanes);
    for (int mr : {1, 2, 4, 6, 8, 12, 16}) {
        if (mr * nv > cpu.vector_registers) continue;
        CandidateParams p;
        p.nest = NestFamily::Panel, p.mr = mr, p.nr_vectors = nv;
        out.push_back(p);
    }
    return true;
}

/** The nests reading a row-major w. */
void enumerate_row_major(const Workload &w, const CpuModel &cpu, std::vector<CandidateParams> &out) {
    // Register blocks: rows x vectors of w, up to what the register file could ever hold.
    for (int mr : {1, 2, 4, 6, 8, 12, 16})
        for (int nv : {1, 2, 3, 4, 6})
            for (int pb : {1, 2, 4, 8}) {
                if (mr * nv > cpu.vector_registers) continue;  // not even the accumulators fit
                CandidateParams p;
                p.nest = NestFamily::Gemm, p.mr = mr, p.nr_vectors = nv, p.panel_blocks = pb;
                out.push_back(p);
            }
    // Split-K with the register block: chunks of rows of w per task, each chunk's partial sums
    // accumulated in a register block (only the blocks the gemm nest would consider), reading
    // w's strips in place or copying blocks of whole rows first.
    for (int mr : {4, 6, 8, 12, 16})
        for (int nv : {1, 2, 3, 4})
            for (int chunk : {256, 512, 1024})
                for (int k_block : {0, 32, 64}) {
                    if (mr * nv > cpu.vector_registers || chunk > std::max<int64_t>(w.K, 256) || k_block >= chunk) continue;
                    CandidateParams p;
                    p.nest = NestFamily::Splitk, p.mr = mr, p.nr_vectors = nv, p.k_chunk = chunk, p.k_block = k_block;
                    out.push_back(p);
                }
    // Split-K gemv (M = 1): chunks of rows per task, read as k_unroll far-apart row streams.
    for (int chunk : {256, 512, 1024, 2048})
        for (int streams : {4, 8}) {
            if (chunk > std::max<int64_t>(w.K, 256)) continue;
            CandidateParams p;
            p.nest = NestFamily::Gemv, p.k_chunk = chunk, p.k_unroll = streams;
            out.push_back(p);
        }
    // Split-K streaming nest: chunks of rows of w per task, from a few vectors' worth up to K.
    for (int chunk : {64, 128, 256, 512, 1024, 2048})
        for (int ku : {1, 2, 4, 8}) {
            if (chunk > std::max<int64_t>(w.K, 64)) continue;
            CandidateParams p;
            p.nest = NestFamily::Decode, p.k_chunk = chunk, p.k_unroll = ku;
            out.push_back(p);
        }
}

void enumerate_cpu(const Workload &w, const CpuModel &cpu, std::vector<CandidateParams> &out) {
    if (!enumerate_panels(w, cpu, out)) enumerate_row_major(w, cpu, out);
    CandidateParams general;  // always correct, whatever w's layout
    general.nest = NestFamily::General;
    out.push_back(general);
}

void enumerate_cuda(const Workload &, const CudaModel &, std::vector<CandidateParams> &out) {
    for (int BN : {32, 64, 128, 256})
        for (int BM : {16, 32, 64, 128})
            for (int TN : {1, 2, 4, 8})
                for (int TM : {1, 2, 4, 8})
                    for (int KT : {8, 16, 32}) {
                        if (TN > BN || TM > BM) continue;
                        CandidateParams p;
                        p.nest = NestFamily::CudaTiled, p.BN = BN, p.BM = BM, p.TN = TN, p.TM = TM, p.KT = KT;
                        out.push_back(p);
                    }
    for (int NB : {16, 32, 64})
        for (int KS : {4, 8, 16, 32}) {
            CandidateParams p;
            p.nest = NestFamily::CudaDecode, p.NB = NB, p.KS = KS, p.MB = 16;
            out.push_back(p);
        }
    CandidateParams simple;
    simple.nest = NestFamily::CudaSimple;
    out.push_back(simple);
}

}  // namespace

std::vector<CandidateParams> enumerate_space(const Workload &w, const TargetModel &model) {
    if (w.kind == dsl::GroupKind::Attention) return enumerate_attention_space(w, model);
    if (w.kind != dsl::GroupKind::MatmulEpilogue) return enumerate_group_space(w, model);
    std::vector<CandidateParams> out;
    if (model.device == sched::Device::Cuda)
        enumerate_cuda(w, model.cuda, out);
    else
        enumerate_cpu(w, model.cpu, out);
    return out;
}

std::optional<CandidateParams> library_point(const Workload &w, const Halide::Target &target) {
    if (target.has_feature(Halide::Target::CUDA)) return std::nullopt;
    if (w.kind == dsl::GroupKind::Attention) return attention_library_point(w, target);
    if (w.kind != dsl::GroupKind::MatmulEpilogue) return group_library_point(w);
    const sched::CpuBlocking b = sched::CpuBlocking::for_target(target);
    CandidateParams p;
    if (w.rhs_panel_width == b.nr) {  // cpu_blocked's panel nests: the most rows M fills
        p.nest = NestFamily::Panel, p.nr_vectors = b.nr / b.lanes;
        for (p.mr = b.mr; p.mr > 1 && p.mr > w.M; p.mr /= 2) {}
    } else if (w.ordered_reductions) {  // cpu_blocked's variants that keep the k sum in order
        if (w.M >= b.mr && w.N >= b.nr)
            p.nest = NestFamily::Gemm, p.mr = b.mr, p.nr_vectors = b.nr / b.lanes, p.panel_blocks = b.panel_blocks;
        else
            p.nest = NestFamily::General;
    } else if (w.M >= b.mr && w.M <= b.decode_max_m && w.N >= b.nr) {
        p.nest = NestFamily::Splitk, p.mr = b.mr, p.nr_vectors = b.nr / b.lanes, p.k_chunk = b.k_chunk;
        p.k_block = w.M <= b.k_block_max_m ? b.k_block : 0;
    } else if (w.M == 1) {
        p.nest = NestFamily::Gemv, p.k_chunk = b.gemv_k_chunk, p.k_unroll = b.gemv_streams;
    } else if (w.M <= b.decode_max_m) {
        p.nest = NestFamily::Decode, p.k_chunk = b.k_chunk, p.k_unroll = b.k_unroll;
    } else if (w.M >= b.mr && w.N >= b.nr) {
        p.nest = NestFamily::Gemm, p.mr = b.mr, p.nr_vectors = b.nr / b.lanes, p.panel_blocks = b.panel_blocks;
    } else {
        p.nest = NestFamily::General;
    }
    return p;
}

sched::ScheduleSpec make_schedule(const CandidateParams &p, const Halide::Target &target) {
    using sched::Guard;
    using sched::GuardOp;
    sched::ScheduleSpec s("tuned_" + std::string(to_string(p.nest)),
                          target.has_feature(Halide::Target::CUDA) ? sched::Device::Cuda : sched::Device::Cpu);
    s.description = "autoscheduled: " + p.to_string();
    if (s.device == sched::Device::Cuda) {
        s.steps = sched::matmul_cuda_simple(target).steps;
        if (p.nest == NestFamily::CudaTiled) {
            const sched::CudaTileParams t{p.BN, p.BM, p.TN, p.TM, p.KT};
            s.variants.push_back({sched::matmul_cuda_tiled_guards(t), sched::matmul_cuda_tiled_steps(t)});
        } else if (p.nest == NestFamily::CudaDecode) {
            const sched::CudaDecodeParams d{p.NB, p.KS, p.MB};
            s.variants.push_back({{Guard{"M", GuardOp::Le, p.MB}}, sched::matmul_cuda_decode_steps(d)});
        }
        return s;
    }
    sched::CpuBlocking b = sched::CpuBlocking::for_target(target);
    if (p.mr) b.mr = p.mr;
    if (p.nr_vectors) b.nr = p.nr_vectors * b.lanes;
    if (p.panel_blocks) b.panel_blocks = p.panel_blocks;
    if (p.k_unroll) b.k_unroll = b.gemv_streams = p.k_unroll;
    if (p.k_chunk) b.k_chunk = b.gemv_k_chunk = p.k_chunk;
    b.k_block = p.k_block;  // the point says in place (0) or the block: not the library's default
    s.steps = sched::matmul_cpu_general_steps(b);
    if (p.nest == NestFamily::Panel) {
        // The one-row panel nest is correct for every M (and reads the panels in place).
        s.steps = sched::matmul_cpu_panel_steps(b, 1);
        if (b.mr > 1) s.variants.push_back({{Guard{"M", GuardOp::Ge, b.mr}}, sched::matmul_cpu_panel_steps(b, b.mr)});
    } else if (p.nest == NestFamily::Gemm) {
        s.variants.push_back(
            {{Guard{"M", GuardOp::Ge, b.mr}, Guard{"N", GuardOp::Ge, b.nr}}, sched::matmul_cpu_gemm_steps(b, b.panel_blocks)});
    } else if (p.nest == NestFamily::Splitk) {
        s.variants.push_back(
            {{Guard{"M", GuardOp::Ge, b.mr}, Guard{"N", GuardOp::Ge, b.nr}}, sched::matmul_cpu_splitk_gemm_steps(b)});
    } else if (p.nest == NestFamily::Gemv) {
        s.variants.push_back({{Guard{"M", GuardOp::Eq, 1}}, sched::matmul_cpu_gemv_steps(b)});
    } else if (p.nest == NestFamily::Decode) {
        // The decode nest guards every tail itself: valid for any shape, fast for small M.
        s.variants.push_back({{Guard{"M", GuardOp::Le, b.decode_max_m}}, sched::matmul_cpu_decode_steps(b)});
    }
    return s;
}

sched::ScheduleSpec make_schedule(const CandidateParams &p, const Workload &w, const Halide::Target &target) {
    if (w.kind == dsl::GroupKind::Attention) return make_attention_schedule(p, w, target);
    if (w.kind != dsl::GroupKind::MatmulEpilogue) return make_group_schedule(p, w, target);
    return make_schedule(p, target);
}

}  // namespace tessel::autosched
