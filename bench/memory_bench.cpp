// tessel_memory_bench: what the memory plan and rematerialization buy, measured in one run.
//  1. Every example graph (algorithms/*.tsl), fused and unfused: naive bytes (one buffer per
//     value), the planned arena and the lower bound, under both reuse policies.
//  2. Random graphs (tests/dsl/RandomKernelGraphs.h): the distribution of planned / bound.
//  3. Attention forward + backward (algorithms/MemoryExamples.h) at S = 512 ... 4096, d = 64,
//     with the probability matrix saved (the planner's choice) and recomputed (forced): peak
//     bytes, and time per run alternated call by call (each program's median of every round).
//  4. The MLP with a residual, kept and rematerialized; and independent groups run serially and
//     as concurrent waves. Every timed program is checked against the others (and the
//     interpreter where it is fast enough) before it is timed.
//  0. First, layouts (dsl/passes/LayoutAssignment.h): the read costs its model assumes, measured
//     (one kernel per read kind, contiguous and strided, and a copy), and the layout chains
//     (algorithms/chain_*.tsl) under the pass's choice, forcing, and a copy per strided reader.
// Usage: tessel_memory_bench [--sizes 512,1024,2048,4096] [--rounds N] [--random N] [--target T]
//        [--timings-only] [--layouts-only]   (T: e.g. x86-64-linux-avx-avx2-fma-f16c-sse41 for AVX2 on an AVX-512 host)
#include "algorithms/MemoryExamples.h"
#include "codegen/Compile.h"
#include "compiler/Plan.h"
#include "driver/LayoutRatesProbe.h"
#include "dsl/Pipeline.h"
#include "dsl/analysis/MemoryTraffic.h"
#include "dsl/interp/Interpreter.h"
#include "dsl/ir/Parser.h"
#include "dsl/ir/Printer.h"
#include "dsl/passes/FusionPolicy.h"
#include "dsl/passes/LayoutAssignment.h"
#include "dsl/passes/Rematerialize.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/Library.h"
#include "support/ErrorStats.h"
#include "support/Interleaved.h"
#include "tests/dsl/RandomKernelGraphs.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

using namespace tessel;

namespace {

std::string mib(int64_t bytes) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", (double)bytes / (1 << 20));
    return b;
}

double max_rel(const std::vector<dsl::Tensor> &a, const std::vector<dsl::Tensor> &b) {
    double worst = 0;
    for (size_t i = 0; i < a.size(); i++)
        worst = std::max(worst, compare(a[i].data.data(), b[i].data.data(), (size_t)a[i].numel()).max_rel);
    return worst;
}

std::map<std::string, dsl::Tensor> random_inputs(const dsl::Graph &g, const std::map<std::string, int64_t> &symbols) {
    std::map<std::string, dsl::Tensor> in;
    uint64_t state = 12345;
    for (dsl::ValueId v : g.order()) {
        if (g.node(v).op != dsl::Op::Input) continue;
        dsl::Tensor t;
        t.shape = concrete_shape(g, v, symbols);
        t.data.resize((size_t)t.numel());
        for (double &x : t.data) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            x = (double)(float)(((state >> 40) * 0x1p-24) * 2 - 1);
        }
        in[g.display_name(v)] = std::move(t);
    }
    return in;
}

/** The graph planned through the front door (compiler/Plan.h) as every command plans it, at
 * the sizes `symbols`, with library default schedules (the same for every program compared);
 * `options` holds the alternative under test (no remat, a forced recompute, a layout choice). */
PlannedProgram planned(const dsl::Graph &g, const Halide::Target &t, const std::map<std::string, int64_t> &symbols,
                       PlanOptions options = {}) {
    options.symbols = symbols;
    options.schedules.autoschedule = false;
    return plan(g, t, options);
}

PlanOptions without_remat() {
    PlanOptions o;
    o.remat = false;
    return o;
}

/** A compiled program with its own arena (allocated once, as a caller's workspace). */
struct Program {
    std::string label;
    PlannedProgram planned;
    const dsl::Graph &graph;
    std::unique_ptr<CompiledGraph> compiled;
    ArenaOptions arena;
    std::vector<std::byte> workspace;
    int64_t peak = 0;
    std::vector<double> times, kernel_times;  ///< per call: wall; the kernels alone (RunStats)

