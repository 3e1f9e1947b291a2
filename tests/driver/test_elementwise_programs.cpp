// Elementwise programs (lowering/ElementwiseProgram.h, runtime/tessel_program.c) and the compile
// budget that chooses them (compiler/CompileBudget.h): a program computes the reference
// interpreter's results bit for bit (every op, broadcasting, special values, awkward shapes),
// on the JIT road and linked from `tessel compile --emit lib` and `tessel lib`; the budget keeps
// the codes with the most work compiled and says why the others are not.
#include "compiler/CompileBudget.h"
#include "compiler/Plan.h"
#include "driver/GraphCompiler.h"
#include "driver/KernelLibrary.h"
#include "dsl/ir/Parser.h"
#include "lowering/CompiledGraph.h"
#include "lowering/ElementwiseProgram.h"
#include "tests/AotProgram.h"
#include "tests/TempDir.h"
#include "tests/TensorCompare.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tessel;
namespace fs = std::filesystem;

namespace {

// Every op a program has, each an output of its own (so a wrong bit cannot be masked by a later
// op), with row ([N]) and column ([M, 1]) broadcasting and scalar constants.
const char *kEveryOp = R"(graph every_op {
  %x = input : f32[M, N]
  %b = input : f32[N]
  %s = input : f32[M, 1]
  %add_ = %x + %b
  %sub_ = %x - %s
  %mul_ = %x * %b
  %div_ = %x / %b
  %max_ = max(%x, %b)
  %min_ = min(%s, %x)
  %lt_ = lt(%x, %b)
  %le_ = le(%s, %x)
  %gt_ = gt(%x, %b)
  %ge_ = ge(%s, %x)
  %eq_ = eq(%x, %b)
  %ne_ = ne(%s, %x)
  %where_ = where(%x, %b, %s)
  %gelu_ = gelu(%x)
  %gelu_tanh_ = gelu_tanh(%x)
  %tanh_ = tanh(%x)
  %exp_ = exp(%x)
  %relu_ = relu(%x)
  %neg_ = neg(%x)
  %abs_ = abs(%x)
  %sqrt_ = sqrt(%x)
  %rsqrt_ = rsqrt(%x)
  %log_ = log(%x)
  %sigmoid_ = sigmoid(%x)
  %silu_ = silu(%x)
  %sin_ = sin(%x)
  %cos_ = cos(%x)
  %k = (%x * 0.5 - 2.0) / %s
  output %add_, %sub_, %mul_, %div_, %max_, %min_, %lt_, %le_, %gt_, %ge_, %eq_, %ne_, %where_, %gelu_, %gelu_tanh_, %tanh_, %exp_, %relu_, %neg_, %abs_, %sqrt_, %rsqrt_, %log_, %sigmoid_, %silu_, %sin_, %cos_, %k
}
)";

// Chains apart in their ops (no two the same code) and one matmul, which cannot be a program.
std::string distinct_chains(int chains) {
    const char *steps[] = {"%s + %%x", "%s - %%x", "%s * %%x", "max(%s, %%x)", "min(%s, %%x)"};
    std::ostringstream g;
    g << "graph chains {\n  %x = input : f32[M, 16]\n  %w = input : f32[16, 16]\n  %mm = matmul(%x, %w)\n";
    std::string outputs = "%mm";
    for (int c = 0; c < chains; c++) {
        g << "  %c" << c << "_0 = %x * " << c + 2 << ".0\n";
        // Chain c has c + 1 steps: more work the later it comes.
        for (int i = 1; i <= c + 1; i++) {
            char step[64];
            std::snprintf(step, sizeof step, steps[(c + i) % 5],
                          ("%c" + std::to_string(c) + "_" + std::to_string(i - 1)).c_str());
            g << "  %c" << c << "_" << i << " = " << step << "\n";
        }
        outputs += ", %c" + std::to_string(c) + "_" + std::to_string(c + 1);
    }
    g << "  output " << outputs << "\n}\n";
    return g.str();
}

PlannedProgram planned(const std::string &text, const std::map<std::string, int64_t> &sizes, int64_t max_kernels) {
    PlanOptions o;
    o.symbols = sizes;
    o.max_compiled_kernels = max_kernels;
    return plan(dsl::parse(text), Halide::get_host_target(), o);
}

