#include "bench/Suite.h"

#include "autoscheduler/Coverage.h"

namespace tessel::bench {

std::string BenchShape::dims() const { return std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N); }

std::vector<BenchShape> load_suite(const std::string &path) {
    std::vector<BenchShape> shapes;
    for (const auto &s : autosched::load_shape_suite(path)) {
        shapes.push_back({s.name, s.kind == "decode" ? ShapeKind::Decode : ShapeKind::Compute, (int)s.workload.M,
                          (int)s.workload.K, (int)s.workload.N});
    }
    return shapes;
}

}  // namespace tessel::bench