    Program(std::string l, PlannedProgram p, const Halide::Target &t, const std::map<std::string, int64_t> &symbols,
            ArenaOptions a = {})
        : label(std::move(l)), planned(std::move(p)), graph(planned.graph), arena(a) {
        compiled = std::make_unique<CompiledGraph>(graph, planned.fusion, t, planned.chooser());
        peak = compiled->memory_plan(symbols, arena).planned_peak;
        workspace.resize((size_t)peak + 64);
        arena.workspace = workspace.data() + (64 - reinterpret_cast<uintptr_t>(workspace.data()) % 64) % 64;
        arena.workspace_bytes = (size_t)peak;
    }
    std::vector<dsl::Tensor> run(const std::map<std::string, dsl::Tensor> &in, const std::map<std::string, int64_t> &s) {
        return compiled->run(in, s, arena);
    }
    /** One call on the harness: the whole run is its sample; the kernels' share is kept too. */
    Contender contender(const std::map<std::string, dsl::Tensor> &in, const std::map<std::string, int64_t> &s) {
        return Contender(label, [this, &in, &s](Call &call) {
            RunStats stats;
            call.time([&] { compiled->run(in, s, arena, &stats); });
            if (!call.warming_up()) kernel_times.push_back(stats.kernel_seconds);
        });
    }
};

/** Runs the programs on the interleaved harness: one warm-up round, then `rounds` rounds, each in
 * an order drawn afresh. */
void alternate(std::vector<Program *> ps, const std::map<std::string, dsl::Tensor> &in, const std::map<std::string, int64_t> &s,
               int rounds) {
    std::vector<Contender> contenders;
    for (Program *p : ps) contenders.push_back(p->contender(in, s));
    InterleavedOptions o;
    o.stop = StoppingRule::fixed(rounds);
    Interleaved harness(std::move(contenders), o);
    const InterleavedResult &r = harness.run();
    for (size_t i = 0; i < ps.size(); i++) ps[i]->times.insert(ps[i]->times.end(), r.samples[i].begin(), r.samples[i].end());
}

dsl::Graph simplified(dsl::Graph g) {
    dsl::default_pipeline().run(g);
    return g;
}

void plan_quality_table(const Halide::Target &t) {
    std::cout << "\n## Memory plans of the example graphs (M = K = N = H = 512, S = 1024), MiB\n"
              << "graph                fusion   groups   naive  planned    bound  planned/bound  no-concurrent-reuse\n";
    std::vector<std::filesystem::path> files;
    for (const auto &e : std::filesystem::directory_iterator(std::string(TESSEL_SOURCE_DIR) + "/algorithms"))
        if (e.path().extension() == ".tsl") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::map<std::string, int64_t> sizes;
    for (const char *s : {"M", "K", "N", "H"}) sizes[s] = 512;
    sizes["S"] = 1024;
    for (const auto &f : files) {
        const dsl::Graph parsed = dsl::parse_file(f.string());
        std::map<std::string, int64_t> bound;
        for (const std::string &sym : graph_symbols(parsed)) bound[sym] = sizes.count(sym) ? sizes.at(sym) : 512;
        for (bool fused : {true, false}) {
            PlanOptions po = without_remat();
            if (!fused) po.fusion_policy = &dsl::unfused_policy();
            const PlannedProgram p = planned(parsed, t, bound, po);
            const dsl::Graph &g = p.graph;
            const dsl::FusionPlan &plan = p.fusion;
            dsl::BufferAssignmentOptions serial = {}, separate;
            serial.schedule_reads_before_writes = separate.schedule_reads_before_writes = lower::in_place_check([&] {
                std::vector<sched::ScheduleSpec> specs;
                for (const auto &c : p.schedules) specs.push_back(c.spec);
                return specs;
            }());
            separate.policy = dsl::ReusePolicy::NoConcurrentReuse;
            const dsl::BufferAssignment a = dsl::assign_buffers(g, plan, bound, serial),
                                        b = dsl::assign_buffers(g, plan, bound, separate);
            std::printf("%-20s %-8s %6zu %8s %8s %8s %14.3f %20s\n", f.stem().c_str(), fused ? "fused" : "unfused",
                        plan.groups.size(), mib(a.naive_bytes).c_str(), mib(a.planned_peak).c_str(), mib(a.lower_bound).c_str(),
                        a.quality(), mib(b.planned_peak).c_str());
        }
    }
}

void random_quality(int n) {
    std::vector<double> q;
    int worse = 0;
    for (int seed = 0; seed < n; seed++) {
        const dsl::Graph g = simplified(dsl::test::random_kernel_graph(seed, 6 + seed % 14));
        for (bool fused : {true, false}) {
            dsl::FusionOptions fo;
            if (!fused) fo.policy = &dsl::unfused_policy();
            const dsl::FusionPlan plan = dsl::plan_fusion(g, fo);
            const dsl::BufferAssignment a = dsl::assign_buffers(g, plan, {});
            q.push_back(a.quality());
            worse += a.quality() > 1.10;
        }
    }
    std::sort(q.begin(), q.end());
    auto at = [&](double f) { return q[std::min(q.size() - 1, (size_t)(f * (double)q.size()))]; };
    std::printf(
        "\n## planned / bound over %zu random plans (%d graphs, fused and unfused)\n"
        "median %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  plans above 1.10: %d\n",
        q.size(), n, at(0.5), at(0.9), at(0.99), at(0.999), q.back(), worse);
}

