#include "autoscheduler/Pruning.h"

#include "autoscheduler/AttentionSpace.h"
#include "autoscheduler/GroupKindSpace.h"

#include <sstream>

namespace tessel::autosched {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
std::string num(int64_t v) { return std::to_string(v); }

int64_t cpu_tasks(const CandidateParams &p, const Workload &w, const CpuModel &cpu) {
    if (p.nest == NestFamily::Gemm) return ceil_div(w.N, (int64_t)p.nr_vectors * cpu.lanes * p.panel_blocks);
    if (p.nest == NestFamily::Panel) return ceil_div(w.N, (int64_t)p.nr_vectors * cpu.lanes);
    if (p.nest == NestFamily::Decode || p.nest == NestFamily::Splitk || p.nest == NestFamily::Gemv)
        return ceil_div(w.K, p.k_chunk);
    return w.M;  // general: parallel over rows
}

/** The numeric-mode rule: exact mode keeps the k sum in program order. */
PruningRule ordered_sum_rule() {
    return {"ordered-sum", "in numeric mode exact, no nest that splits the k sum into partial sums",
            [](const CandidateParams &p, const Workload &w, const TargetModel &) -> std::string {
                static const NestFamily splitting[] = {NestFamily::Splitk, NestFamily::Gemv, NestFamily::Decode,
                                                       NestFamily::CudaTiled, NestFamily::CudaDecode};
                if (!w.ordered_reductions) return "";
                for (NestFamily n : splitting)
                    if (p.nest == n)
                        return "the " + std::string(to_string(p.nest)) +
                               " nest splits the k sum, and mode exact keeps it in order";
                return "";
            }};
}

std::vector<PruningRule> make_cpu_rules() {
    return {
        {"nest-applies", "the nest's guard holds for this workload",
         [](const CandidateParams &p, const Workload &w, const TargetModel &m) -> std::string {
             const int nr = p.nr_vectors * m.cpu.lanes;
             if (p.nest == NestFamily::Gemm && (w.M < p.mr || w.N < nr))
                 return "gemm needs M >= " + num(p.mr) + " and N >= " + num(nr);
             if (p.nest == NestFamily::Panel && w.M < p.mr) return "the panel nest's register block needs M >= " + num(p.mr);
             if (p.nest == NestFamily::Splitk && (w.M < p.mr || w.N < nr))
                 return "split-K register block needs M >= " + num(p.mr) + " and N >= " + num(nr);
             if (p.nest == NestFamily::Gemv && w.M != 1) return "the gemv nest reads one row of x: only for M == 1";
             if ((p.nest == NestFamily::Decode || p.nest == NestFamily::Splitk) && w.M > 16)
                 return std::string(to_string(p.nest)) + " streams w once for all rows: only for M <= 16";
             return "";
         }},
        {"register-budget", "accumulators + w vectors + broadcast fit the register file",
         [](const CandidateParams &p, const Workload &, const TargetModel &m) -> std::string {
             if (p.nest != NestFamily::Gemm && p.nest != NestFamily::Splitk && p.nest != NestFamily::Panel) return "";
             const int need = p.mr * p.nr_vectors + p.nr_vectors + 1;
             if (need > m.cpu.vector_registers)
                 return num(need) + " vector registers needed, " + num(m.cpu.vector_registers) + " available";
             return "";
         }},
        {"latency-hiding", "enough independent accumulators to cover FMA latency",
         [](const CandidateParams &p, const Workload &w, const TargetModel &m) -> std::string {
             if (p.nest != NestFamily::Gemm && p.nest != NestFamily::Splitk && p.nest != NestFamily::Panel) return "";
             // A panel nest's row block cannot exceed M: the largest block M allows is kept.
             if (p.nest == NestFamily::Panel && 2 * p.mr > w.M) return "";
             const int need = m.cpu.fma_latency * m.cpu.fma_units;
             if (p.mr * p.nr_vectors < need)
                 return num(p.mr * p.nr_vectors) + " accumulators < " + num(need) + " (latency x FMA units)";
             return "";
         }},
        {"parallel-work", "at least one parallel task per core",
         [](const CandidateParams &p, const Workload &w, const TargetModel &m) -> std::string {
             const int64_t tasks = cpu_tasks(p, w, m.cpu);
             if (tasks < m.cpu.cores) return num(tasks) + " parallel tasks for " + num(m.cpu.cores) + " cores";
             return "";
         }},
        {"panel-fits-l2", "the packed w panel fits in L2",
         [](const CandidateParams &p, const Workload &w, const TargetModel &m) -> std::string {
             if (p.nest != NestFamily::Gemm) return "";
             const int64_t bytes = w.K * p.nr_vectors * m.cpu.lanes * p.panel_blocks * 4;
             if (bytes > m.cpu.l2_bytes)
                 return "panel of " + num(bytes >> 10) + " KiB > L2 " + num(m.cpu.l2_bytes >> 10) + " KiB";
             return "";
         }},
        {"partials-fit-l2", "the split-K nests' partial sums (M x N per chunk) fit in L2",
         [](const CandidateParams &p, const Workload &w, const TargetModel &m) -> std::string {
             if (p.nest != NestFamily::Decode && p.nest != NestFamily::Splitk && p.nest != NestFamily::Gemv) return "";
             const int64_t bytes = w.M * w.N * 4;
             if (bytes > m.cpu.l2_bytes) return num(bytes >> 10) + " KiB of partial sums per chunk > L2";
             return "";
         }},
        ordered_sum_rule(),
    };
}

std::vector<PruningRule> make_cuda_rules() {
    return {
        {"nest-applies", "the nest's guard holds for this workload",
         [](const CandidateParams &p, const Workload &w, const TargetModel &) -> std::string {
             if (p.nest == NestFamily::CudaTiled && (w.M < p.BM || w.N < p.BN || w.K % p.KT))
                 return "tiled needs M >= " + num(p.BM) + ", N >= " + num(p.BN) + ", K % " + num(p.KT) + " == 0";
             if (p.nest == NestFamily::CudaDecode && w.M > p.MB) return "decode needs M <= " + num(p.MB);
             return "";
         }},
        {"thread-limit", "32..1024 threads per block, whole warps",
         [](const CandidateParams &p, const Workload &, const TargetModel &m) -> std::string {
             int64_t threads = 0;
             if (p.nest == NestFamily::CudaTiled)
                 threads = (int64_t)(p.BN / p.TN) * (p.BM / p.TM);
             else if (p.nest == NestFamily::CudaDecode)
                 threads = (int64_t)p.NB * p.KS;
             else
                 return "";
             if (threads > m.cuda.max_threads_per_block || threads < 32 || threads % 32)
                 return num(threads) + " threads per block";
             return "";
         }},
        {"shared-memory", "staged tiles fit the block's static shared memory",
         [](const CandidateParams &p, const Workload &, const TargetModel &m) -> std::string {
             int64_t bytes = 0;
             if (p.nest == NestFamily::CudaTiled)
                 bytes = 4LL * (p.BN * p.BM + p.KT * (p.BM + p.BN));
             else if (p.nest == NestFamily::CudaDecode)
                 bytes = 4LL * p.KS * p.NB * p.MB;
             if (bytes > m.cuda.shared_per_block) return num(bytes) + " bytes of shared memory > " + num(m.cuda.shared_per_block);
             return "";
         }},
        {"register-estimate", "TN x TM accumulators + operands + overhead within 255 per thread",
         [](const CandidateParams &p, const Workload &, const TargetModel &m) -> std::string {
             if (p.nest != NestFamily::CudaTiled) return "";
             const int regs = p.TN * p.TM + p.TN + p.TM + 24;
             if (regs > m.cuda.max_registers_per_thread) return "about " + num(regs) + " registers per thread";
             return "";
         }},
        {"occupancy", "enough blocks to give every SM work",
         [](const CandidateParams &p, const Workload &w, const TargetModel &m) -> std::string {
             int64_t blocks = 0;
             if (p.nest == NestFamily::CudaTiled)
                 blocks = ceil_div(w.N, p.BN) * ceil_div(w.M, p.BM);
             else if (p.nest == NestFamily::CudaDecode)
                 blocks = ceil_div(w.N, p.NB);
             else
                 return "";
             if (blocks < m.cuda.sms / 2) return num(blocks) + " blocks for " + num(m.cuda.sms) + " SMs";
             return "";
         }},
        ordered_sum_rule(),
    };
}

}  // namespace

