// Every example graph, end to end: simplify -> fuse -> lower -> schedule -> JIT, against the
// reference interpreter on awkward shapes; and `tessel compile` writing its files.
#include "driver/GraphCompiler.h"
#include "dsl/ir/Parser.h"
#include "schedules/ScheduleJson.h"
#include "support/Subprocess.h"
#include "tests/AotProgram.h"
#include "tests/TempDir.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tessel;
namespace fs = std::filesystem;

#ifndef TESSEL_SOURCE_DIR
#error "TESSEL_SOURCE_DIR must point at the repository"
#endif

namespace {
std::string example(const char *name) { return std::string(TESSEL_SOURCE_DIR) + "/algorithms/" + name; }

/** The entries of `shape` that name symbols of graph `file` (--dim refuses any other). */
std::map<std::string, int64_t> sizes_for(const std::string &file, const std::map<std::string, int64_t> &shape) {
    const tessel::dsl::Graph g = tessel::dsl::parse_file(file);
    std::map<std::string, int64_t> out;
    for (tessel::dsl::ValueId v : g.order())
        for (const auto &d : g.node(v).type.dims)
            if (d.kind == tessel::dsl::Dim::Kind::Symbol && shape.count(d.symbol)) out[d.symbol] = shape.at(d.symbol);
    return out;
}
}  // namespace

TEST_CASE("tessel run: every example graph matches the interpreter") {
    const char *graphs[] = {"gelu_mlp.tsl", "gated_mlp.tsl", "mlp2.tsl", "softmax_rows.tsl", "layernorm_matmul.tsl"};
    const std::map<std::string, int64_t> shapes[] = {
        {{"M", 1}, {"K", 7}, {"N", 5}, {"H", 3}},      // decode row, tiny everything
        {{"M", 13}, {"K", 37}, {"N", 41}, {"H", 29}},  // primes, not multiples of any tile
        {{"M", 16}, {"K", 64}, {"N", 96}, {"H", 48}},  // multiples of the vector width
    };
    const tessel::testing::TempDir tmp;  // a tuning database of this test's own
    for (const char *g : graphs) {
        for (const auto &shape : shapes) {
            CAPTURE(g);
            CAPTURE(shape.at("M"));
            GraphRunOptions o;
            o.file = example(g);
            o.db = tmp.file("tuning.db");
            o.symbols = sizes_for(o.file, shape);
            std::ostringstream out;
            const int rc = run_graph(o, out);
            INFO(out.str());
            CHECK(rc == 0);
            CHECK(out.str().find("MISMATCH") == std::string::npos);
        }
    }
}