/** Random inputs with special values planted: NaN, +-inf, +-0, a denormal, large values. */
std::map<std::string, dsl::Tensor> special_inputs(const dsl::Graph &g, const std::map<std::string, int64_t> &sizes) {
    dsl::RunOptions ro;
    ro.random_missing_inputs = true;
    ro.symbol_sizes = sizes;
    std::map<std::string, dsl::Tensor> inputs = dsl::interpret(g, {}, ro).inputs;
    const double specials[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e-40, 88.5, -1e30, 3.0, -2.5};
    for (auto &[name, t] : inputs)
        for (size_t i = 0; i < std::size(specials); i++) t.data[i * 7 % t.data.size()] = specials[i];
    return inputs;
}

}  // namespace

TEST_CASE("elementwise programs: every op, broadcast and special value, bit for bit the interpreter") {
    for (const auto &sizes :
         std::vector<std::map<std::string, int64_t>>{{{"M", 1}, {"N", 1}}, {{"M", 7}, {"N", 131}}, {{"M", 3}, {"N", 64}}}) {
        CAPTURE(sizes.at("M"));
        CAPTURE(sizes.at("N"));
        const PlannedProgram p = planned(kEveryOp, sizes, 0);
        const CompiledGraph program(p.graph, p.fusion, Halide::get_host_target(), p.chooser(), KernelBackend::Jit);
        size_t values = 0;
        int registers = 0;
        for (size_t i = 0; i < p.fusion.groups.size(); i++) {
            CHECK(p.budget.program.at(i));
            CHECK(p.schedules[i].spec.program);
            CHECK(p.schedules[i].provenance == ScheduleProvenance::CompileBudget);
            const CompiledKernel &k = *program.groups()[i].kernel;
            REQUIRE(k.program() != nullptr);
            CHECK(k.variants().size() == 1);
            CHECK(k.variants()[0].label == "elementwise program");
            values += p.fusion.groups[i].nodes.size();
            registers += k.program()->register_count;
        }
        CHECK(registers >= 1);
        CHECK(values >= 28);

        dsl::RunOptions ro;
        ro.symbol_sizes = sizes;
        const std::map<std::string, dsl::Tensor> inputs = special_inputs(p.graph, sizes);
        const dsl::RunResult ref = dsl::interpret(p.graph, inputs, ro);
        CHECK(testing::bits_apart(program.run(inputs, sizes), ref.outputs) == 0);
    }
}

