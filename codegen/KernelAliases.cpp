// KernelAliases.h: header renaming and the thunks' assembly.
#include "codegen/KernelAliases.h"

#include "codegen/Compile.h"
#include "support/Subprocess.h"

#include <cctype>
#include <fstream>

#ifndef TESSEL_ASSEMBLER
#error "TESSEL_ASSEMBLER must be defined by codegen/CMakeLists.txt"
#endif

namespace tessel {

namespace fs = std::filesystem;

namespace {

bool identifier_char(char c) { return std::isalnum((unsigned char)c) || c == '_'; }

const char *const kSuffixes[] = {"", "_argv", "_metadata"};

}  // namespace

bool aliases_supported(const Halide::Target &target) { return target.arch == Halide::Target::X86 && target.bits == 64; }

std::string alias_header(const std::string &code_header, const KernelAlias &alias) {
    // Renames the identifiers f, f_argv and f_metadata, and the include guard's "_f_h".
    const std::string &f = alias.code;
    std::string out = "/* " + alias.name + " runs the code of " + alias.code +
                      " (the same group structure and schedule; its parameter names are " + alias.code + "'s) */\n";
    for (size_t i = 0; i < code_header.size();) {
        const bool starts = code_header.compare(i, f.size(), f) == 0 && (i == 0 || !std::isalnum((unsigned char)code_header[i - 1]));
        if (starts) {
            const size_t end = i + f.size();
            size_t word = end;
            while (word < code_header.size() && identifier_char(code_header[word])) word++;
            const std::string rest = code_header.substr(end, word - end);
            const bool guard = i > 0 && code_header[i - 1] == '_' && rest == "_h";
            const bool function = (i == 0 || !identifier_char(code_header[i - 1])) &&
                                  (rest.empty() || rest == "_argv" || rest == "_metadata");
            if (guard || function) {
                out += alias.name + rest;
                i = word;
                continue;
            }
        }
        out += code_header[i++];
    }
    return out;
}

fs::path assemble_alias_thunks(const std::vector<KernelAlias> &aliases, const fs::path &work) {
    const fs::path source = work / "aliases.s", object = work / "aliases.o";
    {
        std::ofstream s(source);
        s << "\t.text\n";
        for (const KernelAlias &a : aliases)
            for (const char *suffix : kSuffixes) {
                const std::string name = a.name + suffix, code = a.code + suffix;
                s << "\t.globl\t" << name << "\n\t.type\t" << name << ",@function\n\t.p2align\t4\n"
                  << name << ":\n\tjmp\t" << code << "@PLT\n\t.size\t" << name << ", .-" << name << "\n";
            }
        s << "\t.section\t.note.GNU-stack,\"\",@progbits\n";
        if (!s) throw CompileError("cannot write the kernel aliases' assembly to " + source.string());
    }
    const std::vector<std::string> argv = {TESSEL_ASSEMBLER, "-c", source.string(), "-o", object.string()};
    if (const SubprocessResult r = run_subprocess(argv); !r.ok())
        throw CompileError("assembling the kernel aliases failed: " + format_command(argv) + "\n" + r.output);
    return object;
}

}  // namespace tessel
