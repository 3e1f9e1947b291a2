// Kernel reuse (compiler/KernelReuse.h, codegen/KernelAliases.h): groups of the same code are
// compiled once and the others are aliases that link and compute (ahead of time) or run on the
// first one's kernel (the JIT road), bit for bit; what differs in code is never shared; schedule
// selection asks once per code unless the database holds a group's own record. Also the static extents the kernels are compiled for, checked at the call, and
// `tessel compile --time-report`.
#include "autoscheduler/Tuner.h"
#include "autoscheduler/TuningDatabase.h"
#include "codegen/KernelAliases.h"
#include "compiler/KernelReuse.h"
#include "compiler/Plan.h"
#include "driver/GraphCompiler.h"
#include "driver/KernelLibrary.h"
#include "dsl/ir/Parser.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ScheduleGroup.h"
#include "schedules/ScheduleJson.h"
#include "support/Subprocess.h"
#include "tests/AotProgram.h"
#include "tests/TempDir.h"
#include "tests/TensorCompare.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

using namespace tessel;
namespace fs = std::filesystem;

namespace {

// Three layers of one shape: a and c are the same code over other inputs (value names differ),
// b differs in a constant; the output of d is a with symbol N for M (still the same code).
const char *kLayers = R"(graph layers {
  %a = input : f32[M, 37]
  %b = input : f32[M, 37]
  %c = input : f32[M, 37]
  %d = input : f32[N, 37]
  %a1 = %a * 2.0 + 1.0
  %a2 = exp(%a1) * %a
  %b1 = %b * 3.0 + 1.0
  %b2 = exp(%b1) * %b
  %c1 = %c * 2.0 + 1.0
  %c2 = exp(%c1) * %c
  %d1 = %d * 2.0 + 1.0
  %d2 = exp(%d1) * %d
  output %a2, %b2, %c2, %d2
}
)";

// Constants lifted into an argument compute what the compiled-in constants compute, bit for bit,
// special values included.
const char *kSpecialConstants = R"(graph special {
  %a = input : f32[M, 19]
  %b = input : f32[M, 19]
  %c = input : f32[M, 19]
  %a1 = %a * 2.0 + 1.0
  %b1 = %b * -0.0 + inf
  %c1 = %c * nan + -inf
  output %a1, %b1, %c1
}
)";

/** The planned program's kernels, ahead of time (lowered and scheduled, nothing compiled). */
struct Kernels {
    PlannedProgram planned;
    CompiledGraph program;
    std::vector<const CompiledKernel *> kernels;
    explicit Kernels(const std::string &text, const std::map<std::string, int64_t> &sizes)
        : planned(plan(dsl::parse(text), Halide::get_host_target(), [&] {
              PlanOptions o;
              o.symbols = sizes;
              return o;
          }())),
          program(planned.graph, planned.fusion, Halide::get_host_target(), planned.chooser(), KernelBackend::AheadOfTime) {
        kernels = program.kernels();
    }
    size_t group_of(const std::string &output) const {
        for (size_t i = 0; i < kernels.size(); i++)
            if (kernels[i]->group().name.find(output) != std::string::npos) return i;
        FAIL("no group for " << output);
        return 0;
    }
};

/** `tessel compile --emit lib` of `text` into tmp/out: the options used and what it printed. */
std::pair<GraphCompileOptions, std::string> compile_library(const tessel::testing::TempDir &tmp, const std::string &text,
                                                            const std::map<std::string, int64_t> &sizes, bool time_report = false) {
    GraphCompileOptions o;
    o.file = tmp.file("graph.tsl");
    std::ofstream(o.file) << text;
    o.out_dir = tmp.file("out");
    o.db = tmp.file("tuning.db");
    o.symbols = sizes;
    o.time_report = time_report;
    std::ostringstream out;
    REQUIRE(compile_graph(o, out) == 0);
    return {o, out.str()};
}

}  // namespace