TEST_CASE("elementwise programs: the text form, the checks at the call, and the groups that cannot be one") {
    const char *text = R"(graph small {
  %x = input : f32[M, 8]
  %b = input : f32[8]
  %y = (%x * 2.0 + %b) * %x
  output %y
}
)";
    const PlannedProgram p = planned(text, {{"M", 3}}, 0);
    const CompiledGraph program(p.graph, p.fusion, Halide::get_host_target(), p.chooser(), KernelBackend::Jit);
    const CompiledKernel &k = *program.groups()[0].kernel;
    REQUIRE(k.program());
    CHECK(k.program()->to_string() == "program " + k.group().name +
                                          " (x, b -> y): 3 registers\n"
                                          "  r0 = x\n"
                                          "  r1 = b\n"
                                          "  r2 = const 2\n"
                                          "  r2 = mul r0, r2\n"
                                          "  r2 = add r2, r1\n"
                                          "  r2 = mul r2, r0\n"
                                          "  y = r2\n");
    // The kernel's checks first (shape against the graph), then the runtime's (its own).
    Halide::Buffer<float> x(8, 3), b(7), y(8, 3);
    CHECK_THROWS_WITH_AS(k.run({x.raw_buffer(), b.raw_buffer(), y.raw_buffer()}),
                         doctest::Contains("argument 'b' (input) has shape [7]"), CompileError);
    const tessel_program view = k.program()->view();
    char error[256] = "";
    Halide::Buffer<float> b3(3);
    std::vector<halide_buffer_t *> buffers = {x.raw_buffer(), b3.raw_buffer(), y.raw_buffer()};
    CHECK(tessel_program_run(&view, buffers.data(), error, sizeof error) == -1);
    CHECK(std::string(error).find("argument 1 has extents [3]") != std::string::npos);
    Halide::Buffer<int32_t> wrong_type(8);
    buffers[1] = wrong_type.raw_buffer();
    CHECK(tessel_program_run(&view, buffers.data(), error, sizeof error) == -1);
    CHECK(std::string(error).find("not a float32 buffer") != std::string::npos);
    // A corrupt program (a library's tables are data) is refused before it reads or writes.
    std::vector<tessel_program_step> steps = k.program()->steps;
    steps[1].a = 99;
    tessel_program corrupt = view;
    corrupt.steps = steps.data();
    buffers[1] = b.raw_buffer();
    CHECK(tessel_program_run(&corrupt, buffers.data(), error, sizeof error) == -1);
    CHECK(std::string(error).find("step 1 is malformed") != std::string::npos);
    steps = k.program()->steps;
    steps[0].op = TESSEL_PROGRAM_OP_COUNT;
    CHECK(tessel_program_run(&corrupt, buffers.data(), error, sizeof error) == -1);
    CHECK(tessel_program_run(nullptr, buffers.data(), error, sizeof error) == -1);

    // Not programs: a contraction, a reduction, a narrow type; each says why.
    const PlannedProgram mm = planned(R"(graph mm {
  %x = input : f32[M, 8]
  %w = input : f32[8, 8]
  %r = reduce_sum(%x, axes=[1])
  %h = cast(%x) : bf16[M, 8]
  %y = matmul(%x, %w)
  output %y, %r, %h
}
)",
                                      {{"M", 2}}, 0);
    std::string why;
    for (const dsl::FusionGroup &group : mm.fusion.groups)
        if (auto refusal = lower::program_refusal(mm.graph, group)) why += *refusal + "\n";
    INFO(why);
    CHECK(why.find("a matmul+epilogue group") != std::string::npos);
    CHECK(why.find("a reduction group") != std::string::npos);
    CHECK(why.find("is bf16 (programs are f32)") != std::string::npos);
    for (bool program : mm.budget.program) CHECK_FALSE(program);
}

TEST_CASE("the compile budget: the codes with the most work are compiled, the rest run as programs, with the reason") {
    const std::string text = distinct_chains(6);
    // 7 codes: the matmul and 6 chains. A budget of 3: the matmul, then the two chains with the most work.
    const PlannedProgram p = planned(text, {{"M", 5}}, 3);
    INFO(p.to_string());
    CHECK(p.budget.codes == 7);
    CHECK(p.budget.compiled_codes == 3);
    CHECK(p.budget.summary.find("7 distinct kernels, over the budget of 3") != std::string::npos);
    size_t programs = 0;
    for (size_t i = 0; i < p.fusion.groups.size(); i++) {
        const std::string &name = p.fusion.groups[i].name;
        CAPTURE(name);
        const bool longest = name.find("c5_") != std::string::npos || name.find("c4_") != std::string::npos;
        const bool matmul = p.fusion.groups[i].kind == dsl::GroupKind::MatmulEpilogue;
        CHECK(p.budget.program[i] == (!longest && !matmul));
        CHECK(p.schedules[i].spec.program == p.budget.program[i]);
        if (p.budget.program[i]) {
            programs++;
            CHECK(p.schedules[i].reason.find("exceed the compile budget of 3 (--max-kernels)") != std::string::npos);
        }
    }
    CHECK(programs == 4);
    CHECK(p.to_string().find("compile budget: 7 distinct kernels") != std::string::npos);

    // Within the budget, or without one: nothing changes.
    CHECK(planned(text, {{"M", 5}}, 7).budget.summary.empty());
    const PlannedProgram unlimited = planned(text, {{"M", 5}}, -1);
    for (bool program : unlimited.budget.program) CHECK_FALSE(program);

    // The planned program runs: compiled groups and programs side by side, as the interpreter.
    const CompiledGraph program(p.graph, p.fusion, Halide::get_host_target(), p.chooser(), KernelBackend::JitOnFirstUse);
    dsl::RunOptions ro;
    ro.symbol_sizes = {{"M", 5}};
    const std::map<std::string, dsl::Tensor> inputs = special_inputs(p.graph, {{"M", 5}});
    const dsl::RunResult ref = dsl::interpret(p.graph, inputs, ro);
    const std::vector<dsl::Tensor> got = program.run(inputs, {{"M", 5}});
    // The programs' outputs are the interpreter's bits; the matmul (output 0) is compared elsewhere.
    CHECK(testing::bits_apart({got.begin() + 1, got.end()}, {ref.outputs.begin() + 1, ref.outputs.end()}) == 0);
}

