#include "bench/Suite.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tessel::bench {

std::string BenchShape::dims() const {
    return std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N);
}

std::vector<BenchShape> load_suite(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open shape suite '" + path + "'");
    std::vector<BenchShape> shapes;
    std::string line;
    for (int line_no = 1; std::getline(in, line); line_no++) {
        line = line.substr(0, line.find('#'));
        std::istringstream fields(line);
        BenchShape s;
        std::string kind;
        if (!(fields >> s.name)) continue;  // blank or comment line
        if (!(fields >> kind >> s.M >> s.K >> s.N) || s.M <= 0 || s.K <= 0 || s.N <= 0 ||
            (kind != "compute" && kind != "decode")) {
            throw std::runtime_error(path + ":" + std::to_string(line_no) +
                                     ": expected `name compute|decode M K N` with positive extents");
        }
        s.kind = kind == "decode" ? ShapeKind::Decode : ShapeKind::Compute;
        shapes.push_back(s);
    }
    if (shapes.empty()) throw std::runtime_error("shape suite '" + path + "' has no shapes");
    return shapes;
}

}  // namespace tessel::bench
