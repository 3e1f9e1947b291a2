#include "driver/MemoryPlanReport.h"

#include "dsl/analysis/MemoryTraffic.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace tessel {

MemoryPlanReport memory_plan_report(const CompiledGraph &program, const std::map<std::string, int64_t> &symbols,
                                    std::optional<dsl::RematResult> remat, const std::set<std::string> &donated) {
    MemoryPlanReport r;
    r.symbols = symbols;
    ArenaOptions serial;
    serial.donated_inputs = donated;
    r.serial = program.memory_plan(symbols, serial);
    ArenaOptions separate = serial;
    separate.policy = dsl::ReusePolicy::NoConcurrentReuse;
    r.no_concurrent = program.memory_plan(symbols, separate);
    r.remat = std::move(remat);
    return r;
}

std::string MemoryPlanReport::summary() const {
    std::ostringstream os;
    os << "memory: naive " << dsl::format_bytes(serial.naive_bytes) << ", planned " << dsl::format_bytes(serial.planned_peak)
       << " (bound " << dsl::format_bytes(serial.lower_bound) << "); without reuse between concurrent groups "
       << dsl::format_bytes(no_concurrent.planned_peak) << "; sizes";
    for (const auto &[s, n] : symbols) os << " " << s << "=" << n;
    return os.str();
}

std::string MemoryPlanReport::text(const dsl::Graph &g) const {
    std::ostringstream os;
    os << summary() << "\n" << serial.to_string(g);
    os << "with " << dsl::to_string(no_concurrent.policy) << ": planned peak " << dsl::format_bytes(no_concurrent.planned_peak)
       << ", " << no_concurrent.added_edges.size() << " orderings added\n";
    if (remat) os << remat->to_string();
    return os.str();
}

std::string MemoryPlanReport::json(const dsl::Graph &g) const {
    nlohmann::json j;
    j["graph"] = g.name;
    j["symbols"] = symbols;
    j["alignment"] = dsl::kArenaAlignment;
    j["arena_bytes"] = serial.planned_peak;
    j["naive_bytes"] = serial.naive_bytes;
    j["lower_bound_bytes"] = serial.lower_bound;
    j["policy"] = dsl::to_string(serial.policy);
    for (const auto &b : serial.buffers) {
        nlohmann::json e;
        e["value"] = g.display_name(b.value);
        e["bytes"] = b.bytes;
        e["live"] = {b.def_step, b.last_use_step};
        e["storage"] = dsl::to_string(b.kind);
        e["offset"] = b.allocation >= 0 ? nlohmann::json(serial.allocations[b.allocation].offset) : nlohmann::json(nullptr);
        if (b.shares_with != dsl::kNoValue) e["shares_with"] = g.display_name(b.shares_with);
        j["buffers"].push_back(e);
    }
    return j.dump(2) + "\n";
}

std::vector<std::filesystem::path> write_memory_plan(const dsl::Graph &g, const MemoryPlanReport &report,
                                                     const std::filesystem::path &dir, const std::string &base) {
    const std::filesystem::path txt = dir / (base + ".memplan.txt"), svg = dir / (base + ".memplan.svg"),
                                json = dir / (base + ".memplan.json");
    std::ofstream(txt) << report.text(g);
    std::ofstream(svg) << dsl::buffer_timeline_svg(g, report.serial);
    std::ofstream(json) << report.json(g);
    return {txt, svg, json};
}

}  // namespace tessel