TEST_CASE("kernel reuse: the same code is found across value and symbol names; a constant or a schedule apart is not") {
    Kernels k(kLayers, {{"M", 5}, {"N", 5}});
    REQUIRE(k.kernels.size() == 4);
    const KernelReuse r = find_kernel_reuse(k.planned.graph, k.kernels);
    const size_t a = k.group_of("a2"), b = k.group_of("b2"), c = k.group_of("c2"), d = k.group_of("d2");
    CHECK(r.same_code_as[a] == a);
    CHECK(r.same_code_as[b] == b);  // 3.0 for 2.0: other code
    CHECK(r.same_code_as[c] == a);
    CHECK(r.same_code_as[d] == a);  // N for M: symbols are numbered, not named
    CHECK(r.distinct == 2);
    for (const auto &constants : r.lifted) CHECK(constants.empty());  // no lifting asked for

    // Constants as an argument: b is a's code with its own constants (2.0 -> 3.0, and 1.0), so
    // is every exact alias of a; not when a kernel with its constants argument would have more
    // arguments than asked for.
    const KernelReuse lifted = find_kernel_reuse(k.planned.graph, k.kernels, kAliasRegisterArguments);
    CHECK(lifted.distinct == 1);
    for (size_t i : {a, b, c, d}) {
        CHECK(lifted.same_code_as[i] == a);
        REQUIRE(lifted.lifted[i].size() == 2);
        CHECK(k.planned.graph.node(lifted.lifted[i][0]).op == dsl::Op::Constant);
    }
    const std::vector<double> b_values = {k.planned.graph.node(lifted.lifted[b][0]).attrs.value[0],
                                          k.planned.graph.node(lifted.lifted[b][1]).attrs.value[0]};
    CHECK(std::set<double>(b_values.begin(), b_values.end()) == std::set<double>{3.0, 1.0});
    const KernelReuse too_many = find_kernel_reuse(k.planned.graph, k.kernels, k.kernels[a]->arguments().size());
    CHECK(too_many.same_code_as == r.same_code_as);
    CHECK(too_many.distinct == 2);

    // The same group under another schedule is other code exactly when the steps differ.
    const CompiledKernel &ka = *k.kernels[a];
    const sched::ScheduleSpec fallback = lower::default_group_schedule(lower::lower_group(k.planned.graph, ka.group()), ka.target());
    const CompiledKernel again(k.planned.graph, ka.group(), fallback, ka.target(), KernelBackend::AheadOfTime);
    nlohmann::json s1 = sched::to_json(ka.schedule()), s2 = sched::to_json(fallback);
    for (auto *s : {&s1, &s2}) s->erase("name"), s->erase("description");
    CHECK((kernel_code_key(k.planned.graph, ka) == kernel_code_key(k.planned.graph, again)) == (s1 == s2));
    CHECK(kernel_code_key(k.planned.graph, ka).find("\nschedule ") != std::string::npos);
}

