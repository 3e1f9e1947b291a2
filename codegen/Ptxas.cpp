#include "codegen/Ptxas.h"

#include "support/Subprocess.h"

#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#ifndef TESSEL_PTXAS_PATH
#define TESSEL_PTXAS_PATH ""
#endif

namespace tessel {

namespace fs = std::filesystem;

bool PtxasReport::has_spills() const {
    for (const auto &k : kernels)
        if (k.spill_store_bytes || k.spill_load_bytes) return true;
    return false;
}

std::string PtxasReport::to_string() const {
    std::ostringstream os;
    os << "ptxas " << arch << ": " << (ok ? "assembled" : "FAILED") << "\n";
    for (const auto &k : kernels) {
        os << "  " << k.kernel << ": " << k.registers << " registers/thread, " << k.shared_bytes << " bytes shared memory, "
           << k.stack_bytes << " bytes stack, spills " << k.spill_store_bytes << "B stored / " << k.spill_load_bytes
           << "B loaded\n";
    }
    if (!ok) os << log;
    return os.str();
}

std::string find_ptxas() {
    std::string configured = TESSEL_PTXAS_PATH;
    if (!configured.empty() && fs::exists(configured)) return configured;
    for (const char *p : {"/usr/local/cuda/bin/ptxas", "/usr/bin/ptxas"})
        if (fs::exists(p)) return p;
    return "";
}

std::vector<KernelResources> parse_ptxas_log(const std::string &log) {
    std::vector<KernelResources> out;
    static const std::regex function_re(R"(Compiling entry function '([^']+)')");
    static const std::regex stack_re(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
    static const std::regex regs_re(R"(Used (\d+) registers)");
    static const std::regex smem_re(R"((\d+) bytes smem)");
    std::istringstream in(log);
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, function_re)) {
            out.push_back({});
            out.back().kernel = m[1];
            continue;
        }
        if (out.empty()) continue;
        auto &k = out.back();
        if (std::regex_search(line, m, stack_re)) {
            k.stack_bytes = std::stol(m[1]);
            k.spill_store_bytes = std::stol(m[2]);
            k.spill_load_bytes = std::stol(m[3]);
        }
        if (std::regex_search(line, m, regs_re)) k.registers = std::stoi(m[1]);
        if (std::regex_search(line, m, smem_re)) k.shared_bytes = std::stol(m[1]);
    }
    return out;
}

PtxasReport assemble_ptx(const std::string &ptx, const std::string &arch) {
    const std::string ptxas = find_ptxas();
    if (ptxas.empty()) throw std::runtime_error("ptxas not found: install the CUDA toolkit to check PTX");
    char dir_template[] = "/tmp/tessel-ptxas-XXXXXX";
    if (!mkdtemp(dir_template)) throw std::runtime_error("cannot create a temporary directory for ptxas");
    fs::path dir(dir_template);
    std::ofstream(dir / "kernels.ptx") << ptx;
    PtxasReport r;
    r.arch = arch;
    SubprocessResult run;
    try {
        run = run_subprocess(
            {ptxas, "-v", "-arch=" + arch, (dir / "kernels.ptx").string(), "-o", (dir / "kernels.cubin").string()});
    } catch (...) {
        fs::remove_all(dir);
        throw;
    }
    r.log = run.output;
    r.ok = run.ok();
    r.kernels = parse_ptxas_log(r.log);
    fs::remove_all(dir);
    return r;
}

}  // namespace tessel
