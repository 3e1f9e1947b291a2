// Map: estimate_cpu / estimate_cuda (one roofline per nest family) -> predict (applies the
// shape class's calibration) -> fit (least squares for the two scales).
#include "autoscheduler/CostModel.h"

#include "autoscheduler/AttentionSpace.h"
#include "autoscheduler/GroupKindSpace.h"
#include "schedules/MatmulCpuSchedules.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace tessel::autosched {

namespace {

double ceil_div(double a, double b) { return std::ceil(a / b); }

double parallel_efficiency(int64_t tasks, int workers) {
    if (tasks <= 0) return 1;
    return (double)tasks / (std::ceil((double)tasks / workers) * workers);
}

}  // namespace

double CostBreakdown::total_s() const { return std::max(compute_s, memory_s) + epilogue_s + overhead_s; }

std::string CostBreakdown::explain() const {
    std::ostringstream os;
    os << std::setprecision(3) << std::fixed;
    os << "compute " << compute_s * 1e3 << " ms (" << flops / 1e9 << " GFLOP executed, vector use " << vector_utilization * 100
       << "%, pipe efficiency " << pipe_efficiency * 100 << "%, parallel efficiency " << parallel_efficiency * 100 << "% over "
       << tasks << " tasks); memory " << memory_s * 1e3 << " ms (" << dram_bytes / (1 << 20) << " MiB DRAM + "
       << cache_bytes / (1 << 20) << " MiB cache traffic); epilogue " << epilogue_s * 1e3 << " ms; overhead " << overhead_s * 1e3
       << " ms; total " << total_s() * 1e3 << " ms";
    return os.str();
}

Calibration AnalyticalCostModel::calibration(const std::string &shape_class) const {
    if (global_) return *global_;
    auto it = calibration_.find(shape_class);
    return it == calibration_.end() ? Calibration{} : it->second;
}