namespace {

/** `text` planned at `sizes` and run on the JIT road with kernels shared (share_kernels), and
 * with every group on its own kernel (constants compiled in), on random inputs with special
 * values: the outputs must be the same bits, and match the interpreter. Returns what
 * share_kernels said. */
std::string check_shared_jit(const std::string &text, const std::map<std::string, int64_t> &sizes, size_t distinct) {
    const PlannedProgram p = plan(dsl::parse(text), Halide::get_host_target(), [&] {
        PlanOptions o;
        o.symbols = sizes;
        return o;
    }());
    CompiledGraph shared(p.graph, p.fusion, Halide::get_host_target(), p.chooser(), KernelBackend::JitOnFirstUse);
    std::ostringstream said;
    const KernelReuse r = share_kernels(p.graph, shared, said);
    INFO(said.str());
    CHECK(r.distinct == distinct);

    dsl::RunOptions ro;
    ro.random_missing_inputs = true;
    ro.symbol_sizes = sizes;
    std::map<std::string, dsl::Tensor> inputs = dsl::interpret(p.graph, {}, ro).inputs;
    const double specials[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e-40, 88.0, -1e30};
    for (auto &[name, t] : inputs)
        for (size_t i = 0; i < std::size(specials); i++) t.data[i * 3 % t.data.size()] = specials[i];
    const dsl::RunResult ref = dsl::interpret(p.graph, inputs, ro);
    const std::vector<dsl::Tensor> got = shared.run(inputs, sizes);

    const CompiledGraph own(p.graph, p.fusion, Halide::get_host_target(), p.chooser(), KernelBackend::Jit);
    const std::vector<dsl::Tensor> expected = own.run(inputs, sizes);
    REQUIRE(got.size() == expected.size());
    size_t differ = 0;
    for (size_t i = 0; i < got.size(); i++) {
        REQUIRE(got[i].data.size() == expected[i].data.size());
        for (size_t j = 0; j < got[i].data.size(); j++) {
            const float x = (float)got[i].data[j], y = (float)expected[i].data[j];
            differ += std::memcmp(&x, &y, sizeof x) != 0;
        }
    }
    CHECK(differ == 0);
    CHECK(testing::max_relative_difference(got, ref.outputs) < 1e-5);

    // Only the kernels run on were compiled: a code's own kernel, or its lifted code.
    for (size_t i = 0; i < shared.groups().size(); i++) {
        const CompiledGraph::Group &cg = shared.groups()[i];
        CAPTURE(cg.kernel->group().name);
        CHECK(cg.runs_on == r.same_code_as[i]);
        CHECK(cg.constants.defined() == !r.lifted[i].empty());
        auto compiled = [](const CompiledKernel *k) {
            bool any = false;
            for (const auto &v : k->variants()) any = any || v.compiled;
            return any;
        };
        const bool code = r.same_code_as[i] == i;
        CHECK(compiled(cg.kernel.get()) == (code && r.lifted[i].empty()));
        CHECK((cg.lifted_code != nullptr) == (code && !r.lifted[i].empty()));
        if (cg.lifted_code) CHECK(compiled(cg.lifted_code.get()));
    }
    return said.str();
}

}  // namespace

TEST_CASE("the JIT road: groups of the same code run on one kernel, compiled once, over their own buffers") {
    // M != N: d runs a's code at other extents (the variant is picked per call); b differs in a
    // constant, so all four run a's code with their constants as an argument.
    const std::string said = check_shared_jit(kLayers, {{"M", 5}, {"N", 11}}, 1);
    CHECK(said.find("kernel reuse: 3 of 4 groups run an earlier group's code") != std::string::npos);
    CHECK(said.find("4 pass their constants") != std::string::npos);
    // Constants of every kind through the argument: -0, inf, nan, -inf.
    CHECK(check_shared_jit(kSpecialConstants, {{"M", 3}}, 1).find("3 pass their constants") != std::string::npos);

    // Only an earlier group with its own kernel and as many arguments and constants can be shared.
    const PlannedProgram p = plan(dsl::parse(kLayers), Halide::get_host_target(), [&] {
        PlanOptions o;
        o.symbols = {{"M", 5}, {"N", 5}};
        return o;
    }());
    CompiledGraph other(p.graph, p.fusion, Halide::get_host_target(), p.chooser(), KernelBackend::JitOnFirstUse);
    CHECK_THROWS_AS(other.share_kernels({0, 0}), std::invalid_argument);
    CHECK_THROWS_AS(other.share_kernels({1, 1, 2, 3}), std::invalid_argument);
    CHECK_THROWS_AS(other.share_kernels({0, 0, 1, 3}), std::invalid_argument);
    const dsl::ValueId c0 = other.groups()[0].kernel->group().nodes.front();
    CHECK_THROWS_AS(other.share_kernels({0, 0, 2, 3}, {{}, {c0}, {}, {}}), std::invalid_argument);

    // Lifted code takes exactly its constants.
    std::vector<dsl::ValueId> constants;
    const CompiledKernel &k0 = *other.groups()[0].kernel;
    for (dsl::ValueId v : k0.group().nodes)
        if (liftable_constant(p.graph, k0.group(), v)) constants.push_back(v);
    REQUIRE(constants.size() == 2);
    const CompiledKernel lifted(p.graph, k0.group(), k0.schedule(), k0.target(), KernelBackend::JitOnFirstUse, std::nullopt,
                                constants);
    Halide::Buffer<float> in(37, 5), out(37, 5), three(3);
    in.fill(1.0f);
    CHECK_THROWS_WITH_AS(lifted.run({in.raw_buffer(), out.raw_buffer()}), doctest::Contains("1-D float32 buffer of 2"),
                         CompileError);
    CHECK_THROWS_WITH_AS(lifted.run({in.raw_buffer(), out.raw_buffer()}, three.raw_buffer()),
                         doctest::Contains("1-D float32 buffer of 2"), CompileError);
    CHECK_THROWS_WITH_AS(k0.run({in.raw_buffer(), out.raw_buffer()}, three.raw_buffer()),
                         doctest::Contains("takes no constants buffer"), CompileError);
}