void attention_rows(const Halide::Target &t, const std::vector<int64_t> &sizes, int rounds) {
    std::cout
        << "\n## Attention forward + backward, d = 64: probability matrix saved vs recomputed (library default schedules)\n"
        << "    S   P MiB  saved peak  recomputed peak  peak change   saved ms  recomputed ms  recomputed/saved  planner's pick  agree\n";
    for (int64_t S : sizes) {
        const std::map<std::string, int64_t> s = {{"S", S}};
        const dsl::Graph graph = attention_fwd_bwd();
        const PlannedProgram pick = planned(graph, t, s);
        bool planner_recomputes_p = false;
        for (const auto &d : pick.remat->decisions) planner_recomputes_p |= d.applied && d.value_name == "p";
        PlanOptions force_p;
        force_p.recompute = {"p"};
        Program a("saved", planned(graph, t, s, without_remat()), t, s), b("recomputed", planned(graph, t, s, force_p), t, s);
        const auto in = random_inputs(a.graph, s);
        const auto ra = a.run(in, s), rb = b.run(in, s);
        double agree = max_rel(ra, rb);
        if (S <= 512) {
            const dsl::RunResult ref = dsl::interpret(a.graph, in, {});
            agree = std::max({agree, max_rel(ra, ref.outputs), max_rel(rb, ref.outputs)});
        }
        const int r = S >= 4096 ? std::max(3, rounds / 4) : S >= 2048 ? std::max(3, rounds / 2) : rounds;
        alternate({&a, &b}, in, s, r);
        const double ta = median(a.times), tb = median(b.times);
        std::printf("%5lld %7s %11s %16s %12s %10.2f %14.2f %17.3f %15s %6.1e\n", (long long)S, mib(S * S * 4).c_str(),
                    mib(a.peak).c_str(), mib(b.peak).c_str(), mib(b.peak - a.peak).c_str(), ta * 1e3, tb * 1e3, tb / ta,
                    planner_recomputes_p ? "recompute" : "keep", agree);
    }
}

void mlp_and_concurrency(const Halide::Target &t, int rounds) {
    std::cout << "\n## MLP with a residual (M = 256, K = 512, H = 1024): %xn kept vs rematerialized\n";
    const std::map<std::string, int64_t> s = {{"M", 256}, {"K", 512}, {"H", 1024}};
    const dsl::Graph graph = mlp_residual();
    {
        Program a("kept", planned(graph, t, s, without_remat()), t, s), b("remat", planned(graph, t, s), t, s);
        std::cout << b.planned.remat->to_string();
        const auto in = random_inputs(a.graph, s);
        const double agree =
            std::max(max_rel(a.run(in, s), b.run(in, s)), max_rel(a.run(in, s), dsl::interpret(a.graph, in, {}).outputs));
        alternate({&a, &b}, in, s, rounds);
        std::printf("kept: peak %s MiB, %.3f ms; rematerialized: peak %s MiB, %.3f ms (%.3fx); max rel difference %.1e\n",
                    mib(a.peak).c_str(), median(a.times) * 1e3, mib(b.peak).c_str(), median(b.times) * 1e3,
                    median(b.times) / median(a.times), agree);
    }
    std::cout << "\n## Independent groups: serial vs concurrent waves (no-concurrent-reuse plan for both)\n";
    ArenaOptions serial, waves;
    serial.policy = waves.policy = dsl::ReusePolicy::NoConcurrentReuse;
    waves.concurrent_groups = true;
    for (int64_t S : {256, 1024}) {
        const std::map<std::string, int64_t> sa = {{"S", S}};
        const dsl::Graph g = attention_fwd_bwd();
        Program a("serial", planned(g, t, sa, without_remat()), t, sa, serial),
            b("waves", planned(g, t, sa, without_remat()), t, sa, waves);
        const auto in = random_inputs(a.graph, sa);
        const double agree = max_rel(a.run(in, sa), b.run(in, sa));
        alternate({&a, &b}, in, sa, rounds);
        std::printf("attention S=%-5lld serial %.3f ms, concurrent waves %.3f ms (%.3fx), peak %s vs %s MiB; agree %.1e\n",
                    (long long)S, median(a.times) * 1e3, median(b.times) * 1e3, median(b.times) / median(a.times),
                    mib(a.peak).c_str(), mib(b.peak).c_str(), agree);
    }
}

/** Median kernel time of each program's only (or every) kernel, in ms. */
double kernel_ms(const Program &p) { return median(p.kernel_times) * 1e3; }

