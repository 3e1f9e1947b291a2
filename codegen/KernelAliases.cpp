// KernelAliases.h: header renaming, and the thunks and metadata as assembly. Struct layouts come
// from HalideRuntime.h (offsetof, sizeof), so the static data matches the runtime Tessel builds
// against.
#include "codegen/KernelAliases.h"

#include "codegen/AssemblyText.h"
#include "codegen/Compile.h"

#include <cctype>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace tessel {

namespace fs = std::filesystem;

namespace {

using assembly::function_end;
using assembly::function_start;
using assembly::quad;
using assembly::StructData;
using assembly::word;

bool identifier_char(char c) { return std::isalnum((unsigned char)c) || c == '_'; }

const char *const *const kRegisters = assembly::kArgumentRegisters;

std::string type_directive(const Halide::Type &t) {
    std::ostringstream s;  // halide_type_t: code, bits, lanes
    s << ".byte\t" << (int)t.code() << ", " << t.bits() << "\n\t.short\t" << t.lanes();
    return s.str();
}

/** The alias's arguments: the code's without its constants argument. */
std::vector<Halide::Argument> own_arguments(const KernelAlias &a) {
    std::vector<Halide::Argument> args;
    for (size_t i = 0; i < a.code_arguments.size(); i++)
        if (a.constants.empty() || i != a.constants_argument) args.push_back(a.code_arguments[i]);
    return args;
}

/** `a` and `a_argv`, with the constants buffer `buffer` inserted where the code takes it. */
void write_calls(std::ostream &s, const KernelAlias &a, const std::string &buffer) {
    const size_t n = a.code_arguments.size(), at = a.constants_argument;
    function_start(s, a.name);
    if (!a.constants.empty()) {
        for (size_t j = n - 1; j > at; j--) s << "\tmovq\t" << kRegisters[j - 1] << ", " << kRegisters[j] << "\n";
        s << "\tleaq\t" << buffer << "(%rip), " << kRegisters[at] << "\n";
    }
    s << "\tjmp\t" << a.code << "@PLT\n";
    function_end(s, a.name);

    function_start(s, a.name + "_argv");
    if (a.constants.empty()) {
        s << "\tjmp\t" << a.code << "_argv@PLT\n";
    } else {
        // The array on the stack: 8 bytes a slot, rsp 16-aligned at the call (it is 8 past that on entry).
        const size_t frame = (8 * n + 15) / 16 * 16 + 8;
        s << "\tsubq\t$" << frame << ", %rsp\n";
        for (size_t j = 0; j < n; j++) {
            if (j == at)
                s << "\tleaq\t" << buffer << "(%rip), %rax\n";
            else
                s << "\tmovq\t" << 8 * (j < at ? j : j - 1) << "(%rdi), %rax\n";
            s << "\tmovq\t%rax, " << 8 * j << "(%rsp)\n";
        }
        s << "\tmovq\t%rsp, %rdi\n\tcall\t" << a.code << "_argv@PLT\n\taddq\t$" << frame << ", %rsp\n\tret\n";
    }
    function_end(s, a.name + "_argv");
}

/** The constants as a 1-D f32 halide_buffer_t over static values, labelled `buffer`. */
void write_constants_buffer(std::ostream &s, const KernelAlias &a, const std::string &buffer) {
    s << "\t.section\t.rodata\n\t.p2align\t2\n" << buffer << ".values:\n";
    for (float c : a.constants) {
        uint32_t bits;
        std::memcpy(&bits, &c, sizeof bits);
        s << "\t.long\t" << bits << "\n";
    }
    s << "\t.section\t.data.rel.ro,\"aw\"\n\t.p2align\t3\n" << buffer << ".dim:\n";
    StructData(sizeof(halide_dimension_t))
        .field(offsetof(halide_dimension_t, min), word(0), 4)
        .field(offsetof(halide_dimension_t, extent), word((long)a.constants.size()), 4)
        .field(offsetof(halide_dimension_t, stride), word(1), 4)
        .write(s);
    s << buffer << ":\n";
    StructData(sizeof(halide_buffer_t))
        .field(offsetof(halide_buffer_t, host), quad(buffer + ".values"), 8)
        .field(offsetof(halide_buffer_t, type), type_directive(Halide::Float(32)), 4)
        .field(offsetof(halide_buffer_t, dimensions), word(1), 4)
        .field(offsetof(halide_buffer_t, dim), quad(buffer + ".dim"), 8)
        .write(s);
}

/** `a_metadata` and the halide_filter_metadata_t it returns. */
void write_metadata(std::ostream &s, const KernelAlias &a, const std::string &label) {
    const std::vector<Halide::Argument> args = own_arguments(a);
    s << "\t.section\t.rodata\n" << label << ".name:\n\t.asciz\t\"" << a.name << "\"\n";
    s << label << ".target:\n\t.asciz\t\"" << a.target << "\"\n";
    for (size_t i = 0; i < args.size(); i++) s << label << ".arg" << i << ":\n\t.asciz\t\"" << args[i].name << "\"\n";
    s << "\t.section\t.data.rel.ro,\"aw\"\n\t.p2align\t3\n" << label << ".arguments:\n";
    for (size_t i = 0; i < args.size(); i++)
        StructData(sizeof(halide_filter_argument_t))
            .field(offsetof(halide_filter_argument_t, name), quad(label + ".arg" + std::to_string(i)), 8)
            .field(offsetof(halide_filter_argument_t, kind), word((long)args[i].kind), 4)
            .field(offsetof(halide_filter_argument_t, dimensions), word(args[i].dimensions), 4)
            .field(offsetof(halide_filter_argument_t, type), type_directive(args[i].type), 4)
            .write(s);
    s << label << ":\n";
    StructData(sizeof(halide_filter_metadata_t))
        .field(offsetof(halide_filter_metadata_t, version), word(halide_filter_metadata_t::VERSION), 4)
        .field(offsetof(halide_filter_metadata_t, num_arguments), word((long)args.size()), 4)
        .field(offsetof(halide_filter_metadata_t, arguments), quad(label + ".arguments"), 8)
        .field(offsetof(halide_filter_metadata_t, target), quad(label + ".target"), 8)
        .field(offsetof(halide_filter_metadata_t, name), quad(label + ".name"), 8)
        .write(s);
    function_start(s, a.name + "_metadata");
    s << "\tleaq\t" << label << "(%rip), %rax\n\tret\n";
    function_end(s, a.name + "_metadata");
}

void check_alias(const KernelAlias &a) {
    if (a.constants.empty()) return;
    if (a.code_arguments.size() > kAliasRegisterArguments || a.constants_argument >= a.code_arguments.size())
        throw CompileError("alias " + a.name + " of " + a.code + ": the code takes " + std::to_string(a.code_arguments.size()) +
                           " arguments; a thunk that passes constants passes at most " + std::to_string(kAliasRegisterArguments) +
                           ", in registers");
    for (const Halide::Argument &arg : a.code_arguments)
        if (!arg.is_buffer())
            throw CompileError("alias " + a.name + " of " + a.code + ": argument '" + arg.name +
                               "' is a scalar; a thunk that passes constants takes buffers only");
}

}  // namespace