TEST_CASE("schedule selection: groups apart only in constants get one choice, unless the database holds their own") {
    const tessel::testing::TempDir tmp;
    const std::string db = tmp.file("tuning.db");
    const Halide::Target host = Halide::get_host_target();
    auto planned = [&] {
        PlanOptions o;
        o.symbols = {{"M", 5}, {"N", 5}};
        o.schedules.db = db;
        return plan(dsl::parse(kLayers), host, o);
    };
    const PlannedProgram p = planned();
    auto group_of = [&](const PlannedProgram &q, const std::string &output) {
        for (size_t i = 0; i < q.fusion.groups.size(); i++)
            if (q.fusion.groups[i].name.find(output) != std::string::npos) return i;
        FAIL("no group for " << output);
        return size_t(0);
    };
    const size_t a = group_of(p, "a2"), b = group_of(p, "b2");
    INFO(p.schedules[b].reason);
    CHECK(p.schedules[b].reason.find("(as for " + p.fusion.groups[a].name +
                                     ", which differs only in the values of scalar constants)") != std::string::npos);
    CHECK(p.schedules[a].reason.find("differs only") == std::string::npos);
    CHECK(sched::to_json(p.schedules[b].spec) == sched::to_json(p.schedules[a].spec));

    // A record of b's own (tuned for b) is b's schedule.
    {
        autosched::TuneRequest r;
        r.graph = &p.graph;
        r.group = p.fusion.groups[b];
        r.workload = *group_workload(p.graph, r.group, p.sizes);
        r.target = host;
        sched::ScheduleSpec own = lower::default_group_schedule(lower::lower_group(p.graph, r.group), host);
        own.name = "b_own";
        autosched::TuningDatabase store(db);
        store.commit({autosched::Tuner::key_for(r),
                      sched::to_json(own),
                      1.0,
                      {1.0},
                      "analytic-1",
                      autosched::kMeasured,
                      1735732800,
                      "planted for b"});
    }
    const PlannedProgram again = planned();
    CHECK(again.schedules[group_of(again, "b2")].spec.name == "b_own");
    CHECK(again.schedules[group_of(again, "b2")].provenance == ScheduleProvenance::Database);
    CHECK(again.schedules[group_of(again, "a2")].spec.name != "b_own");
}