CostBreakdown AnalyticalCostModel::estimate_cpu(const Workload &w, const CandidateParams &p) const {
    const CpuModel &c = model_.cpu;
    CostBreakdown b;
    const double M = w.M, K = w.K, N = w.N, L = c.lanes;
    const double peak = c.peak_gflops() * 1e9 / c.cores;  // per core, flop/s
    double M_exec = M, N_exec = N;
    double pipe = 1, dram = 0, cache = 0;
    if (p.nest == NestFamily::Gemm || p.nest == NestFamily::Splitk || p.nest == NestFamily::Panel) {
        const double nr = p.nr_vectors * L;
        // Shifted-inward tails recompute a partial tile.
        M_exec = ceil_div(M, p.mr) * p.mr;
        N_exec = ceil_div(N, nr) * nr;
        // Per k step: mr x nv FMAs against nv loads of w and mr broadcasts of x.
        const double fmas = p.mr * p.nr_vectors, loads = p.nr_vectors + p.mr;
        // Half a cycle of loop and address overhead per k step, amortized over the block.
        const double cycles = std::max(fmas / c.fma_units, loads / c.load_ports) + 0.5;
        pipe = (fmas / c.fma_units) / cycles;
        pipe *= std::min(1.0, fmas / (c.fma_latency * c.fma_units));
        if (p.nest == NestFamily::Panel) {
            // w is already in panels: streamed once from DRAM (padding included), re-read from
            // cache by every further block of mr rows; x re-read once per panel from cache.
            b.tasks = (int64_t)ceil_div(N, nr);
            dram = K * N_exec * 4 + M * N * 4 + M * K * 4;
            cache = M * K * 4 * std::max(0.0, (double)b.tasks - 1) + K * N_exec * 4 * std::max(0.0, ceil_div(M, p.mr) - 1);
        } else if (p.nest == NestFamily::Gemm) {
            b.tasks = (int64_t)ceil_div(N, nr * p.panel_blocks);
            // w is packed once per panel (read, written, read back from cache); x is re-read
            // once per panel from cache.
            dram = K * N * 4 + M * N * 4 + M * K * 4;
            cache = M * K * 4 * std::max(0.0, (double)b.tasks - 1) + 2 * K * N * 4;
        } else {
            // One task per chunk of k: w read once from DRAM, in strips of nr columns (re-read
            // from cache by every further block of mr rows); each chunk's partial sums are
            // written and read back.
            b.tasks = (int64_t)ceil_div(K, p.k_chunk);
            dram = K * N * 4 + M * N * 4 + M * K * 4;
            cache = K * N * 4 * std::max(0.0, ceil_div(M, p.mr) - 1) + 2.0 * b.tasks * M * N * 4;
            // K blocks: the rows are copied (written, read back) and each block's M x N sums
            // are written, read and added into the chunk's. In place: after every sums_block
            // rows the register tiles are added into the chunk's M x N sums (read and written).
            // Whether the sequential copy reads DRAM faster than the rows in place depends on
            // the prefetchers and differs between machines: measured, not modelled
            // (docs/results/measurement_notes.md, cpu-blocking).
            if (p.k_block > 0)
                cache += 2.0 * K * N * 4 + 3.0 * M * N * 4 * ceil_div(K, p.k_block);
            else
                cache += 2.0 * M * N * 4 * ceil_div(K, sched::CpuBlocking::kSumsBlock);
        }
    } else if (p.nest == NestFamily::Decode || p.nest == NestFamily::Gemv) {
        // (gemv is the same work for M = 1, its k_unroll far-apart streams instead of adjacent
        // rows; the model does not tell the two apart, measurement does.)
        // Per row of x and 4 vectors of partial sums: k_unroll x 4 FMAs against as many loads
        // of w (from L1 after the first row), k_unroll broadcasts of x, and the partial sums'
        // 4 loads and 4 stores: load-bound, whatever M is.
        const double ku = std::max(1, p.k_unroll);
        const double fmas = 4 * ku, loads = 4 * ku + ku + 8;
        pipe = (fmas / c.fma_units) / (std::max(fmas / c.fma_units, loads / c.load_ports) + 0.5);
        b.tasks = (int64_t)ceil_div(K, p.k_chunk);
        // w streamed once; the M x N accumulators are loaded and stored once per k_unroll rows of
        // w, and each chunk's partial sums are written and read back.
        dram = K * N * 4 + M * N * 4 + M * K * 4;
        cache = 2.0 * M * N * 4 * (K / std::max(1, p.k_unroll)) + 2.0 * b.tasks * M * N * 4;
    } else {  // general: one vector per tile, k innermost per column: no register blocking
        pipe = 1.0 / (c.fma_latency * c.fma_units);
        b.tasks = (int64_t)M;
        N_exec = ceil_div(N, L) * L;
        dram = K * N * 4 * std::max(1.0, M / 4) + M * N * 4 + M * K * 4;
    }
    b.flops = 2 * M_exec * N_exec * K;
    b.vector_utilization = (M * N) / (M_exec * N_exec);
    b.pipe_efficiency = pipe;
    b.parallel_efficiency = parallel_efficiency(b.tasks, c.cores);
    const double workers = c.cores * b.parallel_efficiency;
    b.compute_s = b.flops / (peak * workers * pipe);
    b.dram_bytes = dram;
    b.cache_bytes = cache;
    b.memory_s = dram / (c.dram_gbps * 1e9) + cache / (c.l2_gbps * 1e9 * workers);
    // The epilogue runs once per output element, after the reduction, on every core.
    b.epilogue_s =
        M * N * (w.epilogue_flops / (2.0 * L * c.fma_units * c.ghz * 1e9) + w.epilogue_scalar_calls * c.scalar_call_ns * 1e-9) /
        workers;
    b.overhead_s = (b.tasks * c.task_overhead_us + c.call_overhead_us) * 1e-6;
    return b;
}