TEST_CASE("tessel compile: one fused group for the running example, with DOT, stmt and a static library") {
    GraphCompileOptions o;
    o.file = example("gelu_mlp.tsl");
    const tessel::testing::TempDir tmp;
    o.out_dir = tmp.file("out");
    o.db = tmp.file("tuning.db");
    o.emit = {"dot", "stmt", "lib"};
    o.symbols = {{"M", 512}, {"K", 1024}};
    o.schedule = "cpu_blocked";
    fs::remove_all(o.out_dir);
    std::ostringstream out;
    REQUIRE(compile_graph(o, out) == 0);
    const std::string text = out.str();
    INFO(text);
    CHECK(text.find("fusion plan for graph gelu_mlp: 1 group") != std::string::npos);
    CHECK(text.find("estimate: registers") != std::string::npos);
    CHECK(text.find("saves") != std::string::npos);
    CHECK(text.find("schedule 'cpu_blocked'") != std::string::npos);
    for (const char *f : {"gelu_mlp.dot", "g0_y.stmt", "gelu_mlp.a", "g0_y.h", "g0_y_v1.h"})
        CHECK(fs::exists(fs::path(o.out_dir) / f));
    // The guarded variants are listed with the guards a caller dispatches by.
    CHECK(text.find("g0_y_v1: variant 1 (") != std::string::npos);

    // The library links on its own (one runtime for every function) and computes the layer.
    const fs::path main = fs::path(o.out_dir) / "main.c", exe = fs::path(o.out_dir) / "main";
    std::ofstream(main) << R"(#include "HalideRuntime.h"
#include "g0_y.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
static float x[2 * 3], w[3 * 4096], b[4096], y[2 * 4096];
static halide_buffer_t buffer(float *p, int rank, const int *extents, halide_dimension_t *d) {
    halide_buffer_t t; memset(&t, 0, sizeof t);
    t.type.code = halide_type_float; t.type.bits = 32; t.type.lanes = 1;
    t.host = (uint8_t *)p; t.dimensions = rank; t.dim = d;
    for (int i = 0, s = 1; i < rank; s *= extents[i], i++) { d[i].min = 0; d[i].extent = extents[i]; d[i].stride = s; d[i].flags = 0; }
    return t;
}
int main(void) {
    for (int i = 0; i < 6; i++) x[i] = 0.25f * (float)i;
    for (int i = 0; i < 3 * 4096; i++) w[i] = 0.001f * (float)(i % 7);
    halide_dimension_t dx[2], dw[2], db[1], dy[2];
    const int ex[] = {3, 2}, ew[] = {4096, 3}, eb[] = {4096}, ey[] = {4096, 2};
    halide_buffer_t bx = buffer(x, 2, ex, dx), bw = buffer(w, 2, ew, dw), bb = buffer(b, 1, eb, db), by = buffer(y, 2, ey, dy);
    tessel_install_error_recorder();
    int rc = g0_y(&bx, &bw, &bb, &by);
    double s = x[3] * w[5] + x[4] * w[4096 + 5] + x[5] * w[2 * 4096 + 5];  /* y[1][5] before GELU */
    double want = 0.5 * s * (1 + erf(s / sqrt(2.0)));
    printf("rc %d got %.7g want %.7g\n", rc, y[4096 + 5], want);
    return rc != 0 || fabs(y[4096 + 5] - want) > 1e-5;
}
)";
    tessel::testing::link_and_run(main.string(), o.out_dir, o.out_dir + "/gelu_mlp.a", exe.string());
}

/** `tessel run` of algorithms/`file` at `symbols`: its output, checked to have matched the
 * interpreter, and by how much storing narrow moved the outputs (max abs against the graph in f32). */
namespace {
std::pair<std::string, double> run_quantized(const char *file, const std::map<std::string, int64_t> &symbols) {
    const tessel::testing::TempDir tmp;
    GraphRunOptions o;
    o.file = example(file);
    o.db = tmp.file("tuning.db");
    o.symbols = symbols;
    std::ostringstream out;
    REQUIRE(run_graph(o, out) == 0);
    const std::string text = out.str();
    INFO(text);
    CHECK(text.find("MISMATCH") == std::string::npos);
    const size_t at = text.find("output y: narrow storage (f16/bf16/i8) vs the same graph in f32, interpreted: max rel ");
    REQUIRE(at != std::string::npos);
    return {text, std::stod(text.substr(text.find("max abs ", at) + 8))};
}
}  // namespace

TEST_CASE("tessel run and compile on an int8 weight: the precision of each group, the error quantizing adds") {
    const auto [text, moved] = run_quantized("decode_int8.tsl", {{"M", 3}, {"K", 37}, {"N", 41}});
    INFO(text);
    CHECK(text.find("precision: f32 arithmetic, strict (prepared once per weight version); writes %q as i8") !=
          std::string::npos);
    CHECK(text.find("precision: f32 arithmetic; reads %q as i8\n") != std::string::npos);
    // The kernels match the quantized graph; quantizing itself moves the outputs, and says by how much.
    CHECK(moved > 1e-4);
    CHECK(moved < 0.1);
}

TEST_CASE("tessel run on int4 weights in groups: packed pairs read by the matmul, the error quantizing adds") {
    const auto [text, moved] = run_quantized("decode_int4.tsl", {{"M", 3}});
    INFO(text);
    CHECK(text.find("reads %q_groups as i8; writes %p as int4 pairs") != std::string::npos);
    CHECK(text.find("precision: f32 arithmetic; reads %p as int4 pairs\n") != std::string::npos);
    CHECK(moved > 1e-3);  // int4 moves the outputs more than int8 does
    CHECK(moved < 1.0);
}