TEST_CASE("tessel compile --emit lib: aliases link under their own names and compute their own inputs") {
    const tessel::testing::TempDir tmp;
    const auto [o, text] = compile_library(tmp, kLayers, {{"M", 5}, {"N", 5}}, true);
    INFO(text);
    if (!aliases_supported(Halide::get_host_target())) return;
    // b's constants differ from a's: all four read theirs from an argument of one code.
    CHECK(text.find("kernel reuse: 3 of 4 groups run an earlier group's code") != std::string::npos);
    CHECK(text.find("4 pass their constants to code that reads them from an argument") != std::string::npos);
    CHECK(text.find("compiled once: 1 distinct kernel\n") != std::string::npos);
    for (const char *phase : {"where the time went:", "fusion", "schedule selection", "library (Halide + LLVM)", "total"})
        CHECK(text.find(phase) != std::string::npos);

    // Every group by its name, each on its own input: the alias computes its caller's buffers.
    std::vector<std::string> names;
    for (const fs::directory_entry &e : fs::directory_iterator(o.out_dir))
        if (e.path().extension() == ".h") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    REQUIRE(names.size() == 4);
    const fs::path main = fs::path(o.out_dir) / "main.c", exe = fs::path(o.out_dir) / "main";
    std::ofstream m(main);
    m << "#include \"HalideRuntime.h\"\n#include <math.h>\n#include <stdio.h>\n#include <string.h>\n";
    for (const std::string &n : names) m << "#include \"" << n << ".h\"\n";
    m << R"(static float in[4][5 * 37], y[4][5 * 37];
static halide_dimension_t dims[8][2];
static halide_buffer_t buffer(float *p, int rows, halide_dimension_t *d) {
    halide_buffer_t t; memset(&t, 0, sizeof t);
    t.type.code = halide_type_float; t.type.bits = 32; t.type.lanes = 1;
    t.host = (uint8_t *)p; t.dimensions = 2; t.dim = d;
    d[0].min = 0; d[0].extent = 37; d[0].stride = 1; d[0].flags = 0;
    d[1].min = 0; d[1].extent = rows; d[1].stride = 37; d[1].flags = 0;
    return t;
}
typedef int (*kernel)(halide_buffer_t *, halide_buffer_t *);
int main(void) {
    const float scale[4] = {2.0f, 3.0f, 2.0f, 2.0f};
)";
    m << "    kernel k[4] = {";
    for (size_t i = 0; i < names.size(); i++) m << (i ? ", " : "") << names[i];
    m << R"(};
    int bad = 0;
    tessel_install_error_recorder();
    for (int g = 0; g < 4; g++) {
        for (int i = 0; i < 5 * 37; i++) in[g][i] = 0.01f * (float)((i * 7 + g * 13) % 50) - 0.2f;
        halide_buffer_t x = buffer(in[g], 5, dims[2 * g]), out = buffer(y[g], 5, dims[2 * g + 1]);
        if (k[g](&x, &out) != 0) { printf("group %d failed: %s\n", g, tessel_last_error()); return 1; }
        for (int i = 0; i < 5 * 37; i++) {
            const double want = exp(scale[g] * in[g][i] + 1.0) * in[g][i];
            if (fabs(y[g][i] - want) > 1e-5 * (1 + fabs(want))) bad++;
        }
    }
    /* The kernels are compiled for 37 columns: another width is refused at the call. */
    halide_buffer_t x = buffer(in[0], 5, dims[0]), out = buffer(y[0], 5, dims[1]);
    dims[0][0].extent = 36; dims[1][0].extent = 36;
    const int rc = k[2](&x, &out);
    printf("wrong width: rc %d (%s); %d wrong values\n", rc, tessel_last_error(), bad);
    return bad != 0 || rc == 0;
}
)";
    m.close();
    const std::string printed = tessel::testing::link_and_run(main.string(), o.out_dir, o.out_dir + "/layers.a", exe.string());
    CHECK(printed.find("wrong width: rc -") != std::string::npos);  // refused with Halide's error code and message
}