const std::vector<PruningRule> &pruning_rules(sched::Device device) {
    static const std::vector<PruningRule> cpu = make_cpu_rules(), cuda = make_cuda_rules();
    return device == sched::Device::Cuda ? cuda : cpu;
}

std::string PruneReport::to_string() const {
    std::ostringstream os;
    os << "search space: " << generated << " candidates";
    for (const auto &[rule, n] : removed_by_rule) os << "; " << rule << " removed " << n;
    os << "; " << survivors << " survive";
    return os.str();
}

std::vector<CandidateParams> prune(const std::vector<CandidateParams> &points, const Workload &w, const TargetModel &model,
                                   PruneReport *report) {
    const auto &rules = w.kind == dsl::GroupKind::MatmulEpilogue ? pruning_rules(model.device)
                        : w.kind == dsl::GroupKind::Attention    ? attention_pruning_rules()
                                                                 : group_pruning_rules();
    std::vector<size_t> removed(rules.size(), 0);
    std::vector<CandidateParams> kept;
    for (const auto &p : points) {
        bool ok = true;
        for (size_t r = 0; r < rules.size() && ok; r++) {
            if (!rules[r].violation(p, w, model).empty()) {
                removed[r]++;
                ok = false;
            }
        }
        if (ok) kept.push_back(p);
    }
    if (report) {
        report->generated = points.size();
        report->removed_by_rule.clear();
        for (size_t r = 0; r < rules.size(); r++) report->removed_by_rule.push_back({rules[r].name, removed[r]});
        report->survivors = kept.size();
    }
    return kept;
}

}  // namespace tessel::autosched
