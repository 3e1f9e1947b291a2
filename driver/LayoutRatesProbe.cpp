// Map: one-group graphs (x @ w per width and layout; the read kinds) -> plan() without the layout
// pass (the layouts are the probe's) -> CompiledKernel with the planned schedule -> buffers in
// each value's storage type and layout -> interleaved rounds -> medians of paired ratios.
#include "driver/LayoutRatesProbe.h"

#include "autoscheduler/MachineProbes.h"
#include "compiler/Plan.h"
#include "dsl/ir/Builder.h"
#include "dsl/ir/Parser.h"
#include "lowering/CompiledGraph.h"
#include "lowering/CompiledKernel.h"
#include "lowering/TensorBuffers.h"
#include "schedules/MatmulCpuSchedules.h"
#include "support/Interleaved.h"
#include "support/Statistics.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace tessel {

namespace {

using dsl::DType;
using dsl::Layout;

/** One per-call kernel of a one-group graph, and buffers for one binding of its symbols. */
class ProbeKernel {
public:
    explicit ProbeKernel(dsl::Graph g, const Halide::Target &target) {
        PlanOptions po;
        po.layouts = false;  // the layouts are the probe's, as stated in the graph
        po.remat = false;
        po.schedules.autoschedule = false;
        program_ = std::make_unique<PlannedProgram>(plan(g, target, po));
        const dsl::FusionPlan &fp = program_->fusion;
        if (fp.groups.size() != 1 || fp.groups[0].prepared)
            throw std::logic_error("layout probe '" + g.name + "': expected one per-call group:\n" +
                                   fp.to_string(program_->graph));
        kernel_ =
            std::make_unique<CompiledKernel>(program_->graph, fp.groups[0], program_->schedule_of(fp.groups[0]).spec, target);
    }

    /** Allocates and fills the arguments for `symbols`: f32 values uniform in [-1, 1], 16-bit
     * ones 1.0 (bf16 0x3F80): normal numbers, so no lane takes a denormal's slow path. */
    void bind(const std::map<std::string, int64_t> &symbols) {
        buffers_.clear();
        raw_.clear();
        uint32_t state = 12345;
        for (const KernelArgument &a : kernel_->arguments()) {
            Halide::Buffer<> b =
                make_value_buffer(program_->graph, a.value, concrete_shape(program_->graph, a.value, symbols), a.name);
            if (b.type() == Halide::Float(32)) {
                float *p = (float *)b.data();
                for (size_t i = 0; i < b.number_of_elements(); i++) {
                    state = state * 1664525u + 1013904223u;
                    p[i] = (float)(state >> 8) * (2.0f / 16777216.0f) - 1.0f;
                }
            } else if (b.type().bits() == 16) {
                std::fill_n((uint16_t *)b.data(), b.number_of_elements(), uint16_t(0x3F80));
            } else {
                std::memset(b.data(), 0, b.size_in_bytes());
            }
            buffers_.push_back(b);
        }
        for (Halide::Buffer<> &b : buffers_) raw_.push_back(b.raw_buffer());
    }
    void unbind() {
        raw_.clear();
        buffers_.clear();
    }
    void run() const { kernel_->run(raw_); }

private:
    std::unique_ptr<PlannedProgram> program_;  // the kernel points into its graph
    std::unique_ptr<CompiledKernel> kernel_;
    std::vector<Halide::Buffer<>> buffers_;
    std::vector<halide_buffer_t *> raw_;
};

/** x @ w, w a weight stored as `stored` in `layout` (a narrow one widened to f32 in registers). */
dsl::Graph matmul_graph(DType stored, const Layout &layout) {
    using namespace dsl;
    GraphBuilder b(std::string("probe_") + (stored == DType::F32 ? "f32" : "bf16") + (layout.empty() ? "_rows" : "_panels"),
                   NumericMode::Fast);
    Dim M = b.symbol("M"), K = b.symbol("K"), N = b.symbol("N");
    Value x = b.input("x", DType::F32, {M, K});
    Value w = b.weight("w", stored, {K, N}, layout);
    b.output("y", matmul(x, stored == DType::F32 ? w : cast(w, DType::F32)));
    return std::move(b).build();
}

dsl::Graph read_graph(const std::string &label, const std::string &body) {
    return dsl::parse("graph " + label + " mode=fast {\n  %a = input : f32[M, M]\n  %y = " + body + "\n  output %y\n}\n",
                      label + ".tsl");
}

/** Median over rounds of samples[a][r] / samples[b][r]. */
double paired_ratio(const InterleavedResult &r, size_t a, size_t b) {
    std::vector<double> q;
    for (size_t i = 0; i < r.samples[a].size() && i < r.samples[b].size(); i++) q.push_back(r.samples[a][i] / r.samples[b][i]);
    return median(q);
}

/** The kernels timed interleaved; with a flusher, the caches evicted (on every core) before each call. */
InterleavedResult interleave(std::vector<ProbeKernel *> kernels, int rounds, autosched::CacheFlusher *flusher) {
    std::vector<Contender> contenders;
    for (size_t i = 0; i < kernels.size(); i++) contenders.emplace_back(std::to_string(i), [k = kernels[i]] { k->run(); });
    InterleavedOptions io;
    io.stop = StoppingRule::fixed(rounds);
    const int threads = (int)std::max(1u, std::thread::hardware_concurrency());
    if (flusher) io.before_call = [flusher, threads](size_t) { flusher->flush(threads); };
    Interleaved harness(std::move(contenders), io);
    return harness.run();
}

const char *kFamilyNames[] = {"gemv", "decode", "split-K", "gemm"};

}  // namespace