TEST_CASE("constants as an argument: bit for bit the compiled-in code, through the call, _argv and _metadata") {
    if (!aliases_supported(Halide::get_host_target())) return;
    const tessel::testing::TempDir tmp;
    const auto [o, text] = compile_library(tmp, kSpecialConstants, {{"M", 3}});
    INFO(text);
    REQUIRE(text.find("3 pass their constants to code that reads them from an argument") != std::string::npos);
    CHECK(!fs::exists(fs::path(o.out_dir) / "g0_a1_code.h"));  // internal: only the aliases' headers

    // Every group by its name, through the call and through _argv, on awkward inputs.
    Kernels k(kSpecialConstants, {{"M", 3}});
    std::vector<std::string> names;
    for (const CompiledKernel *kernel : k.kernels) names.push_back(kernel->group().name);
    const fs::path main = fs::path(o.out_dir) / "main.c", exe = fs::path(o.out_dir) / "main";
    std::ofstream m(main);
    m << "#include \"HalideRuntime.h\"\n#include <stdio.h>\n#include <string.h>\n";
    for (const std::string &n : names) m << "#include \"" << n << ".h\"\n";
    m << R"(static halide_buffer_t buffer(float *p, halide_dimension_t *d) {
    halide_buffer_t t; memset(&t, 0, sizeof t);
    t.type.code = halide_type_float; t.type.bits = 32; t.type.lanes = 1;
    t.host = (uint8_t *)p; t.dimensions = 2; t.dim = d;
    d[0].min = 0; d[0].extent = 19; d[0].stride = 1; d[0].flags = 0;
    d[1].min = 0; d[1].extent = 3; d[1].stride = 19; d[1].flags = 0;
    return t;
}
typedef int (*kernel)(halide_buffer_t *, halide_buffer_t *);
typedef int (*kernel_argv)(void **);
typedef const struct halide_filter_metadata_t *(*kernel_metadata)(void);
)";
    auto list = [&](const std::string &suffix) {
        std::string s;
        for (size_t i = 0; i < names.size(); i++) s += (i ? ", " : "") + names[i] + suffix;
        return s;
    };
    m << "static const char *names[3] = {\"" << names[0] << "\", \"" << names[1] << "\", \"" << names[2] << "\"};\n"
      << "static kernel k[3] = {" << list("") << "};\nstatic kernel_argv kv[3] = {" << list("_argv")
      << "};\nstatic kernel_metadata km[3] = {" << list("_metadata") << "};\n";
    m << R"(int main(void) {
    static float in[3 * 19], y[3 * 19], y_argv[3 * 19];
    halide_dimension_t d[3][2];
    tessel_install_error_recorder();
    FILE *f = fopen("inputs.bin", "rb");
    if (!f || fread(in, sizeof in, 1, f) != 1) { printf("cannot read inputs.bin\n"); return 1; }
    fclose(f);
    f = fopen("outputs.bin", "wb");
    for (int g = 0; g < 3; g++) {
        halide_buffer_t x = buffer(in, d[0]), out = buffer(y, d[1]), out_argv = buffer(y_argv, d[2]);
        void *args[2] = {&x, &out_argv};
        if (k[g](&x, &out) != 0 || kv[g](args) != 0) { printf("group %d failed: %s\n", g, tessel_last_error()); return 1; }
        if (memcmp(y, y_argv, sizeof y) != 0) { printf("group %d: _argv differs from the call\n", g); return 1; }
        const struct halide_filter_metadata_t *md = km[g]();
        if (strcmp(md->name, names[g]) != 0 || md->num_arguments != 2 || md->arguments[0].kind != halide_argument_kind_input_buffer ||
            md->arguments[1].kind != halide_argument_kind_output_buffer || md->arguments[0].dimensions != 2) {
            printf("group %d: metadata names %s with %d arguments\n", g, md->name, md->num_arguments);
            return 1;
        }
        fwrite(y, sizeof y, 1, f);
    }
    fclose(f);
    return 0;
}
)";
    m.close();
    // Awkward inputs, the same bits for the program and the JIT: zeros of both signs, infinities,
    // NaN, a subnormal, large values.
    Halide::Buffer<float> x(19, 3);
    const float special[8] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -3.5f, 1e30f};
    for (int i = 0; i < 3 * 19; i++) x.data()[i] = i < 8 ? special[i] : 0.37f * (float)(i % 11) - 1.5f;
    std::ofstream(fs::path(o.out_dir) / "inputs.bin", std::ios::binary)
        .write(reinterpret_cast<const char *>(x.data()), 3 * 19 * sizeof(float));
    const fs::path cwd = fs::current_path();
    fs::current_path(o.out_dir);
    tessel::testing::link_and_run(main.string(), o.out_dir, o.out_dir + "/special.a", exe.string());
    fs::current_path(cwd);

    // The same groups JIT-compiled with their constants in the code: the same bits.
    std::ifstream bin(fs::path(o.out_dir) / "outputs.bin", std::ios::binary);
    std::vector<std::vector<float>> jit_outputs;
    for (size_t g = 0; g < k.kernels.size(); g++) {
        const CompiledKernel jit(k.planned.graph, k.kernels[g]->group(), k.kernels[g]->schedule(), Halide::get_host_target());
        Halide::Buffer<float> y(19, 3), lifted(19, 3);
        jit.run({x.raw_buffer(), y.raw_buffer()});
        bin.read(reinterpret_cast<char *>(lifted.data()), 3 * 19 * sizeof(float));
        REQUIRE(bin);
        INFO("group " << k.kernels[g]->group().name);
        for (int i = 0; i < 3 * 19; i++) {
            uint32_t want, got;
            std::memcpy(&want, &y.data()[i], 4);
            std::memcpy(&got, &lifted.data()[i], 4);
            INFO("element " << i << ": x " << x.data()[i] << ", compiled in " << y.data()[i] << ", lifted " << lifted.data()[i]);
            CHECK(want == got);
        }
        jit_outputs.push_back(std::vector<float>(y.data(), y.data() + 3 * 19));
    }

    // `tessel lib` shares the code the same way; its entry calls each group's _argv thunk.
    KernelLibraryOptions lib;
    lib.file = o.file;
    lib.out_dir = tmp.file("lib");
    lib.db = o.db;
    lib.symbols = o.symbols;
    std::ostringstream log;
    REQUIRE(write_kernel_library(lib, log) == 0);
    INFO(log.str());
    CHECK(log.str().find("3 pass their constants to code that reads them from an argument") != std::string::npos);
    const fs::path consumer = fs::path(lib.out_dir) / "consumer.c";
    std::ofstream(consumer) << R"(#include "special.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static float in[3 * 19], y[3][3 * 19];
