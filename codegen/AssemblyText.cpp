#include "codegen/AssemblyText.h"

#include "codegen/Compile.h"
#include "support/Subprocess.h"

#ifndef TESSEL_ASSEMBLER
#error "TESSEL_ASSEMBLER must be defined by codegen/CMakeLists.txt"
#endif

namespace tessel::assembly {

void assemble(const std::filesystem::path &source, const std::filesystem::path &object, const std::string &what) {
    const std::vector<std::string> argv = {TESSEL_ASSEMBLER, "-c", source.string(), "-o", object.string()};
    if (const SubprocessResult r = run_subprocess(argv); !r.ok())
        throw CompileError(what + " failed: " + format_command(argv) + "\n" + r.output);
}

}  // namespace tessel::assembly
