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

const char *kWeightKinds[] = {"wide", "narrow"};
const char *kReadKinds[] = {"elementwise", "reduction", "softmax"};

std::string date_of(int64_t unix_seconds) {
    char date[32] = "?";
    const std::time_t t = (std::time_t)unix_seconds;
    if (std::tm tm{}; gmtime_r(&t, &tm)) std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
    return date;
}

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

std::string MachineNumbers::to_string() const {
    const std::string date = date_of(measured_unix);
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

nlohmann::json layout_rates_to_json(const dsl::LayoutRates &r) {
    nlohmann::json j;
    for (int k = 0; k < dsl::LayoutRates::kWeightKinds; k++)
        j["panel_rate"][kWeightKinds[k]] = std::vector<double>(std::begin(r.panel_rate[k]), std::end(r.panel_rate[k]));
    for (int k = 0; k < dsl::LayoutRates::kReadKinds; k++) j["read_cost"][kReadKinds[k]] = {r.read_cost[k][0], r.read_cost[k][1]};
    j["conversion_cost"] = r.conversion_cost;
    return j;
}

dsl::LayoutRates layout_rates_from_json(const nlohmann::json &j, const std::string &isa, int64_t measured_unix) {
    auto numbers = [&](const nlohmann::json &parent, const char *group, const char *name, size_t n) {
        const std::string where = std::string(group) + "." + name;
        if (!parent.is_object() || !parent.contains(name) || !parent[name].is_array() || parent[name].size() != n)
            throw std::invalid_argument("layout rates: '" + where + "' is not a list of " + std::to_string(n) + " numbers");
        std::vector<double> out;
        for (const auto &v : parent[name]) {
            if (!v.is_number()) throw std::invalid_argument("layout rates: '" + where + "' holds " + v.dump());
            out.push_back(v.get<double>());
        }
        return out;
    };
    if (!j.is_object() || !j.contains("panel_rate") || !j.contains("read_cost") || !j.contains("conversion_cost") ||
        !j["conversion_cost"].is_number())
        throw std::invalid_argument("layout rates: expected panel_rate, read_cost and conversion_cost, got " + j.dump());
    dsl::LayoutRates r;
    for (int k = 0; k < dsl::LayoutRates::kWeightKinds; k++) {
        const auto v = numbers(j["panel_rate"], "panel_rate", kWeightKinds[k], dsl::LayoutRates::kFamilies);
        std::copy(v.begin(), v.end(), r.panel_rate[k]);
    }
    for (int k = 0; k < dsl::LayoutRates::kReadKinds; k++) {
        const auto v = numbers(j["read_cost"], "read_cost", kReadKinds[k], 2);
        r.read_cost[k][0] = v[0], r.read_cost[k][1] = v[1];
    }
    r.conversion_cost = j["conversion_cost"].get<double>();
    if (const std::string why = r.invalid_reason(); !why.empty()) throw std::invalid_argument("layout rates: " + why);
    r.source = "measured on this machine by `tessel db probe` (" + isa + ", " + date_of(measured_unix) + ")";
    return r;
}

}  // namespace tessel::autosched