static halide_dimension_t d[6][2];
static halide_buffer_t b[6];
int main(void) {
    FILE *f = fopen("inputs.bin", "rb");
    if (!f || fread(in, sizeof in, 1, f) != 1) return 1;
    fclose(f);
    for (int j = 0; j < 6; j++) {
        memset(&b[j], 0, sizeof b[j]);
        b[j].type.code = halide_type_float; b[j].type.bits = 32; b[j].type.lanes = 1;
        b[j].host = (uint8_t *)(j < 3 ? in : y[j - 3]); b[j].dimensions = 2; b[j].dim = d[j];
        d[j][0].extent = 19; d[j][0].stride = 1; d[j][1].extent = 3; d[j][1].stride = 19;
    }
    const int64_t bytes = special_workspace_bytes(&b[0], &b[1], &b[2], &b[3], &b[4], &b[5]);
    void *w = aligned_alloc(64, bytes > 0 ? (size_t)(bytes + 63) / 64 * 64 : 64);
    const int rc = special(&b[0], &b[1], &b[2], &b[3], &b[4], &b[5], w, bytes);
    if (rc != 0) { printf("rc %d: %s\n", rc, special_error()); return 1; }
    f = fopen("library.bin", "wb");
    fwrite(y, sizeof y, 1, f);
    fclose(f);
    return 0;
}
)";
    fs::copy_file(fs::path(o.out_dir) / "inputs.bin", fs::path(lib.out_dir) / "inputs.bin");
    const SubprocessResult linked =
        run_subprocess({"cc", "-O1", consumer.string(), "-I" + lib.out_dir, lib.out_dir + "/libspecial.a", "-lgomp", "-lpthread",
                        "-ldl", "-lm", "-o", lib.out_dir + "/consumer"},
                       {300});
    REQUIRE_MESSAGE(linked.ok(), linked.output);
    const fs::path here = fs::current_path();
    fs::current_path(lib.out_dir);
    const SubprocessResult ran = run_subprocess({lib.out_dir + "/consumer"}, {60});
    fs::current_path(here);
    REQUIRE_MESSAGE(ran.ok(), ran.output);
    std::ifstream library_bin(fs::path(lib.out_dir) / "library.bin", std::ios::binary);
    for (const std::vector<float> &want : jit_outputs) {  // groups in output order: a1, b1, c1
        std::vector<float> got(want.size());
        library_bin.read(reinterpret_cast<char *>(got.data()), (std::streamsize)(got.size() * sizeof(float)));
        REQUIRE(library_bin);
        CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
    }
}