TEST_CASE("without a named schedule: symbolic sizes take the library default, known sizes the autoscheduler") {
    const tessel::testing::TempDir tmp;
    const fs::path dir = tmp.dir;
    GraphCompileOptions o;
    o.file = example("gelu_mlp.tsl");
    o.out_dir = (dir / "out").string();
    o.db = (dir / "tuning.db").string();
    o.emit = {"stmt"};
    std::ostringstream symbolic;
    REQUIRE(compile_graph(o, symbolic) == 0);
    CHECK(symbolic.str().find("schedule 'cpu_blocked'") != std::string::npos);
    o.symbols = {{"M", 64}, {"K", 256}};
    std::ostringstream known;
    REQUIRE(compile_graph(o, known) == 0);
    INFO(known.str());
    CHECK(known.str().find("[model]") != std::string::npos);  // the model's pick, stored in the database
    std::ostringstream again;
    REQUIRE(compile_graph(o, again) == 0);
    CHECK(again.str().find("[database]") != std::string::npos);  // now a database hit
}

TEST_CASE("elementwise and reduction groups get their library schedules; --schedule picks by group kind") {
    testing::TempDir dir;
    const std::string ew = dir.file("ew.tsl");
    std::ofstream(ew) << "graph ew {\n  %x = input : f32[M, N]\n  %y = tanh(%x) * 2.0\n  output %y\n}\n";
    auto compile = [&](const std::string &file, const std::string &schedule) {
        GraphCompileOptions o;
        o.file = file;
        o.out_dir = dir.file("out");
        o.db = dir.file("tuning.db");
        o.emit = {"stmt"};
        o.schedule = schedule;
        std::ostringstream out;
        REQUIRE(compile_graph(o, out) == 0);
        return out.str();
    };
    auto has = [](const std::string &text, const std::string &line) {
        INFO(text);
        CHECK(text.find(line) != std::string::npos);
    };
    SUBCASE("library defaults by kind (sizes symbolic)") {
        has(compile(ew, ""), "group g0_y [elementwise]: schedule 'cpu_elementwise'");
        has(compile(example("softmax_rows.tsl"), ""), "group g0_y [reduction]: schedule 'cpu_rows'");
        const std::string ln = compile(example("layernorm_matmul.tsl"), "");
        has(ln, "group g0_ln [reduction]: schedule 'cpu_rows'");
        has(ln, "group g1_y [matmul+epilogue]: schedule 'cpu_blocked'");
    }
    SUBCASE("--schedule cpu_rows applies to the reduction group; the matmul group keeps its default") {
        const std::string ln = compile(example("layernorm_matmul.tsl"), "cpu_rows");
        has(ln, "group g0_ln [reduction]: schedule 'cpu_rows'");
        has(ln, "group g1_y [matmul+epilogue]: schedule 'cpu_blocked'");
        has(compile(ew, "cpu_rows"), "group g0_y [elementwise]: schedule 'cpu_elementwise'");
    }
    SUBCASE("a schedule file is for matmul+epilogue groups unless its \"group\" says otherwise") {
        sched::ScheduleSpec s("rows_by_hand");
        s.parallel({"y"}, "m");
        nlohmann::json j = sched::to_json(s);
        std::ofstream(dir.file("plain.json")) << j.dump();
        j["group"] = "reduction";
        std::ofstream(dir.file("rows.json")) << j.dump();
        has(compile(example("softmax_rows.tsl"), dir.file("plain.json")), "group g0_y [reduction]: schedule 'cpu_rows'");
        has(compile(example("softmax_rows.tsl"), dir.file("rows.json")), "group g0_y [reduction]: schedule 'rows_by_hand'");
    }
    SUBCASE("tessel run with --schedule cpu_rows matches the interpreter") {
        GraphRunOptions o;
        o.file = example("softmax_rows.tsl");
        o.db = dir.file("tuning.db");
        o.schedule = "cpu_rows";
        o.symbols = {{"M", 13}, {"N", 37}};
        std::ostringstream out;
        CHECK(run_graph(o, out) == 0);
        has(out.str(), "MATCH");
        has(out.str(), "schedule 'cpu_rows'");
    }
}