TEST_CASE("tessel compile --emit lib and tessel lib: programs link beside compiled kernels and compute the same") {
    const tessel::testing::TempDir tmp;
    GraphCompileOptions o;
    o.file = tmp.file("chains.tsl");
    std::ofstream(o.file) << distinct_chains(3);
    o.out_dir = tmp.file("out");
    o.db = tmp.file("tuning.db");
    o.symbols = {{"M", 4}};
    o.max_compiled_kernels = 2;  // the matmul and chain 2 compiled; chains 0 and 1 programs
    std::ostringstream said;
    REQUIRE(compile_graph(o, said) == 0);
    INFO(said.str());
    CHECK(said.str().find("compile budget: 4 distinct kernels, over the budget of 2") != std::string::npos);
    std::string c0, c1;
    for (const fs::directory_entry &e : fs::directory_iterator(o.out_dir)) {
        const std::string stem = e.path().stem().string();
        if (e.path().extension() != ".h") continue;
        if (stem.find("c0_1") != std::string::npos) c0 = stem;
        if (stem.find("c1_2") != std::string::npos) c1 = stem;
    }
    REQUIRE(!c0.empty());
    REQUIRE(!c1.empty());
    std::ifstream header(fs::path(o.out_dir) / (c0 + ".h"));
    const std::string header_text((std::istreambuf_iterator<char>(header)), std::istreambuf_iterator<char>());
    CHECK(header_text.find("an elementwise program") != std::string::npos);

    // A C caller: c0_1 = (x * 2) op x, c1_2 = ((x * 3) op x) op x; special values included; and a
    // wrong shape is an error code with the runtime's message, never a crash.
    const fs::path main = fs::path(o.out_dir) / "main.c", exe = fs::path(o.out_dir) / "main";
    std::ofstream m(main);
    m << "#include \"HalideRuntime.h\"\n#include <math.h>\n#include <stdio.h>\n#include <string.h>\n#include \"" << c0
      << ".h\"\n#include \"" << c1 << ".h\"\n";
    m << R"(static halide_buffer_t buffer(float *p, int rows, halide_dimension_t *d) {
    halide_buffer_t t; memset(&t, 0, sizeof t);
    t.type.code = halide_type_float; t.type.bits = 32; t.type.lanes = 1;
    t.host = (uint8_t *)p; t.dimensions = 2; t.dim = d;
    d[0].min = 0; d[0].extent = 16; d[0].stride = 1; d[0].flags = 0;
    d[1].min = 0; d[1].extent = rows; d[1].stride = 16; d[1].flags = 0;
    return t;
}
static float fmax_nan(float a, float b) { return isnan(a) || isnan(b) ? NAN : (a == b ? (signbit(a) ? b : a) : (a > b ? a : b)); }
int main(void) {
    static float x[64], y0[64], y1[64];
    halide_dimension_t dx[2], d0[2], d1[2];
    int bad = 0, i;
    for (i = 0; i < 64; i++) x[i] = 0.37f * (float)(i % 11) - 1.5f;
    x[3] = NAN; x[5] = INFINITY; x[7] = -0.0f;
    halide_buffer_t bx = buffer(x, 4, dx), b0 = buffer(y0, 4, d0), b1 = buffer(y1, 4, d1);
    tessel_install_error_recorder();
)";
    m << "    if (" << c0 << "(&bx, &b0) != 0 || " << c1
      << "(&bx, &b1) != 0) { printf(\"failed: %s\\n\", tessel_last_error()); return 1; }\n";
    // distinct_chains: chain c, step i applies steps[(c + i) % 5]: c0_1 is steps[1] (-), c1_1 steps[2] (*), c1_2 steps[3] (max).
    m << R"(    for (i = 0; i < 64; i++) {
        const float w0 = x[i] * 2.0f - x[i], w1 = fmax_nan(x[i] * 3.0f * x[i], x[i]);
        if (memcmp(&w0, &y0[i], 4) && !(isnan(w0) && isnan(y0[i]))) bad++;
        if (memcmp(&w1, &y1[i], 4) && !(isnan(w1) && isnan(y1[i]))) bad++;
    }
    d0[0].extent = 15;
)";
    m << "    const int rc = " << c0 << "(&bx, &b0);\n";
    m << R"(    printf("wrong width: rc %d (%s); %d wrong values\n", rc, tessel_last_error(), bad);
    return bad != 0 || rc == 0;
}
)";
    m.close();
    const std::string printed = tessel::testing::link_and_run(main.string(), o.out_dir, o.out_dir + "/chains.a", exe.string());
    CHECK(printed.find("wrong width: rc -1") != std::string::npos);
    CHECK(printed.find("0 wrong values") != std::string::npos);

    // Nine arguments: the named entry takes the seventh on from the stack; _argv from its array.
    GraphCompileOptions wide = o;
    wide.file = tmp.file("wide.tsl");
    std::ofstream(wide.file)
        << "graph wide {\n  %a = input : f32[5]\n  %b = input : f32[5]\n  %c = input : f32[5]\n"
           "  %d = input : f32[5]\n  %e = input : f32[5]\n  %f = input : f32[5]\n  %g = input : f32[5]\n"
           "  %h = input : f32[5]\n  %y = %a + 2.0 * %b + 3.0 * %c + 4.0 * %d + 5.0 * %e + 6.0 * %f + 7.0 * %g + "
           "8.0 * %h\n  output %y\n}\n";
    wide.out_dir = tmp.file("wide");
    wide.symbols = {};
    wide.max_compiled_kernels = 0;
    std::ostringstream wide_said;
    REQUIRE(compile_graph(wide, wide_said) == 0);
    // The arguments' order is the kernel's (the header's comment names it); a's weight is 1 ... h's 8.
    std::ifstream wide_header(fs::path(wide.out_dir) / "g0_y.h");
    const std::string wide_text((std::istreambuf_iterator<char>(wide_header)), std::istreambuf_iterator<char>());
    const size_t open = wide_text.find("program g0_y (");
    REQUIRE(open != std::string::npos);
    std::string weights;
    for (size_t at = open + 14; wide_text[at] != '-'; at += 3) weights += std::to_string(wide_text[at] - 'a' + 1) + ".0f, ";
    const fs::path wide_main = fs::path(wide.out_dir) / "main.c", wide_exe = fs::path(wide.out_dir) / "main";
    std::ofstream w(wide_main);
    w << "static const float weight[8] = {" << weights << "};\n";
    w << R"(#include "HalideRuntime.h"