// Functions linked into one module keep Halide's strict_float: x - x at x = inf is NaN, and
// 0 * x at x = NaN is NaN (under fast-math flags LLVM folds both to 0). Two groups of different
// code, so the chunk links two modules.
TEST_CASE("tessel compile --emit lib: linked functions keep IEEE special values (strict_float survives linking)") {
    const tessel::testing::TempDir tmp;
    const char *graph = R"(graph ieee {
  %a = input : f32[M, 8]
  %b = input : f32[M, 8]
  %d = %a - %a
  %z = exp(%b) * 0.0
  output %d, %z
}
)";
    const auto [o, text] = compile_library(tmp, graph, {{"M", 2}});
    INFO(text);
    Kernels k(graph, {{"M", 2}});
    REQUIRE(k.kernels.size() == 2);
    const fs::path main = fs::path(o.out_dir) / "main.c", exe = fs::path(o.out_dir) / "main";
    std::ofstream m(main);
    m << "#include \"HalideRuntime.h\"\n#include <math.h>\n#include <stdio.h>\n#include <string.h>\n";
    for (const CompiledKernel *kernel : k.kernels) m << "#include \"" << kernel->group().name << ".h\"\n";
    m << "typedef int (*kernel)(halide_buffer_t *, halide_buffer_t *);\nstatic kernel k[2] = {" << k.kernels[0]->group().name
      << ", " << k.kernels[1]->group().name << "};\n";
    m << R"(int main(void) {
    static float in[16], y[16];
    halide_dimension_t d[2][2];
    halide_buffer_t b[2];
    for (int i = 0; i < 16; i++) in[i] = i % 2 ? INFINITY : NAN;
    tessel_install_error_recorder();
    for (int g = 0; g < 2; g++) {
        for (int j = 0; j < 2; j++) {
            memset(&b[j], 0, sizeof b[j]);
            b[j].type.code = halide_type_float; b[j].type.bits = 32; b[j].type.lanes = 1;
            b[j].host = (uint8_t *)(j ? y : in); b[j].dimensions = 2; b[j].dim = d[j];
            d[j][0].min = 0; d[j][0].extent = 8; d[j][0].stride = 1; d[j][0].flags = 0;
            d[j][1].min = 0; d[j][1].extent = 2; d[j][1].stride = 8; d[j][1].flags = 0;
        }
        if (k[g](&b[0], &b[1]) != 0) { printf("failed: %s\n", tessel_last_error()); return 1; }
        int nan = 0;
        for (int i = 0; i < 16; i++) nan += isnan(y[i]) != 0;
        printf("group %d: %d of 16 NaN\n", g, nan);
    }
    return 0;
}
)";
    m.close();
    const std::string printed = tessel::testing::link_and_run(main.string(), o.out_dir, o.out_dir + "/ieee.a", exe.string());
    // inf - inf and NaN - NaN are NaN; exp(inf) * 0 and exp(NaN) * 0 are NaN.
    CHECK(printed.find("group 0: 16 of 16 NaN") != std::string::npos);
    CHECK(printed.find("group 1: 16 of 16 NaN") != std::string::npos);
}
