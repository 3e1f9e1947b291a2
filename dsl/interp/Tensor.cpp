#include "dsl/interp/Tensor.h"

#include <cmath>
#include <cstring>

#include "dsl/ir/Numerics.h"
#include "dsl/ir/Printer.h"

namespace tessel::dsl {

int64_t Tensor::numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

Tensor Tensor::filled(DType dtype, std::vector<int64_t> shape, double v) {
    Tensor t;
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.data.assign((size_t)t.numel(), round_to(dtype, v));
    return t;
}

Tensor Tensor::scalar(DType dtype, double v) { return filled(dtype, {}, v); }

std::string to_string(const Tensor &t) {
    std::string s = std::string(to_string(t.dtype)) + "[";
    for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
    s += "] [";
    for (size_t i = 0; i < t.data.size(); ++i) s += (i ? ", " : "") + print_number(t.data[i]);
    return s + "]";
}

bool bitwise_equal(const Tensor &a, const Tensor &b) {
    if (a.dtype != b.dtype || a.shape != b.shape || a.data.size() != b.data.size()) return false;
    for (size_t i = 0; i < a.data.size(); ++i) {
        double x = a.data[i], y = b.data[i];
        if (std::isnan(x) && std::isnan(y)) continue;
        if (std::memcmp(&x, &y, sizeof x) != 0) return false;
    }
    return true;
}

}  // namespace tessel::dsl