#include <stdio.h>
#include <string.h>
#include "g0_y.h"
int main(void) {
    static float v[9][5];
    halide_dimension_t d[9];
    halide_buffer_t b[9];
    void *args[9];
    int k, i, bad = 0;
    for (k = 0; k < 9; k++) {
        for (i = 0; i < 5; i++) v[k][i] = k < 8 ? (float)(k * 10 + i) : -1.0f;
        memset(&b[k], 0, sizeof b[k]);
        b[k].type.code = halide_type_float; b[k].type.bits = 32; b[k].type.lanes = 1;
        b[k].host = (uint8_t *)v[k]; b[k].dimensions = 1; b[k].dim = &d[k];
        d[k].min = 0; d[k].extent = 5; d[k].stride = 1; d[k].flags = 0;
        args[k] = &b[k];
    }
    tessel_install_error_recorder();
    if (g0_y(&b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7], &b[8]) != 0) { printf("%s\n", tessel_last_error()); return 1; }
    for (i = 0; i < 5; i++) {
        float want = 0;
        for (k = 0; k < 8; k++) want += weight[k] * v[k][i];
        bad += v[8][i] != want;
        v[8][i] = -1.0f;
    }
    if (g0_y_argv(args) != 0) { printf("%s\n", tessel_last_error()); return 1; }
    for (i = 0; i < 5; i++) bad += v[8][i] == -1.0f;
    d[7].extent = 4; /* the eighth input too short: refused, nothing written */
    const int rc = g0_y(&b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7], &b[8]);
    printf("short: rc %d (%s); %d wrong\n", rc, tessel_last_error(), bad);
    return bad != 0;
}
)";
    w.close();
    const std::string wide_printed =
        tessel::testing::link_and_run(wide_main.string(), wide.out_dir, wide.out_dir + "/wide.a", wide_exe.string());
    CHECK(wide_printed.find("short: rc -1 (g0_y: argument 7 has extents [4]") != std::string::npos);
    CHECK(wide_printed.find("; 0 wrong") != std::string::npos);

    // tessel lib: the whole-graph entry dispatches programs like kernels.
    KernelLibraryOptions lo;
    lo.file = o.file;
    lo.out_dir = tmp.file("lib");
    lo.db = "";
    lo.symbols = {{"M", 4}};
    lo.max_compiled_kernels = 2;
    std::ostringstream lib_said;
    REQUIRE(write_kernel_library(lo, lib_said) == 0);
    INFO(lib_said.str());
    CHECK(lib_said.str().find("compile budget: 4 distinct kernels") != std::string::npos);
    const fs::path entry = fs::path(lo.out_dir) / "main.c", entry_exe = fs::path(lo.out_dir) / "main";
    std::ofstream e(entry);
    e << R"(#include "chains.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