/** The read costs the layout pass weighs, measured as `tessel db probe` measures them
 * (driver/LayoutRatesProbe.h), beside the defaults a plan uses without stored rates. */
void layout_read_costs(const Halide::Target &t, int rounds) {
    std::cout << "\n## Layout read costs (the layout probe's read kinds)\n" << measure_layout_read_costs(t, rounds).to_string();
}

/** The layout chains (algorithms/chain_*.tsl) under the pass's choice, forcing the stored
 * layout (no copy) and a copy per strided reader, timed alternately (kernels only). */
void layout_chain_rows(const Halide::Target &t, int rounds) {
    std::cout
        << "\n## Layout chains: the pass's choice vs forcing the stored layout vs a copy per strided reader (kernel time, ms;\n"
        << "## '=': the same program as the choice, a tie)\n"
        << "chain          M     K     N   choice    chosen    forcing  copy/reader  best         chosen/best  agree\n";
    using C = dsl::LayoutOptions::Conversions;
    for (const char *name : {"chain_convert", "chain_force"}) {
        for (const auto &[M, K, N] :
             std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1024, 256, 1024}, {256, 1024, 4096}, {4096, 256, 256}}) {
            const std::map<std::string, int64_t> s = {{"M", M}, {"K", K}, {"N", N}};
            const dsl::Graph g = dsl::parse_file(std::string(TESSEL_SOURCE_DIR) + "/algorithms/" + name + ".tsl");
            std::vector<std::unique_ptr<Program>> ps;
            int chosen_copies = 0;
            for (C c : {C::Chosen, C::Never, C::EachReader}) {
                PlanOptions o = without_remat();
                o.conversions = c;
                PlannedProgram p = planned(g, t, s, o);
                if (c == C::Chosen) chosen_copies = p.layouts.conversions;
                ps.push_back(std::make_unique<Program>(name, std::move(p), t, s));
            }
            const auto in = random_inputs(ps[0]->graph, s);
            const auto r0 = ps[0]->run(in, s);
            const double agree = std::max(max_rel(r0, ps[1]->run(in, s)), max_rel(r0, ps[2]->run(in, s)));
            alternate({ps[0].get(), ps[1].get(), ps[2].get()}, in, s, rounds);
            const double a = kernel_ms(*ps[0]), b = kernel_ms(*ps[1]), c = kernel_ms(*ps[2]);
            // Programs the same as the choice (a copy per reader when one reader is strided) tie with it.
            const bool each_is_choice = dsl::print(ps[2]->graph) == dsl::print(ps[0]->graph);
            const bool forcing_is_choice = dsl::print(ps[1]->graph) == dsl::print(ps[0]->graph);
            const double best = std::min({a, forcing_is_choice ? a : b, each_is_choice ? a : c});
            const char *best_name = best == a ? "choice" : best == b ? "forcing" : "copy/reader";
            std::printf("%-13s %5lld %5lld %5lld   %-7s %8.3f %10.3f %11.3f%s  %-12s %11.3f  %6.1e\n", name, (long long)M,
                        (long long)K, (long long)N, chosen_copies ? "copy" : "no copy", a, b, c, each_is_choice ? "=" : " ",
                        best_name, a / best, agree);
        }
    }
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<int64_t> sizes = {512, 1024, 2048, 4096};
    int rounds = 20, random_graphs = 1000;
    std::string target = "host";
    bool tables = true, layouts_only = false;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        if (a == "--sizes" && i + 1 < argc) {
            sizes.clear();
            std::stringstream ss(argv[++i]);
            for (std::string x; std::getline(ss, x, ',');) sizes.push_back(std::stoll(x));
        } else if (a == "--rounds" && i + 1 < argc) {
            rounds = std::stoi(argv[++i]);
        } else if (a == "--random" && i + 1 < argc) {
            random_graphs = std::stoi(argv[++i]);
        } else if (a == "--target" && i + 1 < argc) {
            target = argv[++i];
        } else if (a == "--layouts-only") {
            layouts_only = true;
        } else if (a == "--timings-only") {
            tables = false;
        } else {
            std::cerr
                << "usage: tessel_memory_bench [--sizes 512,1024,2048,4096] [--rounds N] [--random N]\n"
                   "                           [--target host|x86-64-linux-avx2-fma...] [--timings-only] [--layouts-only]\n";
            return 2;
        }
    }
    const Halide::Target t = parse_target(target);
    std::cout << "# tessel_memory_bench on " << t.to_string() << " (" << rounds << " alternated rounds per timed pair)\n";
    layout_read_costs(t, rounds);
    layout_chain_rows(t, rounds);
    if (layouts_only) return 0;
    if (tables) {
        plan_quality_table(t);
        random_quality(random_graphs);
    }
    attention_rows(t, sizes, rounds);
    mlp_and_concurrency(t, rounds);
    return 0;
}
