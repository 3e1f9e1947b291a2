#include "codegen/ProgramFunctions.h"

#include "codegen/RuntimeSourcesText.h"
#include "support/Subprocess.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>
#include <thread>

namespace tessel {

namespace fs = std::filesystem;

namespace {

/** Functions per C file: the compiler's fixed cost is paid per file, and files compile in parallel. */
constexpr size_t kFunctionsPerFile = 1024;

std::string runtime_text(const char *name) {
    for (const auto &f : kRuntimeSources)
        if (!std::strcmp(f.name, name)) return f.text;
    throw CompileError(std::string("the runtime's ") + name + " is not embedded in this build");
}

std::string header(const AotFunction &f) {
    std::ostringstream h;
    h << "/* " << f.name << ": an elementwise program. No code was generated for it: Tessel's runtime interprets\n"
      << " * its steps (the reference interpreter's numerics), from the data of the library.\n";
    std::istringstream lines(f.c_comment);
    for (std::string line; std::getline(lines, line);) h << " *   " << line << "\n";
    h << " */\n#ifndef TESSEL_PROGRAM_FUNCTION_" << f.name << "_H\n#define TESSEL_PROGRAM_FUNCTION_" << f.name
      << "_H\n#include <stdint.h>\nstruct halide_buffer_t;\n#ifdef __cplusplus\nextern \"C\" {\n#endif\nint " << f.name << "(";
    for (size_t i = 0; i < f.c_parameters.size(); i++) h << (i ? ", " : "") << "struct halide_buffer_t *" << f.c_parameters[i];
    h << ");\nint " << f.name << "_argv(void **args);\n#ifdef __cplusplus\n}  // extern \"C\"\n#endif\n#endif\n";
    return h.str() + aot_error_recorder_section(f.name);
}

std::string file_prelude() {
    std::ostringstream c;
    c << "/* Elementwise programs, written by Tessel (codegen/ProgramFunctions.h). */\n"
      << "#include \"tessel_runtime.h\"\n#include <HalideRuntime.h>\n\n"
      << "static int " << kProgramReport << "(const tessel_program *program, struct halide_buffer_t *const *buffers) {\n"
      << "    char error[512];\n"
      << "    if (tessel_program_run(program, buffers, error, sizeof error) == 0) return 0;\n"
      << "    halide_error(NULL, error);\n"
      << "    return halide_error_code_generic_error;\n}\n\n";
    return c.str();
}

void compile_c(const fs::path &source, const fs::path &object, const fs::path &work) {
    const std::vector<std::string> argv = {TESSEL_CC,
                                           "-std=c11",
                                           "-O2",
                                           "-fPIC",
                                           "-c",
                                           source.string(),
                                           "-I" + work.string(),
                                           std::string("-I") + TESSEL_HALIDE_INCLUDE_DIR,
                                           "-o",
                                           object.string()};
    if (const SubprocessResult r = run_subprocess(argv); !r.ok())
        throw CompileError("compiling elementwise programs failed: " + format_command(argv) + "\n" + r.output);
}

}  // namespace

ProgramObjects compile_program_functions(const std::vector<AotFunction> &functions, const fs::path &dir, const fs::path &work,
                                         const std::string &prefix, int threads) {
    std::vector<const AotFunction *> programs;
    for (const AotFunction &f : functions)
        if (!f.c_source.empty()) programs.push_back(&f);
    ProgramObjects result;
    if (programs.empty()) return result;
    fs::create_directories(dir);
    fs::create_directories(work);
    std::ofstream(work / "tessel_runtime.h") << runtime_text("tessel_runtime.h");
    std::ofstream(work / (prefix + "tessel_program.c")) << runtime_text("tessel_program.c");
    for (const AotFunction *f : programs) {
        result.headers.push_back(dir / (f->name + ".h"));
        std::ofstream h(result.headers.back());
        h << header(*f);
        if (!h) throw CompileError("cannot write " + result.headers.back().string());
    }
    std::vector<std::pair<fs::path, fs::path>> jobs = {
        {work / (prefix + "tessel_program.c"), work / (prefix + "tessel_program.o")}};
    for (size_t first = 0, k = 0; first < programs.size(); first += kFunctionsPerFile, k++) {
        const fs::path source = work / (prefix + "programs" + std::to_string(k) + ".c");
        std::ofstream c(source);
        c << file_prelude();
        for (size_t i = first; i < std::min(programs.size(), first + kFunctionsPerFile); i++) c << programs[i]->c_source << "\n";
        if (!c) throw CompileError("cannot write " + source.string());
        jobs.push_back({source, work / (prefix + "programs" + std::to_string(k) + ".o")});
    }
    std::atomic<size_t> next{0};
    std::vector<std::exception_ptr> errors(jobs.size());
    auto worker = [&] {
        for (size_t j; (j = next++) < jobs.size();) try {
                compile_c(jobs[j].first, jobs[j].second, work);
            } catch (...) {
                errors[j] = std::current_exception();
            }
    };
    const int n = std::max(1, std::min<int>(threads > 0 ? threads : (int)std::thread::hardware_concurrency(), (int)jobs.size()));
    std::vector<std::thread> pool;
    for (int t = 1; t < n; t++) pool.emplace_back(worker);
    worker();
    for (std::thread &t : pool) t.join();
    for (const std::exception_ptr &e : errors)
        if (e) std::rethrow_exception(e);
    for (size_t j = 1; j < jobs.size(); j++) result.objects.push_back(jobs[j].second);
    result.objects.push_back(jobs.front().second);
    return result;
}

}  // namespace tessel