static halide_buffer_t buffer(float *p, int rows, int cols, halide_dimension_t *d) {
    halide_buffer_t t; memset(&t, 0, sizeof t);
    t.type.code = halide_type_float; t.type.bits = 32; t.type.lanes = 1;
    t.host = (uint8_t *)p; t.dimensions = 2; t.dim = d;
    d[0].min = 0; d[0].extent = cols; d[0].stride = 1; d[0].flags = 0;
    d[1].min = 0; d[1].extent = rows; d[1].stride = cols; d[1].flags = 0;
    return t;
}
int main(void) {
    static float x[64], w[256], mm[64], c0[64], c1[64], c2[64];
    halide_dimension_t d[6][2];
    int i, bad = 0;
    for (i = 0; i < 64; i++) x[i] = 0.25f * (float)(i % 9) - 1.0f;
    for (i = 0; i < 256; i++) w[i] = (i % 17 == 0) ? 1.0f : 0.0f;
    halide_buffer_t bx = buffer(x, 4, 16, d[0]), bw = buffer(w, 16, 16, d[1]), bm = buffer(mm, 4, 16, d[2]),
                    b0 = buffer(c0, 4, 16, d[3]), b1 = buffer(c1, 4, 16, d[4]), b2 = buffer(c2, 4, 16, d[5]);
    const int rc = chains(&bx, &bw, &bm, &b0, &b1, &b2, NULL, 0);
    if (rc != 0) { printf("failed %d: %s\n", rc, chains_error()); return 1; }
    for (i = 0; i < 64; i++) {
        const float w0 = x[i] * 2.0f - x[i], w1 = fmaxf(x[i] * 3.0f * x[i], x[i]);
        bad += w0 != c0[i];
        bad += w1 != c1[i];
    }
    printf("variants: %s; %d wrong values\n", chains_variants(), bad);
    return bad != 0;
}
)";
    e.close();
    const SubprocessResult linked =
        run_subprocess({"cc", entry.string(), "-I" + lo.out_dir, (fs::path(lo.out_dir) / "libchains.a").string(), "-lgomp",
                        "-lpthread", "-ldl", "-lm", "-o", entry_exe.string()},
                       {300});
    INFO(linked.output);
    REQUIRE(linked.ok());
    const SubprocessResult ran = run_subprocess({entry_exe.string()}, {60});
    INFO(ran.output);
    CHECK(ran.ok());
    CHECK(ran.output.find("elementwise program") != std::string::npos);
}
