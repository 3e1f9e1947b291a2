// `tessel db probe` end to end: it measures the layout rates beside the machine numbers, stores
// both for this machine and ISA, prints a row per comparison, and plans made with that database
// say their layout rates were measured here. (What the rates are is the machine's business; the
// test checks they are usable, not their values.)
#include <doctest/doctest.h>

#include "autoscheduler/MachineNumbers.h"
#include "autoscheduler/TuningDatabase.h"
#include "driver/DatabaseCommands.h"

#include "tests/TempDir.h"

#include <sstream>

using namespace tessel;
using namespace tessel::autosched;
using tessel::testing::TempDir;

TEST_CASE("tessel db probe: stores the layout rates for this machine and ISA, and prints how they were measured") {
    TempDir tmp;
    const std::string path = tmp.file("probe.db");
    std::ostringstream out, err;
    REQUIRE(db_probe(path, "host", true, out, err) == 0);
    CHECK(err.str().empty());
    const std::string text = out.str();
    for (const char *row : {"f32 w panels vs rows, gemv M=1", "bf16 w panels vs rows, decode", "split-K M=", "gemm M=256",
                            "reduction strided read", "copy into [1, 0]"})
        CHECK_MESSAGE(text.find(row) != std::string::npos, row);

    const Halide::Target host = Halide::get_host_target();
    TuningDatabase db(path, 60000, TuningStore::Access::ReadOnly);
    CHECK(db.machine_numbers(machine_identity(), probe_isa(host)));
    const auto rates = db.layout_rates(machine_identity(), probe_isa(host));
    REQUIRE(rates);
    CHECK(rates->invalid_reason().empty());
    CHECK(rates->read_cost[dsl::LayoutRates::Elementwise][0] == 1.0);  // the unit
    CHECK(rates->source.find("measured on this machine") == 0);

    // --no-layouts: the machine numbers again, the stored rates kept.
    std::ostringstream again;
    REQUIRE(db_probe(path, "host", false, again, err) == 0);
    CHECK(again.str().find("layout rates") == std::string::npos);
    CHECK(TuningDatabase(path).layout_rates(machine_identity(), probe_isa(host)));
}

TEST_CASE("tessel db probe: a GPU target is refused before anything is measured or stored") {
    TempDir tmp;
    std::ostringstream out, err;
    CHECK(db_probe(tmp.file("gpu.db"), "host-cuda", true, out, err) == 1);
    CHECK(err.str().find("the probes measure a CPU target") != std::string::npos);
}
