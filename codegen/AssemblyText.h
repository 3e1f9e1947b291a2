/** \file
 * Writing x86-64 assembly text (GNU as): functions and static data laid out by a C struct's
 * offsets. For the thunks Tessel writes instead of compiling them (codegen/KernelAliases.h,
 * codegen/ProgramFunctions.h): an assembler takes milliseconds where a compiler takes seconds.
 */
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <utility>

namespace tessel::assembly {

/** A struct's bytes as assembler directives: fields by offset, the gaps and the tail zero-filled. */
class StructData {
public:
    explicit StructData(size_t size) : size_(size) {}
    StructData &field(size_t offset, const std::string &directive, size_t bytes) {
        fields_[offset] = {directive, bytes};
        return *this;
    }
    void write(std::ostream &s) const {
        size_t at = 0;
        for (const auto &[offset, f] : fields_) {
            if (offset > at) s << "\t.zero\t" << offset - at << "\n";
            s << "\t" << f.first << "\n";
            at = offset + f.second;
        }
        if (size_ > at) s << "\t.zero\t" << size_ - at << "\n";
    }

private:
    size_t size_;
    std::map<size_t, std::pair<std::string, size_t>> fields_;
};

inline std::string quad(const std::string &what) { return ".quad\t" + what; }
inline std::string word(long value) { return ".long\t" + std::to_string(value); }

/** A global function `name` starts here (text section, 16-byte aligned). */
inline void function_start(std::ostream &s, const std::string &name) {
    s << "\t.text\n\t.globl\t" << name << "\n\t.type\t" << name << ",@function\n\t.p2align\t4\n" << name << ":\n";
}

inline void function_end(std::ostream &s, const std::string &name) { s << "\t.size\t" << name << ", .-" << name << "\n"; }

/** The registers of the first six integer or pointer arguments (the SysV x86-64 ABI). */
inline const char *const kArgumentRegisters[6] = {"%rdi", "%rsi", "%rdx", "%rcx", "%r8", "%r9"};

/** Assembles `source` into `object` with the compiler driver that built Tessel; throws
 * CompileError naming `what` with the assembler's output when it fails. */
void assemble(const std::filesystem::path &source, const std::filesystem::path &object, const std::string &what);

}  // namespace tessel::assembly