TEST_CASE("tessel compile for CUDA: the running example's static library builds and its PTX assembles for the target's sm_86") {
    GraphCompileOptions o;
    o.file = example("gelu_mlp.tsl");
    o.target = "host-cuda";
    const tessel::testing::TempDir tmp;
    o.out_dir = tmp.file("out");
    o.db = tmp.file("tuning.db");
    o.emit = {"lib", "ptx", "ptx-report"};
    std::ostringstream out;
    const int rc = compile_graph(o, out);
    INFO(out.str());
    CHECK(rc == 0);
    CHECK(fs::exists(fs::path(o.out_dir) / "gelu_mlp.a"));
    CHECK(fs::exists(fs::path(o.out_dir) / "g0_y.ptx"));
    if (out.str().find("ptx-report: skipped") == std::string::npos) {
        CHECK(out.str().find("assembled") != std::string::npos);
        CHECK(out.str().find("(sm_86)") != std::string::npos);  // host-cuda is capability 8.6
    }
}

TEST_CASE("bad requests are refused with what and where") {
    const tessel::testing::TempDir tmp;
    GraphRunOptions r;
    r.db = tmp.file("tuning.db");
    r.file = example("gelu_mlp.tsl");
    r.target = "host-cuda";
    std::ostringstream out;
    CHECK_THROWS_WITH(run_graph(r, out), doctest::Contains("executes on the CPU"));
    GraphCompileOptions c;
    c.file = example("gelu_mlp.tsl");
    c.out_dir = tmp.file("out");
    c.db = tmp.file("tuning.db");
    c.schedule = "cuda_tiled";  // a CUDA schedule for a CPU target
    CHECK_THROWS_WITH(compile_graph(c, out), doctest::Contains("is for cuda but target"));
    c.schedule = "cuda_rows";  // a group-generic CUDA schedule, too
    CHECK_THROWS_WITH(compile_graph(c, out), doctest::Contains("is for cuda but target"));
    c.schedule = "no_such_schedule";
    CHECK_THROWS_WITH(compile_graph(c, out), doctest::Contains("no library schedule named 'no_such_schedule'"));
}

TEST_CASE("tessel run executes effects around the compiled groups and checks the graph as written") {
    const tessel::testing::TempDir tmp;
    const std::string file = tmp.file("effects.tsl");
    std::ofstream(file) << "graph effects {\n"
                           "  %x = input : f32[M, N]\n"
                           "  %s = state_read(var=\"acc\") : f32[M, N]\n"
                           "  %y = relu(%x) * 2 + %s\n"
                           "  print(%y, label=\"y\")\n"
                           "  %ok = %y + 1\n"
                           "  assert(%ok, msg=\"y is never -1\")\n"
                           "  state_write(%y, var=\"acc\")\n"
                           "  %z = exp(%y)\n"
                           "  output %z\n"
                           "}\n";
    GraphRunOptions o;
    o.file = file;
    o.db = tmp.file("tuning.db");
    o.symbols = {{"M", 3}, {"N", 5}};
    std::ostringstream out;
    const int rc = run_graph(o, out);
    INFO(out.str());
    CHECK(rc == 0);
    CHECK(out.str().find("run by the interpreter") != std::string::npos);
    CHECK(out.str().find("MATCH") != std::string::npos);
    CHECK(out.str().find("y: f32[3, 5]") != std::string::npos);  // the print ran, on the kernel's values
}

