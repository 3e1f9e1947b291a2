#include "autoscheduler/MachineNumbers.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "autoscheduler/MachineProbes.h"

namespace tessel::autosched {

namespace {

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

std::string MachineNumbers::to_string() const {
    char date[32] = "?";
    const std::time_t t = (std::time_t)measured_unix;
    if (std::tm tm{}; gmtime_r(&t, &tm)) std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
    std::ostringstream os;
    os.precision(4);
    os << fma_gflops << " GFLOP/s FMA, " << read_gbps << " GB/s cold read (" << isa << ", " << threads << " threads, measured "
       << date << ")";
    return os.str();
}

std::string machine_identity() {
    std::ifstream in("/proc/cpuinfo");
    std::string line, vendor, name, family, model, stepping, flags;
    auto value = [](const std::string &l) {
        std::string v = l.substr(l.find(':') + 1);
        v.erase(0, v.find_first_not_of(' '));
        return v;
    };
    while (std::getline(in, line)) {
        auto take = [&](const char *key, std::string &out) {
            if (out.empty() && line.rfind(key, 0) == 0 && line.find(':') != std::string::npos) out = value(line);
        };
        take("vendor_id", vendor), take("model name", name), take("cpu family", family), take("stepping", stepping);
        take("flags", flags);
        if (model.empty() && line.rfind("model\t", 0) == 0) model = value(line);
    }
    std::ostringstream os;
    os << vendor << " " << name << " (family " << family << " model " << model << " stepping " << stepping << "), "
       << std::max(1u, std::thread::hardware_concurrency()) << " CPUs, flags " << std::hex << std::hash<std::string>{}(flags);
    return os.str();
}

std::string probe_isa(const Halide::Target &target) {
    return target.has_feature(Halide::Target::AVX512) && host_vector_isa() == VectorIsa::Avx512 ? "avx512" : "avx2";
}

MachineNumbers measure_machine(const Halide::Target &target, int threads) {
    MachineNumbers m;
    m.machine = machine_identity();
    m.isa = probe_isa(target);
    m.threads = threads > 0 ? threads : (int)std::max(1u, std::thread::hardware_concurrency());
    m.measured_unix = (int64_t)std::time(nullptr);
    const FmaPeakProbe fma(m.threads, 0.05, m.isa == "avx512" ? VectorIsa::Avx512 : VectorIsa::Avx2);
    std::vector<double> gflops;
    for (int r = 0; r < 15; r++) gflops.push_back(fma.flops() / fma.run() * 1e-9);
    // The FMA chains hide latency only when nothing else runs: the best round is the peak, as
    // tessel_bench reports it; the median guards the read bandwidth against one lucky round.
    m.fma_gflops = *std::max_element(gflops.begin(), gflops.end());
    std::vector<float> w(size_t(16) << 20, 1.0f);  // 64 MiB, as the decode suite's w
    CacheFlusher flusher;
    std::vector<double> gbps;
    volatile float sink = 0;
    for (int r = 0; r < 7; r++) {
        flusher.flush(m.threads);
        const auto t0 = std::chrono::steady_clock::now();
        sink = sink + stream_read(w.data(), w.size(), m.threads);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        gbps.push_back((double)(w.size() * sizeof(float)) / s * 1e-9);
    }
    m.read_gbps = median_of(gbps);
    return m;
}

}  // namespace tessel::autosched
