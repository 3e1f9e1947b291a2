#include "codegen/ProgramFunctions.h"

#include "codegen/AssemblyText.h"
#include "codegen/KernelAliases.h"
#include "codegen/RuntimeSourcesText.h"
#include "support/Subprocess.h"

#include <cstddef>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tessel {

namespace fs = std::filesystem;

namespace {

std::string runtime_text(const char *name) {
    for (const auto &f : kRuntimeSources)
        if (!std::strcmp(f.name, name)) return f.text;
    throw CompileError(std::string("the runtime's ") + name + " is not embedded in this build");
}

std::string header(const AotFunction &f) {
    const ProgramFunction &p = *f.program;
    std::ostringstream h;
    h << "/* " << f.name << ": an elementwise program. No code was generated for it: Tessel's runtime interprets\n"
      << " * its steps (the reference interpreter's numerics), from the data of the library.\n";
    std::istringstream lines(p.comment);
    for (std::string line; std::getline(lines, line);) h << " *   " << line << "\n";
    h << " */\n#ifndef TESSEL_PROGRAM_FUNCTION_" << f.name << "_H\n#define TESSEL_PROGRAM_FUNCTION_" << f.name
      << "_H\n#include <stdint.h>\nstruct halide_buffer_t;\n#ifdef __cplusplus\nextern \"C\" {\n#endif\nint " << f.name << "(";
    for (size_t i = 0; i < p.parameters.size(); i++) h << (i ? ", " : "") << "struct halide_buffer_t *" << p.parameters[i];
    h << ");\nint " << f.name << "_argv(void **args);\n#ifdef __cplusplus\n}  // extern \"C\"\n#endif\n#endif\n";
    return h.str() + aot_error_recorder_section(f.name);
}

uint32_t bits_of(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
}

/** The program as static data labelled `label` (a tessel_program), and its two entries. */
void write_function(std::ostream &s, const AotFunction &f, const std::string &label) {
    const ProgramFunction &p = *f.program;
    s << "\t.section\t.rodata\n" << label << ".name:\n\t.asciz\t\"" << f.name << "\"\n\t.p2align\t2\n" << label << ".steps:\n";
    for (const tessel_program_step &t : p.steps)
        assembly::StructData(sizeof(tessel_program_step))
            .field(offsetof(tessel_program_step, op), assembly::word(t.op), 4)
            .field(offsetof(tessel_program_step, result), assembly::word(t.result), 4)
            .field(offsetof(tessel_program_step, a), assembly::word(t.a), 4)
            .field(offsetof(tessel_program_step, b), assembly::word(t.b), 4)
            .field(offsetof(tessel_program_step, c), assembly::word(t.c), 4)
            .field(offsetof(tessel_program_step, value), assembly::word(bits_of(t.value)), 4)
            .write(s);
    s << label << ".outputs:\n";
    for (int32_t r : p.output_registers) s << "\t" << assembly::word(r) << "\n";
    s << "\t.section\t.data.rel.ro,\"aw\"\n\t.p2align\t3\n" << label << ":\n";
    assembly::StructData(sizeof(tessel_program))
        .field(offsetof(tessel_program, name), assembly::quad(label + ".name"), 8)
        .field(offsetof(tessel_program, input_count), assembly::word(p.input_count), 4)
        .field(offsetof(tessel_program, output_count), assembly::word(p.output_count), 4)
        .field(offsetof(tessel_program, register_count), assembly::word(p.register_count), 4)
        .field(offsetof(tessel_program, step_count), assembly::word((long)p.steps.size()), 4)
        .field(offsetof(tessel_program, steps), assembly::quad(label + ".steps"), 8)
        .field(offsetof(tessel_program, output_registers), assembly::quad(label + ".outputs"), 8)
        .write(s);

    // name(b0, ..., bn-1): the arguments into an array on the stack, the first six from their
    // registers, the rest from the caller's frame; rsp 16-aligned at the call.
    const size_t n = p.parameters.size(), frame = (8 * n + 15) / 16 * 16;
    assembly::function_start(s, f.name);
    s << "\tpushq\t%rbp\n\tmovq\t%rsp, %rbp\n\tsubq\t$" << frame << ", %rsp\n";
    for (size_t k = 0; k < n; k++) {
        if (k < 6) {
            s << "\tmovq\t" << assembly::kArgumentRegisters[k] << ", " << 8 * k << "(%rsp)\n";
        } else {
            s << "\tmovq\t" << 16 + 8 * (k - 6) << "(%rbp), %rax\n\tmovq\t%rax, " << 8 * k << "(%rsp)\n";
        }
    }
    s << "\tleaq\t" << label << "(%rip), %rdi\n\tmovq\t%rsp, %rsi\n\tcall\ttessel_program_call@PLT\n\tleave\n\tret\n";
    assembly::function_end(s, f.name);
    assembly::function_start(s, f.name + "_argv");
    s << "\tmovq\t%rdi, %rsi\n\tleaq\t" << label << "(%rip), %rdi\n\tjmp\ttessel_program_call@PLT\n";
    assembly::function_end(s, f.name + "_argv");
}

void run_tool(const std::vector<std::string> &argv, const std::string &what) {
    if (const SubprocessResult r = run_subprocess(argv); !r.ok())
        throw CompileError(what + " failed: " + format_command(argv) + "\n" + r.output);
}

}  // namespace

ProgramObjects compile_program_functions(const std::vector<AotFunction> &functions, const Halide::Target &target,
                                         const fs::path &dir, const fs::path &work, const std::string &prefix) {
    std::vector<const AotFunction *> programs;
    for (const AotFunction &f : functions)
        if (f.program) programs.push_back(&f);
    ProgramObjects result;
    if (programs.empty()) return result;
    if (!aliases_supported(target))
        throw CompileError("elementwise programs are written as x86-64 functions; " + target.to_string() + " is not x86-64");
    fs::create_directories(dir);
    fs::create_directories(work);
    for (const AotFunction *f : programs) {
        result.headers.push_back(dir / (f->name + ".h"));
        std::ofstream h(result.headers.back());
        h << header(*f);
        if (!h) throw CompileError("cannot write " + result.headers.back().string());
    }
    const fs::path source = work / (prefix + "programs.s");
    {
        std::ofstream s(source);
        for (size_t i = 0; i < programs.size(); i++) write_function(s, *programs[i], ".Lprogram" + std::to_string(i));
        s << "\t.section\t.note.GNU-stack,\"\",@progbits\n";
        if (!s) throw CompileError("cannot write the elementwise programs' assembly to " + source.string());
    }
    result.objects.push_back(work / (prefix + "programs.o"));
    assembly::assemble(source, result.objects.back(), "assembling the elementwise programs");
    // The interpreter and its library entry, optimized (they do the work).
    std::ofstream(work / "tessel_runtime.h") << runtime_text("tessel_runtime.h");
    for (const char *file : {"tessel_program.c", "tessel_program_call.c"}) {
        const fs::path c = work / (prefix + file);
        std::ofstream(c) << runtime_text(file);
        result.objects.push_back(work / (prefix + fs::path(file).stem().string() + ".o"));
        run_tool({TESSEL_CC, "-std=c11", "-O2", "-fPIC", "-c", c.string(), "-I" + work.string(),
                  std::string("-I") + TESSEL_HALIDE_INCLUDE_DIR, "-o", result.objects.back().string()},
                 "compiling the elementwise program interpreter");
    }
    return result;
}

}  // namespace tessel
