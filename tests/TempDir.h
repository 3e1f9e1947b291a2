/** \file
 * A per-test temporary directory, removed with everything in it when the test ends. */
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tessel::testing {

struct TempDir {
    std::filesystem::path dir;
    TempDir() {
        char tmpl[] = "/tmp/tessel-test-XXXXXX";
        dir = mkdtemp(tmpl);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
    std::string file(const std::string &name) const { return (dir / name).string(); }
};

}  // namespace tessel::testing