TEST_CASE("matmul groups with several outputs or a transposed operand get matmul schedules") {
    // Fusion builds these groups; before, no matmul schedule could address them ("no stage
    // named 'y'" / "no stage named 'w'") and they fell back to a row schedule.
    const char *graphs[] = {
        // the epilogue's intermediate is exported too
        "graph two_out {\n  %x = input : f32[M, K]\n  %w = input : f32[K, N]\n  %b = input : f32[N]\n"
        "  %t = matmul(%x, %w)\n  %y = gelu(%t + %b)\n  output %t, %y\n}\n",
        // sibling matmuls, both exported
        "graph sib {\n  %x = input : f32[M, K]\n  %w1 = input : f32[K, N]\n  %w2 = input : f32[K, N]\n"
        "  %a = matmul(%x, %w1)\n  %c = matmul(%x, %w2)\n  output %a, %c\n}\n",
        // PyTorch's x @ w.T with w stored [N, K]
        "graph tr {\n  %x = input : f32[M, K]\n  %wt = input : f32[N, K]\n  %b = input : f32[N]\n"
        "  %y = gelu(matmul(%x, transpose(%wt)) + %b)\n  output %y\n}\n",
    };
    const tessel::testing::TempDir tmp;
    int i = 0;
    for (const char *text : graphs) {
        const std::string file = tmp.file("g" + std::to_string(i++) + ".tsl");
        std::ofstream(file) << text;
        // cpu_blocked's gemv and split-K variants, and the autoscheduler's pick (no --schedule).
        const std::pair<const char *, std::map<std::string, int64_t>> runs[] = {
            {"cpu_blocked", {{"M", 1}, {"K", 37}, {"N", 70}}},
            {"cpu_blocked", {{"M", 13}, {"K", 29}, {"N", 101}}},
            {"", {{"M", 64}, {"K", 64}, {"N", 96}}}};
        for (const auto &[schedule, shape] : runs) {
            {
                CAPTURE(text);
                CAPTURE(schedule);
                CAPTURE(shape.at("M"));
                GraphRunOptions o;
                o.file = file;
                o.db = tmp.file("tuning.db");
                o.schedule = schedule;
                o.symbols = shape;
                std::ostringstream out;
                const int rc = run_graph(o, out);
                INFO(out.str());
                CHECK(rc == 0);
                CHECK(out.str().find("fell back") == std::string::npos);
                CHECK(out.str().find("MISMATCH") == std::string::npos);
            }
        }
    }
}

TEST_CASE("tessel compile --emit memplan: the plan as text, timeline and JSON; rematerialization shown") {
    const tessel::testing::TempDir tmp;
    GraphCompileOptions o;
    o.file = example("mlp_residual.tsl");
    o.out_dir = tmp.file("out");
    o.db = tmp.file("tuning.db");
    o.emit = {"memplan"};
    o.symbols = {{"M", 64}, {"K", 96}, {"H", 128}};
    o.schedule = "cpu_blocked";
    std::ostringstream out;
    REQUIRE(compile_graph(o, out) == 0);
    INFO(out.str());
    CHECK(out.str().find("[recompute] %xn") != std::string::npos);
    CHECK(out.str().find("planned / bound") != std::string::npos);
    for (const char *f : {"mlp_residual.memplan.txt", "mlp_residual.memplan.svg", "mlp_residual.memplan.json"})
        CHECK(fs::file_size(fs::path(o.out_dir) / f) > 100);
    std::ifstream svg(fs::path(o.out_dir) / "mlp_residual.memplan.svg");
    std::stringstream text;
    text << svg.rdbuf();
    CHECK(text.str().find("<svg") == 0);
    CHECK(text.str().find("%h1") != std::string::npos);

    SUBCASE("--no-remat keeps the residual") {
        o.remat = false;
        // Without remat the group holds two outputs (y0, y1) that cpu_blocked does not address:
        // the explicit fallback gives it the default schedule.
        o.schedule_fallback = true;
        std::ostringstream kept;
        REQUIRE(compile_graph(o, kept) == 0);
        CHECK(kept.str().find("[recompute]") == std::string::npos);
    }
}

TEST_CASE("tessel run: attention forward and backward, with a budget it cannot meet reported, results matching") {
    const tessel::testing::TempDir tmp;
    GraphRunOptions o;
    o.file = example("attention_fwd_bwd.tsl");
    o.db = tmp.file("tuning.db");
    o.symbols = {{"S", 37}};
    o.memory_budget = 4096;
    std::ostringstream out;
    CHECK(run_graph(o, out) == 0);
    INFO(out.str());
    CHECK(out.str().find("does not fit: over by") != std::string::npos);
    CHECK(out.str().find("MISMATCH") == std::string::npos);
    CHECK(out.str().find("kernels ran") != std::string::npos);
}
