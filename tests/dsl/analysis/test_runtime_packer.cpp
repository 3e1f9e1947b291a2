// BufferAssignment's best-fit packing is the C runtime's (runtime/tessel_pack.c): on every
// example graph, fused and unfused, under both reuse policies, the plan's offsets and peak are
// what tessel_pack computes from the plan's allocations and conflict table, which a generated
// library packs with; the table is the live-range intersection under Serial reuse and a superset
// of it under NoConcurrentReuse.
#include <doctest/doctest.h>

#include <filesystem>

#include "dsl/Pipeline.h"
#include "dsl/analysis/BufferAssignment.h"
#include "dsl/ir/Parser.h"
#include "dsl/passes/FusionPolicy.h"
#include "tessel_runtime.h"

using namespace tessel::dsl;

TEST_CASE("buffer assignment packs with the runtime's packer, over the conflict table it exports") {
    int plans = 0, reused = 0;
    for (const auto &e : std::filesystem::directory_iterator(std::string(TESSEL_SOURCE_DIR) + "/algorithms")) {
        if (e.path().extension() != ".tsl") continue;
        Graph g = parse_file(e.path().string());
        default_pipeline().run(g);
        for (bool fused : {true, false}) {
            FusionOptions fo;
            if (!fused) fo.policy = &unfused_policy();
            const FusionPlan p = plan_fusion(g, fo);
            for (ReusePolicy policy : {ReusePolicy::Serial, ReusePolicy::NoConcurrentReuse}) {
                BufferAssignmentOptions o;
                o.policy = policy;
                std::map<std::string, int64_t> symbols;
                for (const char *s : {"M", "K", "N", "H", "S", "T"}) symbols[s] = 37;
                const BufferAssignment a = assign_buffers(g, p, symbols, o);
                INFO(e.path().filename().string() << (fused ? " fused " : " unfused ") << to_string(policy));
                const size_t n = a.allocations.size();
                REQUIRE(a.conflicts.size() == n * n);
                std::vector<int64_t> bytes, offsets(n);
                std::vector<int> first, last;
                for (size_t i = 0; i < n; i++) {
                    const Allocation &x = a.allocations[i];
                    bytes.push_back(x.bytes);
                    first.push_back(x.first_step);
                    last.push_back(x.last_step);
                    for (size_t j = 0; j < n; j++) {
                        const Allocation &y = a.allocations[j];
                        const bool live_together = i != j && x.first_step <= y.last_step && y.first_step <= x.last_step;
                        if (policy == ReusePolicy::Serial)
                            CHECK((a.conflicts[i * n + j] != 0) == live_together);
                        else if (live_together)
                            CHECK(a.conflicts[i * n + j] != 0);
                    }
                }
                std::vector<int64_t> scratch(TESSEL_PACK_SCRATCH_BYTES(n) / sizeof(int64_t) + 1);
                CHECK(tessel_pack((int)n, bytes.data(), first.data(), last.data(), a.conflicts.data(), offsets.data(),
                                  scratch.data()) == a.planned_peak);
                int64_t total = 0;
                for (size_t i = 0; i < n; i++) {
                    CHECK(offsets[i] == a.allocations[i].offset);
                    CHECK(a.allocations[i].offset % TESSEL_ALIGNMENT == 0);
                    total += a.allocations[i].bytes;
                }
                if (a.planned_peak < total) reused++;
                plans++;
            }
        }
    }
    CHECK(plans >= 24);
    CHECK(reused > 0);  // some plans share memory, so the packing is not trivially stacked
}

TEST_CASE("a plan packed by linear scan exports no conflict table") {
    // kChain-like: a chain of 4100 elementwise groups unfused is past kMaxBestFitAllocations.
    std::string text = "graph long {\n  %v0 = input : f32[8]\n";
    for (int i = 1; i <= 4200; i++) text += "  %v" + std::to_string(i) + " = exp(%v" + std::to_string(i - 1) + ")\n";
    text += "  output %v4200\n}\n";
    const Graph g = parse(text, "<long>");
    FusionOptions fo;
    fo.policy = &unfused_policy();
    BufferAssignmentOptions o;
    o.in_place = false;
    const BufferAssignment a = assign_buffers(g, plan_fusion(g, fo), {}, o);
    REQUIRE(a.allocations.size() > kMaxBestFitAllocations);
    CHECK(a.conflicts.empty());
    CHECK(!a.notes.empty());
}
