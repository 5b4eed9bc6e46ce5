// Element types of tensors and IR values, and the fp16 conversions the
// reference kernels and the Vulkan upload path share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace kiln {

// The numeric values match kiln_dtype_t in the C API.
enum class DType : uint8_t {
  kUndefined = 0,
  kFloat32 = 1,
  kFloat16 = 2,
  kFloat64 = 3,
  kInt8 = 4,
  kUInt8 = 5,
  kInt16 = 6,
  kInt32 = 7,
  kInt64 = 8,
  kBool = 9,
  kUInt16 = 10,
  kUInt32 = 11,
  kUInt64 = 12,
};

size_t dtype_size(DType t);
// Short name used by the text IR: f32, f16, f64, i8, u8, i16, i32, i64, bool...
std::string_view dtype_name(DType t);
// Inverse of dtype_name; kUndefined if unknown.
DType dtype_from_name(std::string_view name);
// DType for an ONNX TensorProto element-type number (the 'to'/'dtype'
// attributes keep ONNX's numbering); kUndefined for types Kiln does not
// have (string, bfloat16, complex, float8).
DType dtype_from_onnx(int64_t onnx_type);
bool dtype_is_float(DType t);
bool dtype_is_integer(DType t);  // signed or unsigned, not bool

// IEEE binary16 <-> binary32, round-to-nearest-even, NaN/Inf preserved.
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
// Bulk conversions with the same rounding (nearest even); they use the
// CPU's F16C instructions on x86-64 when present (about 20x faster).
void floats_to_halves(const float* src, uint16_t* dst, size_t n);
void halves_to_floats(const uint16_t* src, float* dst, size_t n);

// A storage-only fp16 type for host tensors.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) : bits(float_to_half(f)) {}
  explicit operator float() const { return half_to_float(bits); }
};

template <typename T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::kFloat32; }
template <> constexpr DType dtype_of<Half>() { return DType::kFloat16; }
template <> constexpr DType dtype_of<double>() { return DType::kFloat64; }
template <> constexpr DType dtype_of<int8_t>() { return DType::kInt8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::kUInt8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::kInt16; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::kUInt16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::kInt32; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::kUInt32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::kInt64; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::kUInt64; }
template <> constexpr DType dtype_of<bool>() { return DType::kBool; }

}  // namespace kiln

// Calls F.template operator()<T>() with T the C++ type of `dtype`.
// Returns false when the dtype is undefined.
#define KILN_DTYPE_CASE_(E, T) \
  case ::kiln::DType::E: fn.template operator()<T>(); return true;

namespace kiln {
template <typename Fn>
bool visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    KILN_DTYPE_CASE_(kFloat32, float)
    KILN_DTYPE_CASE_(kFloat16, Half)
    KILN_DTYPE_CASE_(kFloat64, double)
    KILN_DTYPE_CASE_(kInt8, int8_t)
    KILN_DTYPE_CASE_(kUInt8, uint8_t)
    KILN_DTYPE_CASE_(kInt16, int16_t)
    KILN_DTYPE_CASE_(kUInt16, uint16_t)
    KILN_DTYPE_CASE_(kInt32, int32_t)
    KILN_DTYPE_CASE_(kUInt32, uint32_t)
    KILN_DTYPE_CASE_(kInt64, int64_t)
    KILN_DTYPE_CASE_(kUInt64, uint64_t)
    KILN_DTYPE_CASE_(kBool, bool)
    case DType::kUndefined: return false;
  }
  return false;
}
}  // namespace kiln
