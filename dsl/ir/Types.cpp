#include "dsl/ir/Types.h"

namespace tessel::dsl {

const char *to_string(DType t) {
    switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::I8: return "i8";
    }
    return "?";
}

std::optional<DType> parse_dtype(const std::string &s) {
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64, DType::I8})
        if (s == to_string(t)) return t;
    return std::nullopt;
}

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }
bool is_int(DType t) { return t == DType::I32 || t == DType::I64; }
bool is_tensor_data(DType t) { return is_float(t) || t == DType::I8; }
bool is_narrow_storage(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::I8; }

int byte_size(DType t) {
    switch (t) {
    case DType::F32:
    case DType::I32: return 4;
    case DType::F16:
    case DType::BF16: return 2;
    case DType::I64: return 8;
    case DType::I8: return 1;
    }
    return 0;
}

}  // namespace tessel::dsl