LayoutRatesMeasurement measure_layout_rates(const Halide::Target &target, int rounds) {
    LayoutRatesMeasurement out = measure_layout_read_costs(target, rounds);  // checks the target
    const sched::CpuBlocking blocking = sched::CpuBlocking::for_target(target);
    const dsl::LayoutRates assumed = dsl::LayoutRates::defaults();
    dsl::LayoutRates &rates = out.rates;

    // [width][layout]: row-major, panels of the register block's width.
    ProbeKernel wide_rows(matmul_graph(DType::F32, Layout{}), target);
    ProbeKernel wide_panels(matmul_graph(DType::F32, Layout::panels(1, blocking.nr)), target);
    ProbeKernel narrow_rows(matmul_graph(DType::BF16, Layout{}), target);
    ProbeKernel narrow_panels(matmul_graph(DType::BF16, Layout::panels(1, blocking.nr)), target);
    ProbeKernel *kernels[2][2] = {{&wide_rows, &wide_panels}, {&narrow_rows, &narrow_panels}};

    // One M per family; w of 64 MiB (f32) for the decode families, read once per call after a flush.
    const int64_t family_m[dsl::LayoutRates::kFamilies] = {1, std::max(2, blocking.mr / 2), blocking.decode_max_m, 256};
    autosched::CacheFlusher flusher;
    for (int f = 0; f < dsl::LayoutRates::kFamilies; f++) {
        const bool cold = f < 3;
        const std::map<std::string, int64_t> s = {{"M", family_m[f]}, {"K", cold ? 4096 : 1024}, {"N", 4096}};
        std::vector<ProbeKernel *> all;
        for (auto &width : kernels)
            for (ProbeKernel *k : width) k->bind(s), all.push_back(k);
        const InterleavedResult r = interleave(all, rounds, cold ? &flusher : nullptr);
        for (int w = 0; w < dsl::LayoutRates::kWeightKinds; w++) {
            rates.panel_rate[w][f] = paired_ratio(r, size_t(2 * w), size_t(2 * w + 1));
            char what[96];
            std::snprintf(what, sizeof what, "%s w panels vs rows, %s M=%lld K=%lld N=4096%s", w ? "bf16" : "f32",
                          kFamilyNames[f], (long long)family_m[f], (long long)s.at("K"), cold ? " cold" : "");
            out.rows.push_back({what, r.median(size_t(2 * w)) * 1e3, r.median(size_t(2 * w + 1)) * 1e3, rates.panel_rate[w][f],
                                assumed.panel_rate[w][f]});
        }
        for (ProbeKernel *k : all) k->unbind();
    }

    char date[32] = "?";
    const std::time_t now = std::time(nullptr);
    if (std::tm tm{}; gmtime_r(&now, &tm)) std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
    rates.source = std::string("measured on this machine by `tessel db probe` (") + date + ")";
    if (const std::string why = rates.invalid_reason(); !why.empty())
        throw std::runtime_error("the layout probe measured an unusable rate (" + why + "): not stored");
    return out;
}

