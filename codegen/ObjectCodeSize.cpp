#include "codegen/ObjectCodeSize.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace tessel {

int64_t executable_bytes(const std::filesystem::path &path) {
    std::ifstream in(path, std::ios::binary);
    auto fail = [&](const std::string &why) { throw std::runtime_error(path.string() + ": " + why); };
    if (!in) fail("cannot be opened");
    Elf64_Ehdr header{};
    if (!in.read(reinterpret_cast<char *>(&header), sizeof header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
        header.e_ident[EI_CLASS] != ELFCLASS64)
        fail("not an ELF64 object");
    if (header.e_shentsize != sizeof(Elf64_Shdr) || header.e_shnum == 0) fail("no section headers");
    std::vector<Elf64_Shdr> sections(header.e_shnum);
    in.seekg((std::streamoff)header.e_shoff);
    if (!in.read(reinterpret_cast<char *>(sections.data()), (std::streamsize)(sections.size() * sizeof(Elf64_Shdr))))
        fail("truncated section headers");
    int64_t bytes = 0;
    for (const auto &s : sections)
        if (s.sh_flags & SHF_EXECINSTR) bytes += (int64_t)s.sh_size;
    return bytes;
}

}  // namespace tessel
