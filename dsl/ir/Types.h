/** \file
 * Value types of the tensor graph: a dtype and a shape whose dimensions are static integers,
 * named symbols bound at run time (`M`), or references to a scalar integer value computed by
 * shape code (`%hidden`). Types are plain data; comparing dims through shape code is done by
 * resolve_dim() in TypeInference.h.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessel::dsl {

/** Largest extent and element count of a tensor (2^62): products of extents stay in int64. */
constexpr int64_t kMaxElements = int64_t(1) << 62;
/** Largest magnitude of an integer constant or shape-code value (2^53): values are held as
 * doubles (dsl/ir/Numerics.h), exact up to here. Shape arithmetic beyond it is an error. */
constexpr int64_t kMaxExactInteger = int64_t(1) << 53;

/** Stable id of a node and of the value it defines; never reused within one Graph. */
using ValueId = uint32_t;
constexpr ValueId kNoValue = UINT32_MAX;

/** f32, f16, bf16: floating point. i8: an integer storage type for quantized tensors (values
 * -128..127; computed in f32 like f16 and bf16, a float converts to it by rounding to nearest
 * even and saturating, NaN to 0). i32, i64: shape code. */
enum class DType { F32, F16, BF16, I32, I64, I8 };

const char *to_string(DType t);
std::optional<DType> parse_dtype(const std::string &s);
bool is_float(DType t);
/** A shape-code integer (i32, i64). */
bool is_int(DType t);
/** A tensor element type kernels compute with: the floats and the storage type i8. */
bool is_tensor_data(DType t);
/** A tensor type stored narrower than the f32 it computes in: f16, bf16, i8. */
bool is_narrow_storage(DType t);
/** Size in bytes of one element. */
int byte_size(DType t);

/** One dimension of a shape. Extents are >= 1: zero-size tensors are not supported, so a shape
 * with a static extent <= 0, or one whose shape code evaluates to <= 0, is refused (by the
 * parser, infer_type(), constant folding, or the interpreter at run time). */
struct Dim {
    enum class Kind { Static, Symbol, Value };
    Kind kind = Kind::Static;
    int64_t size = 0;          ///< Kind::Static
    std::string symbol;        ///< Kind::Symbol, e.g. "M"
    ValueId value = kNoValue;  ///< Kind::Value: a rank-0 integer value defined earlier

    static Dim fixed(int64_t n) { return Dim{Kind::Static, n, {}, kNoValue}; }
    static Dim sym(std::string s) { return Dim{Kind::Symbol, 0, std::move(s), kNoValue}; }
    static Dim ref(ValueId v) { return Dim{Kind::Value, 0, {}, v}; }
    bool is_static() const { return kind == Kind::Static; }
    /** Syntactic equality (no resolution through shape code). */
    bool operator==(const Dim &o) const { return kind == o.kind && size == o.size && symbol == o.symbol && value == o.value; }
    bool operator!=(const Dim &o) const { return !(*this == o); }
};

/** dtype + shape. A rank-0 type is a scalar. */
struct TensorType {
    DType dtype = DType::F32;
    std::vector<Dim> dims;

    int rank() const { return (int)dims.size(); }
    bool is_scalar() const { return dims.empty(); }
    bool all_static() const {
        for (const Dim &d : dims)
            if (!d.is_static()) return false;
        return true;
    }
    /** Element count; only meaningful when all_static(). */
    int64_t static_numel() const {
        int64_t n = 1;
        for (const Dim &d : dims) n *= d.size;
        return n;
    }
    bool operator==(const TensorType &o) const { return dtype == o.dtype && dims == o.dims; }
    bool operator!=(const TensorType &o) const { return !(*this == o); }
};

}  // namespace tessel::dsl
