// Each invalid schedule is refused by apply_schedule before Halide is asked, with the
// schedule, the step and the violated limit in the message (Halide's test/error style).
#include "algorithms/GeluMlp.h"
#include "codegen/Compile.h"
#include "driver/GeluLayer.h"
#include "lowering/LowerToHalide.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/ApplySchedule.h"

#include <doctest/doctest.h>

using namespace tessel;
using namespace tessel::sched;

namespace {

std::string apply_error(const ScheduleSpec &s, const std::string &target = "host") {
    // The running example's matmul+epilogue group, lowered afresh (stages matmul and y).
    const Halide::Target t = parse_target(target);
    const dsl::Graph g = gelu_mlp_layer(false, dsl::NumericMode::Strict);
    lower::LoweredGroup lg = lower::lower_group(g, gelu_layer_group(g, t));
    try {
        lower::apply_to_group(s.steps, lg, t, s.name);
    } catch (const ScheduleError &e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("invalid schedules and their documented errors") {
    struct Row {
        const char *what;
        ScheduleSpec schedule;
        std::string target;
        std::string expected;
    };
    const StageRef y{"y"}, upd{"matmul", 0};
    std::vector<Row> rows = {
        {"a loop that does not exist", ScheduleSpec("bad").split(y, "q", "qo", "qi", 8), "host",
         "step 1 `y.split(q, qo, qi, 8)`: no loop named 'q' in y (loops: n, m)"},
        {"a stage that does not exist", ScheduleSpec("bad").parallel({"z"}, "n"), "host", "no stage named 'z'"},
        {"an update that does not exist", ScheduleSpec("bad").parallel({"matmul", 3}, "n"), "host", "there is no update(3)"},
        {"a tile of zero", ScheduleSpec("bad").split(y, "n", "no", "ni", 0), "host",
         "split factor must be positive, got 0 (a tile of zero)"},
        {"a vector width the target lacks", ScheduleSpec("bad").split(y, "n", "no", "ni", 12).vectorize(y, "ni"), "host",
         "vector width 12 is not one target"},
        {"a vector too wide for AVX2", ScheduleSpec("bad").split(y, "n", "no", "ni", 64).vectorize(y, "ni"),
         "x86-64-linux-avx2-fma", "accepted widths are powers of two from 2 to 32"},
        {"vectorizing a loop of unknown extent", ScheduleSpec("bad").vectorize(y, "n"), "host",
         "vectorize needs a loop of known constant extent"},
        {"unrolling a reduction loop of unknown extent (K is a symbol)", ScheduleSpec("bad").unroll(upd, "k"), "host",
         "unroll needs a loop of known constant extent; 'k' has none"},
        {"an unroll over the cap", ScheduleSpec("bad").split(upd, "k", "ko", "ki", 128).unroll(upd, "ki"), "host",
         "unroll factor 128 exceeds the limit of 64"},
        {"a GPU block over the thread limit",
         ScheduleSpec("bad", Device::Cuda)
             .split(y, "n", "no", "ni", 64)
             .split(y, "m", "mo", "mi", 32)
             .reorder(y, {"ni", "mi", "no", "mo"})
             .gpu_blocks(y, {"no", "mo"})
             .gpu_threads(y, {"ni", "mi"}),
         "host-cuda", "GPU block of 2048 threads is over the limit of 1024 threads per block"},
        {"a GPU z dimension over its limit",
         ScheduleSpec("bad", Device::Cuda)
             .split(y, "n", "no", "ni", 2)
             .split(y, "no", "nb", "nt", 2)
             .split(y, "m", "mo", "mi", 128)
             .gpu_threads(y, {"ni", "nt", "mi"}),
         "host-cuda", "GPU thread dimension 2 ('mi') has 128 threads, over the limit of 64"},
        {"shared memory over the limit",
         ScheduleSpec("bad", Device::Cuda)
             .stage_input("w", "w_shared")
             .store_in("w_shared", MemoryLevel::GpuShared)
             .bound("w_shared", "_0", 0, 128)
             .bound("w_shared", "_1", 0, 128),
         "host-cuda", "GPU shared memory of 65536 bytes is over the limit of 49152 bytes per block"},
        {"GPU loops on a CPU target", ScheduleSpec("bad").split(y, "n", "no", "ni", 8).gpu_threads(y, {"ni"}), "host",
         "gpu_threads needs a GPU target"},
        {"rfactor of a pure definition", ScheduleSpec("bad").rfactor(y, "k", "kf", "partial"), "host",
         "rfactor applies to an update definition"},
        {"compute_with of a Func with itself", ScheduleSpec("bad").compute_with(y, {"y", -1}, "n"), "host",
         "compute_with fuses two Funcs' stages; both are y"},
        {"a reused loop name", ScheduleSpec("bad").split(y, "n", "m", "ni", 8), "host", "loop name 'm' already exists in y"},
    };
    for (const auto &r : rows) {
        SUBCASE(r.what) {
            const std::string msg = apply_error(r.schedule, r.target);
            INFO(msg);
            CHECK(msg.find("invalid schedule 'bad'") == 0);
            CHECK(msg.find(r.expected) != std::string::npos);
        }
    }
}

TEST_CASE("a Halide refusal is reported in Tessel's words with Halide's message attached") {
    // Tessel's checks pass (both loops exist); Halide itself refuses to fuse a pure loop with
    // a reduction loop.
    ScheduleSpec s("bad");
    s.split({"matmul", 0}, "n", "no", "ni", 8).fuse({"matmul", 0}, "ni", "k", "nik");
    const std::string msg = apply_error(s);
    INFO(msg);
    CHECK(msg.find("invalid schedule 'bad', step 2 `matmul.update(0).fuse(ni, k, nik)`: Halide refused it: ") == 0);
}