bool aliases_supported(const Halide::Target &target) { return target.arch == Halide::Target::X86 && target.bits == 64; }

std::string alias_header(const std::string &code_header, const KernelAlias &alias) {
    // Renames the identifiers f, f_argv and f_metadata, and the include guard's "_f_h".
    const std::string &f = alias.code;
    std::string out =
        "/* " + alias.name + " runs the code of " + alias.code +
        (alias.constants.empty() ? "" : " with its own constants (" + std::to_string(alias.constants.size()) + ")") +
        " (the same group structure and schedule; its parameter names are " + alias.code + "'s) */\n";
    std::string header = code_header;
    if (!alias.constants.empty()) {
        // Halide declares a buffer argument `x` as `struct halide_buffer_t *_x_buffer`.
        const std::string name = alias.code_arguments.at(alias.constants_argument).name;
        const std::string param = "struct halide_buffer_t *_" + name + "_buffer";
        const size_t at = header.find(param);
        if (at == std::string::npos)
            throw CompileError("the header of " + alias.code + " does not declare its constants argument '" + name + "'");
        const bool first = header.compare(at + param.size(), 2, ", ") == 0;
        if (first)
            header.erase(at, param.size() + 2);
        else if (at >= 2 && header.compare(at - 2, 2, ", ") == 0)
            header.erase(at - 2, param.size() + 2);
        else
            throw CompileError("the header of " + alias.code + " declares its constants argument alone");
    }
    for (size_t i = 0; i < header.size();) {
        const bool starts = header.compare(i, f.size(), f) == 0 && (i == 0 || !std::isalnum((unsigned char)header[i - 1]));
        if (starts) {
            const size_t end = i + f.size();
            size_t word_end = end;
            while (word_end < header.size() && identifier_char(header[word_end])) word_end++;
            const std::string rest = header.substr(end, word_end - end);
            const bool guard = i > 0 && header[i - 1] == '_' && rest == "_h";
            const bool function =
                (i == 0 || !identifier_char(header[i - 1])) && (rest.empty() || rest == "_argv" || rest == "_metadata");
            if (guard || function) {
                out += alias.name + rest;
                i = word_end;
                continue;
            }
        }
        out += header[i++];
    }
    return out;
}

fs::path assemble_alias_thunks(const std::vector<KernelAlias> &aliases, const fs::path &work, const std::string &name) {
    const fs::path source = work / (name + ".s"), object = work / (name + ".o");
    {
        std::ofstream s(source);
        for (size_t i = 0; i < aliases.size(); i++) {
            const KernelAlias &a = aliases[i];
            check_alias(a);
            const std::string label = ".Lalias" + std::to_string(i);
            if (!a.constants.empty()) write_constants_buffer(s, a, label + ".constants");
            write_calls(s, a, label + ".constants");
            write_metadata(s, a, label + ".metadata");
        }
        s << "\t.section\t.note.GNU-stack,\"\",@progbits\n";
        if (!s) throw CompileError("cannot write the kernel aliases' assembly to " + source.string());
    }
    assembly::assemble(source, object, "assembling the kernel aliases");
    return object;
}

}  // namespace tessel
