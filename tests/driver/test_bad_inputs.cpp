// The built `tessel` binary against a table of bad inputs: malformed, truncated, empty and binary
// graph files, very deep expressions, huge, zero and negative extents, bad --dim values and
// unknown symbols, invalid schedule files of every kind, bad targets and unwritable outputs.
// Each row states the exit code and a substring of the message that names what and where. A
// signal (crash), a timeout (hang) or an exit 0 where an error is expected fails the row.
#include "tests/TempDir.h"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Outcome {
    bool exited = false;  ///< false: killed by a signal (a crash, or the timeout)
    int code = -1;        ///< exit code, or the signal
    std::string output;   ///< stdout and stderr together
};

/** Runs `tessel args...` in `dir` under a wall-clock limit (coreutils timeout, SIGKILL). */
Outcome run_tessel(const std::vector<std::string> &args, const std::string &dir, int limit_s = 120) {
    const std::string log = dir + "/out.log";
    std::vector<std::string> argv = {"timeout", "-s", "KILL", std::to_string(limit_s), TESSEL_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_t pid = fork();
    if (pid == 0) {
        if (chdir(dir.c_str()) != 0) _exit(127);
        int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        std::vector<char *> c;
        for (auto &a : argv) c.push_back(a.data());
        c.push_back(nullptr);
        execvp("timeout", c.data());
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    Outcome o;
    // timeout exits 137 (128 + SIGKILL) when it killed the command, 128 + n when it died of n.
    o.exited = WIFEXITED(status) && WEXITSTATUS(status) < 124;
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream in(log);
    std::stringstream ss;
    ss << in.rdbuf();
    o.output = ss.str();
    return o;
}

void write(const std::string &path, const std::string &text) { std::ofstream(path, std::ios::binary) << text; }

std::string nested(const std::string &open, const std::string &close, int depth) {
    std::string s = "graph deep {\n  %x = input : f32[4]\n  %y = ";
    for (int i = 0; i < depth; i++) s += open;
    s += "relu(%x)";
    for (int i = 0; i < depth; i++) s += close;
    return s + "\n  output %y\n}\n";
}

// A small graph with one matmul+epilogue group (stages matmul and y) and symbols M, K.
const char *kMatmul =
    "graph mm {\n  %x = input : f32[M, K]\n  %w = input : f32[K, 32]\n  %b = input : f32[32]\n"
    "  %y = relu(matmul(%x, %w) + %b)\n  output %y\n}\n";

std::string schedule_with(const std::string &steps) {
    return "{\"name\": \"bad\", \"device\": \"cpu\", \"group\": \"matmul+epilogue\", \"steps\": [" + steps + "]}";
}
std::string split_step(const std::string &func, const std::string &var, const std::string &factor) {
    return "{\"op\": \"split\", \"stage\": {\"func\": \"" + func + "\", \"update\": -1}, \"var\": \"" + var +
           "\", \"outer\": \"no\", \"inner\": \"ni\", \"factor\": " + factor + ", \"tail\": \"auto\"}";
}

struct Case {
    const char *name;
    std::string graph;     ///< written to g.tsl (unless empty and `args` names another file)
    std::string schedule;  ///< written to s.json when not empty
    std::vector<std::string> args;
    int code;             ///< expected exit code
    std::string message;  ///< substring of the output
};

/** A tuning-database export of one record whose key holds `space_version` (a JSON member,
 * possibly misspelt or mistyped), with `samples` and `schedule` as given. */
std::string import_with(const std::string &space_version, const std::string &samples = "[]",
                        const std::string &schedule = R"({"name": "x", "steps": []})") {
    return R"({"format": "tessel-tuning-db", "schema_version": 1, "records": [{"cost_model_version": "analytical-1",
      "created_unix": 1796543876, "key": {"group_hash": "ecde3376e5fbf45c79c7152994c7d7e2", "halide_version": "21.0.0",
      "numeric_mode": "fast", "schema_version": 1, "shape_class": "rows", "shapes": "T=2048", )" +
           space_version + R"(, "target": "x86-64-linux-avx-avx2-f16c-fma-sse41", "tessel_version": "0.1.0"},
      "measured_by": "model", "median_ms": 0.07, "notes": "", "samples": )" +
           samples + R"(, "schedule": )" + schedule + "}]}";
}

std::vector<Case> cases() {
    const std::string ok = kMatmul;
    const std::string g = "g.tsl", s = "s.json";
    std::vector<Case> c = {
        // ---- malformed, truncated, empty and binary files ----
        {"empty file", "", "", {"simplify", g}, 1, "g.tsl:1:1: error: expected 'graph', got end of file"},
        {"only whitespace and comments", "  \n# nothing\n\n", "", {"simplify", g}, 1, "g.tsl:4:1: error: expected 'graph'"},
        {"ELF binary",
         std::string("\x7f"
                     "ELF\x02\x01\x01\0\0\0",
                     10),
         "",
         {"simplify", g},
         1,
         "g.tsl:1:1: error: unexpected character '\\x7f'"},
        {"NUL bytes",
         std::string("graph g {\0\0", 11),
         "",
         {"simplify", g},
         1,
         "g.tsl:1:10: error: unexpected character '\\x00' (is this a binary file?)"},
        {"0xFF bytes", "\xff\xfe\xfd", "", {"compile", g}, 1, "g.tsl:1:1: error: unexpected character '\\xff'"},
        {"truncated in a type",
         "graph g {\n  %x = input : f32[4",
         "",
         {"simplify", g},
         1,
         "g.tsl:2:21: error: expected ',' or ']' in shape, got end of file"},
        {"truncated in a call",
         "graph g {\n  %x = input : f32[4]\n  %y = relu(%x",
         "",
         {"run", g},
         1,
         "g.tsl:3:15: error: expected ',' or ')' in call to 'relu', got end of file"},
        {"missing closing brace",
         "graph g {\n  %x = input : f32[4]\n  output %x\n",
         "",
         {"simplify", g},
         1,
         "g.tsl:4:1: error: expected '}' to close graph 'g'"},
        {"trailing text",
         "graph g {\n  %x = input : f32[4]\n  output %x\n}\nextra\n",
         "",
         {"simplify", g},
         1,
         "g.tsl:5:1: error: expected end of file after '}', got 'extra'"},
        {"no output",
         "graph g {\n  %x = input : f32[4]\n}\n",
         "",
         {"compile", g},
         1,
         "g.tsl:3:1: error: graph 'g' has no output"},
        {"unknown op",
         "graph g {\n  %x = input : f32[4]\n  %y = frob(%x)\n  output %y\n}\n",
         "",
         {"simplify", g},
         1,
         "g.tsl:3:8: error: unknown op 'frob'"},
        {"undefined value",
         "graph g {\n  %y = relu(%z)\n  output %y\n}\n",
         "",
         {"simplify", g},
         1,
         "g.tsl:2:13: error: use of undefined value %z"},
        {"unterminated string",
         "graph g {\n  %x = input : f32[4]\n  print(%x, label=\"abc\n}\n",
         "",
         {"simplify", g},
         1,
         "g.tsl:3:19: error: unterminated string"},
        {"control bytes in a string are escaped",
         "graph g {\n  %x = input : f32[4]\n  %y = relu(%x, \"\x1b[2J\x01\")\n}\n",
         "",
         {"simplify", g},
         1,
         "got string \"\\x1b[2J\\x01\""},
        {"a directory", "", "", {"simplify", "."}, 1, ".: error: is a directory, not a graph file"},
        {"a missing file", "", "", {"simplify", "nope.tsl"}, 1, "nope.tsl: error: cannot open file"},
        {"a missing file for compile", "", "", {"compile", "nope.tsl"}, 105, "nope.tsl"},
        // ---- very deep expressions ----
        {"100,000 nested calls",
         nested("relu(", ")", 100000),
         "",
         {"simplify", g},
         1,
         "g.tsl:3:1288: error: expression nested too deeply (more than 256 levels"},
        {"100,000 nested parentheses",
         nested("(", ")", 100000),
         "",
         {"simplify", g},
         1,
         "g.tsl:3:264: error: expression nested too deeply"},
        {"100,000 unary minus", nested("-", "", 100000), "", {"run", g}, 1, "g.tsl:3:264: error: expression nested too deeply"},
        // ---- huge, zero and negative extents ----
        {"an extent past 2^64",
         "graph g {\n  %x = input : f32[99999999999999999999]\n  output %x\n}\n",
         "",
         {"simplify", g},
         1,
         "g.tsl:2:20: error: extent 99999999999999999999 is too large (at most 2^62"},
        {"an extent past 2^62",
         "graph g {\n  %x = input : f32[4611686018427387905]\n  output %x\n}\n",
         "",
         {"simplify", g},
         1,
         "g.tsl:2:20: error: extent 4611686018427387905 is too large"},
        {"a zero extent",
         "graph g {\n  %x = input : f32[4, 0]\n  output %x\n}\n",
         "",
         {"run", g},
         1,
         "g.tsl:2:23: error: extent 0 is not positive"},
        {"a negative extent",
         "graph g {\n  %x = input : f32[-4]\n  output %x\n}\n",
         "",
         {"compile", g},
         1,
         "g.tsl:2:20: error: extent -4 is not positive"},
        {"an inexact integer literal",
         "graph g {\n  %n = 9007199254740993\n  output %n\n}\n",
         "",
         {"simplify", g},
         1,
         "g.tsl:2:8: error: integer literal 9007199254740993 is out of range for i64"},
        {"shape code that overflows",
         "graph g {\n  %a = 4294967296\n  %b = %a * %a\n  %x = input : f32[%b]\n  output %x\n}\n",
         "",
         {"simplify", g},
         1,
         "g.tsl:3:11: error: %b = shape.mul(%a, %a) : i64[] always fails at run time: shape.mul: 4294967296 * 4294967296 overflows 64 bits"},
        {"shape code that computes a negative extent",
         "graph g {\n  %k = 2 - 10\n  %x = input : f32[%k]\n  output %x\n}\n",
         "",
         {"simplify", g},
         1,
         "g.tsl:3:8: error: input: dimension %k (shape.sub(%0, %1)) evaluates to -8"},
        {"a 2^40-element input at run time",
         "graph g {\n  %x = input : f32[1099511627776]\n  %y = relu(%x)\n  output %y\n}\n",
         "",
         {"run", g},
         1,
         "%x (input): f32[1099511627776] has more than 268435456 elements, the reference interpreter's limit"},
        {"a 2^40-element input from --dim",
         ok,
         "",
         {"run", g, "--dim", "M=1099511627776", "--dim", "K=1"},
         1,
         "%x (input): f32[1099511627776, 1] has more than 268435456 elements"},
        {"a negative extent from shape code at run time",
         "graph g {\n  %x = input : f32[M]\n  %m = shape_of(%x)[0]\n  %k = 2 - %m\n  %y = input : f32[%k]\n  output %y\n}\n",
         "",
         {"run", g, "--dim", "M=9"},
         1,
         "%y (input): dimension %k is -7 at run time; extents must be positive"},
        // ---- --dim values and symbols ----
        {"--dim for an unknown symbol (run)",
         ok,
         "",
         {"run", g, "--dim", "m=512"},
         1,
         "--dim m=512: graph 'mm' has no symbol 'm' (its symbols: K, M)"},
        {"--dim for an unknown symbol (compile)",
         ok,
         "",
         {"compile", g, "--dim", "M=8,N=4"},
         1,
         "--dim N=4: graph 'mm' has no symbol 'N' (its symbols: K, M)"},
        {"--dim on a graph without symbols",
         "graph g {\n  %x = input : f32[4]\n  output %x\n}\n",
         "",
         {"run", g, "--dim", "M=2"},
         1,
         "has no symbol 'M' (it has no symbols: every extent is static)"},
        {"--dim of zero", ok, "", {"run", g, "--dim", "M=0"}, 1, "--dim 'M=0': expected NAME=POSITIVE_INTEGER"},
        {"--dim negative", ok, "", {"run", g, "--dim", "M=-5"}, 1, "--dim 'M=-5': expected NAME=POSITIVE_INTEGER"},
        {"--dim not a number", ok, "", {"compile", g, "--dim", "M=abc"}, 1, "--dim 'M=abc': expected NAME=POSITIVE_INTEGER"},
        {"--dim without a name", ok, "", {"run", g, "--dim", "=5"}, 1, "--dim '=5': expected NAME=POSITIVE_INTEGER"},
        {"--dim past 2^64", ok, "", {"run", g, "--dim", "M=99999999999999999999"}, 1, "--dim 'M=99999999999999999999': expected"},
        {"--dim twice", ok, "", {"run", g, "--dim", "M=4,M=5"}, 1, "--dim 'M=5': expected NAME=POSITIVE_INTEGER (each name once"},
        // ---- schedule files ----
        {"schedule: not JSON",
         ok,
         "{\"name\": \"bad\", \"steps\": [",
         {"run", g, "--schedule", s},
         1,
         "--schedule s.json: s.json: [json.exception.parse_error"},
        {"schedule: empty file",
         ok,
         " ",
         {"compile", g, "--schedule", s},
         1,
         "--schedule s.json: s.json: [json.exception.parse_error"},
        {"schedule: not an object", ok, "[1, 2]", {"run", g, "--schedule", s}, 1, "s.json: schedule: expected a JSON object"},
        {"schedule: no steps", ok, "{\"name\": \"bad\"}", {"run", g, "--schedule", s}, 1, "schedule 'bad': missing \"steps\""},
        {"schedule: steps not an array",
         ok,
         "{\"name\": \"bad\", \"steps\": 3}",
         {"run", g, "--schedule", s},
         1,
         "schedule 'bad': \"steps\" must be an array"},
        {"schedule: unknown op",
         ok,
         schedule_with("{\"op\": \"frobnicate\"}"),
         {"run", g, "--schedule", s},
         1,
         "schedule 'bad' step 1: unknown op 'frobnicate'"},
        {"schedule: a field of the wrong type",
         ok,
         schedule_with(split_step("y", "n", "\"eight\"")),
         {"run", g, "--schedule", s},
         1,
         "schedule 'bad' step 1 (split): steps[0].factor: expected a number, found a string (\"eight\")"},
        {"schedule: a fractional factor",
         ok,
         schedule_with(split_step("y", "n", "2.5")),
         {"run", g, "--schedule", s},
         1,
         "schedule 'bad' step 1 (split): field \"factor\" = 2.5 is not an integer"},
        {"schedule: a factor of 2^40",
         ok,
         schedule_with(split_step("y", "n", "1099511627776")),
         {"run", g, "--schedule", s},
         1,
         "schedule 'bad' step 1 (split): field \"factor\" = 1099511627776 is out of range"},
        {"schedule: a guard value past 2^64",
         ok,
         "{\"name\": \"bad\", \"steps\": [], \"variants\": [{\"guards\": [{\"extent\": \"M\", \"op\": \"==\", \"value\": "
         "99999999999999999999}], \"steps\": []}]}",
         {"run", g, "--schedule", s},
         1,
         "schedule 'bad' variant 1 guards: field \"value\""},
        {"schedule: a tile of 0",
         ok,
         schedule_with(split_step("y", "n", "0")),
         {"run", g, "--schedule", s},
         1,
         "--schedule s.json does not apply to group g0_y [matmul+epilogue]: schedule 'bad': "},
        {"schedule: a negative tile",
         ok,
         schedule_with(split_step("y", "n", "-8")),
         {"compile", g, "--schedule", s},
         1,
         "split factor must be positive, got -8"},
        {"schedule: an unknown loop",
         ok,
         schedule_with(split_step("y", "q", "8")),
         {"run", g, "--schedule", s},
         1,
         "step 1 `y.split(q, no, ni, 8)`: no loop named 'q' in y"},
        {"schedule: an unknown func",
         ok,
         schedule_with(split_step("nosuch", "n", "8")),
         {"run", g, "--schedule", s},
         1,
         "no stage named 'nosuch'"},
        {"schedule: an elementwise program for a matmul group",
         ok,
         "{\"name\": \"prog\", \"group\": \"matmul+epilogue\", \"program\": true, \"steps\": []}",
         {"run", g, "--schedule", s},
         1,
         "g0_y cannot run as an elementwise program: a matmul+epilogue group (programs are elementwise)"},
        {"schedule: program of the wrong type",
         ok,
         "{\"name\": \"prog\", \"program\": \"yes\", \"steps\": []}",
         {"run", g, "--schedule", s},
         1,
         "program: expected a boolean, found a string (\"yes\")"},
        {"--max-kernels not a number", ok, "", {"compile", g, "--max-kernels", "many"}, 104, "--max-kernels"},
        {"schedule: an unknown group kind",
         ok,
         "{\"name\": \"bad\", \"group\": \"frob\", \"steps\": []}",
         {"run", g, "--schedule", s},
         1,
         "\"group\": unknown fusion group kind 'frob'"},
        {"schedule: a missing file", ok, "", {"run", g, "--schedule", "nope.json"}, 1, "cannot open schedule file 'nope.json'"},
        {"schedule: an unknown library name", ok, "", {"run", g, "--schedule", "no_such_schedule"}, 1, "no_such_schedule"},
        // ---- targets and outputs ----
        {"an invalid --target", ok, "", {"compile", g, "--target", "vax-vms"}, 1, "vax-vms"},
        {"a GPU --target for run",
         ok,
         "",
         {"run", g, "--target", "host-cuda"},
         1,
         "tessel run executes on the CPU; use a CPU target"},
        {"-o under a regular file", ok, "", {"compile", g, "-o", "g.tsl/out"}, 1, "g.tsl/out"},
        {"-o is a regular file", ok, "", {"compile", g, "-o", "g.tsl"}, 1, "g.tsl"},
        {"an unknown --emit kind", ok, "", {"compile", g, "--emit", "exe"}, 105, "--emit"},
        {"an unknown pass", ok, "", {"simplify", g, "--passes", "cse,frob"}, 1, "unknown pass 'frob' (passes: fold-constants"},
        {"an unknown --dump-after pass", ok, "", {"simplify", g, "--dump-after", "frob"}, 1, "--dump-after: unknown pass 'frob'"},
        {"--compile-budget not positive", ok, "", {"compile", g, "--compile-budget", "0"}, 105, "--compile-budget"},
        // ---- tuning database imports: the field's path, the expected and the found type ----
        {"db import: a key field of the wrong type",
         ok,
         import_with(R"("space_version": "9")"),
         {"db", "import", s, "--db", "t.db"},
         1,
         "import of 's.json': records[0].key.space_version: expected an integer, found a string (\"9\")"},
        {"db import: a fractional integer",
         ok,
         import_with(R"("space_version": 9.5)"),
         {"db", "import", s, "--db", "t.db"},
         1,
         "records[0].key.space_version: expected an integer, found a number (9.5)"},
        {"db import: an integer past int",
         ok,
         import_with(R"("space_version": 1099511627776)"),
         {"db", "import", s, "--db", "t.db"},
         1,
         "records[0].key.space_version: 1099511627776 is out of range (-2147483648 to 2147483647)"},
        {"db import: a sample that is not a number",
         ok,
         import_with(R"("space_version": 9)", R"(["fast"])"),
         {"db", "import", s, "--db", "t.db"},
         1,
         "records[0].samples[0]: expected a number, found a string (\"fast\")"},
        {"db import: a missing key field",
         ok,
         import_with(R"("space_versio": 9)"),
         {"db", "import", s, "--db", "t.db"},
         1,
         "records[0].key.space_version: missing"},
        {"db import: a schedule step of the wrong type",
         ok,
         import_with(R"("space_version": 9)", "[]", R"({"name": "x", "steps": [{"op": "split", "factor": "8"}]})"),
         {"db", "import", s, "--db", "t.db"},
         1,
         "records[0].schedule: "},
    };
    return c;
}

}  // namespace