CostBreakdown AnalyticalCostModel::estimate_cuda(const Workload &w, const CandidateParams &p) const {
    const CudaModel &g = model_.cuda;
    CostBreakdown b;
    const double M = w.M, K = w.K, N = w.N;
    double M_exec = M, N_exec = N, pipe = 1, dram = 0;
    if (p.nest == NestFamily::CudaTiled) {
        M_exec = ceil_div(M, p.BM) * p.BM;
        N_exec = ceil_div(N, p.BN) * p.BN;
        const double threads = (double)(p.BN / p.TN) * (p.BM / p.TM);
        // A thread tile of TN x TM reuses each shared-memory load TN or TM times.
        pipe = (p.TN * p.TM) / (p.TN * p.TM + p.TN + p.TM + 2.0);
        const double regs = p.TN * p.TM + p.TN + p.TM + 24;
        const double smem = 4.0 * (p.BN * p.BM + p.KT * (p.BM + p.BN));
        const double blocks_per_sm =
            std::max(1.0, std::min({std::floor(g.max_threads_per_sm / threads), std::floor(g.shared_per_sm / smem),
                                    std::floor(g.registers_per_sm / (threads * regs))}));
        const double occupancy = std::min(1.0, blocks_per_sm * threads / 1024);
        pipe *= occupancy;
        b.tasks = (int64_t)(ceil_div(N, p.BN) * ceil_div(M, p.BM));
        // Each block reads its BM rows of x and BN columns of w over all K.
        dram = 4 * K * (M_exec * ceil_div(N, p.BN) + N_exec * ceil_div(M, p.BM)) * 0.25 /* L2 hits */ + M * N * 4;
    } else if (p.nest == NestFamily::CudaDecode) {
        b.tasks = (int64_t)ceil_div(N, p.NB);
        pipe = 0.25;
        const double coalescing = std::min(1.0, p.NB / 32.0);
        dram = K * N * 4 / coalescing + M * N * 4;
    } else {
        b.tasks = (int64_t)(ceil_div(N, 32) * ceil_div(M, 8));
        pipe = 0.1;
        dram = 4 * K * (M * N / 32.0 + N * M / 8.0) * 0.25 + M * N * 4;
    }
    b.flops = 2 * M_exec * N_exec * K;
    b.vector_utilization = (M * N) / (M_exec * N_exec);
    b.pipe_efficiency = pipe;
    // Wave quantization: a grid of fewer blocks than SMs, or a partial last wave, idles SMs.
    b.parallel_efficiency = parallel_efficiency(b.tasks, g.sms);
    b.compute_s = b.flops / (g.fp32_tflops * 1e12 * pipe * b.parallel_efficiency);
    b.dram_bytes = dram;
    b.memory_s = dram / (g.dram_gbps * 1e9);
    b.overhead_s = g.launch_overhead_us * 1e-6;
    return b;
}

std::vector<CostBreakdown> AnalyticalCostModel::predict(const Workload &w, std::span<const CandidateParams> candidates) const {
    const Calibration cal = calibration(to_string(w.shape_class()));
    std::vector<CostBreakdown> out;
    for (const auto &p : candidates) {
        CostBreakdown b = model_.device == sched::Device::Cuda       ? estimate_cuda(w, p)
                          : w.kind == dsl::GroupKind::MatmulEpilogue ? estimate_cpu(w, p)
                          : w.kind == dsl::GroupKind::Attention      ? estimate_attention_cpu(w, p, model_.cpu)
                                                                     : estimate_group_cpu(w, p, model_.cpu);
        b.compute_s *= cal.compute_scale;
        b.memory_s *= cal.memory_scale;
        out.push_back(b);
    }
    return out;
}

Calibration AnalyticalCostModel::fit(const std::vector<std::pair<CostBreakdown, double>> &samples) {
    // Fit measured - overhead ~ a x compute + b x memory in relative (log-like) terms: weight
    // each sample by 1 / measured so fast and slow candidates count alike.
    double scc = 0, smm = 0, scm = 0, scy = 0, smy = 0;
    for (const auto &[b, t] : samples) {
        const double wgt = 1.0 / (t * t);
        const double y = std::max(0.0, t - b.overhead_s - b.epilogue_s);
        // Only the term that dominates the roofline explains the time.
        const double c = b.compute_s >= b.memory_s ? b.compute_s : 0, m = b.compute_s >= b.memory_s ? 0 : b.memory_s;
        scc += wgt * c * c, smm += wgt * m * m, scm += wgt * c * m, scy += wgt * c * y, smy += wgt * m * y;
    }
    Calibration cal;
    cal.samples = (int)samples.size();
    if (scc > 0) cal.compute_scale = std::max(0.05, scy / scc);
    if (smm > 0) cal.memory_scale = std::max(0.05, smy / smm);
    (void)scm;  // the dominant-term split makes the normal equations diagonal
    return cal;
}

}  // namespace tessel::autosched