LayoutRatesMeasurement measure_layout_read_costs(const Halide::Target &target, int rounds) {
    if (target.has_gpu_feature())
        throw std::invalid_argument("the layout probe measures a CPU target, not " + target.to_string());
    const dsl::LayoutRates assumed = dsl::LayoutRates::defaults();
    LayoutRatesMeasurement out;
    out.target = target.to_string();
    dsl::LayoutRates &rates = out.rates;
    // Read kinds over a 1024 x 1024 f32 value, and the copy into the other order.
    const char *bodies[dsl::LayoutRates::kReadKinds][2] = {{"exp(%a)", "exp(transpose(%a))"},
                                                           {"reduce_sum(%a, axes=[1])", "reduce_sum(transpose(%a), axes=[1])"},
                                                           {"softmax(%a, axis=1)", "softmax(transpose(%a), axis=1)"}};
    const char *kinds[] = {"elementwise", "reduction", "softmax"};
    std::vector<std::unique_ptr<ProbeKernel>> reads;
    for (int k = 0; k < dsl::LayoutRates::kReadKinds; k++)
        for (int a = 0; a < 2; a++)
            reads.push_back(std::make_unique<ProbeKernel>(
                read_graph(std::string(kinds[k]) + (a ? "_strided" : "_contiguous"), bodies[k][a]), target));
    reads.push_back(std::make_unique<ProbeKernel>(read_graph("copy", "copy(%a, layout=\"[1, 0]\")"), target));
    std::vector<ProbeKernel *> all;
    for (auto &k : reads) k->bind({{"M", 1024}}), all.push_back(k.get());
    const InterleavedResult r = interleave(all, rounds, nullptr);
    for (int k = 0; k < dsl::LayoutRates::kReadKinds; k++)
        for (int a = 0; a < 2; a++) {
            const size_t c = size_t(2 * k + a);
            rates.read_cost[k][a] = c == 0 ? 1.0 : paired_ratio(r, c, 0);
            out.rows.push_back({std::string(kinds[k]) + (a ? " strided" : " contiguous") + " read, 1024 x 1024 f32 / exp",
                                r.median(0) * 1e3, r.median(c) * 1e3, rates.read_cost[k][a], assumed.read_cost[k][a]});
        }
    rates.conversion_cost = paired_ratio(r, 6, 0);
    out.rows.push_back({"copy into [1, 0], 1024 x 1024 f32 / exp", r.median(0) * 1e3, r.median(6) * 1e3, rates.conversion_cost,
                        assumed.conversion_cost});
    return out;
}

std::string LayoutRatesMeasurement::to_string() const {
    std::ostringstream os;
    os << "layout rates for " << target << " (medians of paired rounds; panel rates are the row-major time over the\n"
       << "panel time, > 1: panels faster; read costs in units of the contiguous exp kernel):\n";
    char line[200];
    std::snprintf(line, sizeof line, "  %-62s %10s %10s %9s %8s\n", "", "ref ms", "this ms", "measured", "default");
    os << line;
    for (const Row &r : rows) {
        std::snprintf(line, sizeof line, "  %-62s %10.3f %10.3f %9.2f %8.2f\n", r.what.c_str(), r.reference_ms, r.variant_ms,
                      r.measured, r.assumed);
        os << line;
    }
    return os.str();
}

}  // namespace tessel