TEST_CASE("bad inputs: every row exits with its code and names what and where; no crash, hang or silent success") {
    const std::vector<Case> table = cases();
    CHECK(table.size() >= 40);
    for (const Case &c : table) {
        SUBCASE(c.name) {
            tessel::testing::TempDir dir;
            write(dir.file("g.tsl"), c.graph);
            if (!c.schedule.empty()) write(dir.file("s.json"), c.schedule);
            const Outcome o = run_tessel(c.args, dir.dir.string());
            INFO("output: " << o.output);
            REQUIRE_MESSAGE(o.exited, "killed (crash or timeout), code " << o.code);
            CHECK(o.code == c.code);
            CHECK_MESSAGE(o.output.find(c.message) != std::string::npos, "expected: " << c.message);
            // Raw control bytes never reach the terminal.
            for (char ch : o.output) CHECK_MESSAGE(((unsigned char)ch >= 0x20 || ch == '\n' || ch == '\t'), "raw byte in output");
        }
    }
}

TEST_CASE("--schedule-fallback: the explicit opt-in to the default schedule where the file does not apply") {
    tessel::testing::TempDir dir;
    write(dir.file("g.tsl"), kMatmul);
    write(dir.file("s.json"), schedule_with(split_step("y", "n", "0")));
    const Outcome o =
        run_tessel({"run", "g.tsl", "--schedule", "s.json", "--schedule-fallback", "--dim", "M=8,K=16"}, dir.dir.string());
    INFO(o.output);
    REQUIRE(o.exited);
    CHECK(o.code == 0);
    CHECK(o.output.find("fell back to the default schedule") != std::string::npos);
    CHECK(o.output.find("split factor must be positive, got 0") != std::string::npos);
}
