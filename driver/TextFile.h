/** \file
 * Reading a whole text file (graph sources, generated PTX) for the commands in driver/. */
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tessel {

/** The file's contents; throws std::invalid_argument naming the path when it cannot be read. */
inline std::string read_text_file(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw std::invalid_argument("cannot read '" + path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace tessel
