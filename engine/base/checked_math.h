// Overflow-checked int64 arithmetic for sizes: dims, element counts, byte
// sizes, strides and offsets.
//
// Sizes come from the model and the caller (dims, pads, Tile repeats, Range
// bounds, plugin edits), so any product or sum of them may overflow; signed
// overflow is undefined behaviour and, in practice, a wrapped shape that the
// backends then disagree about. Every such computation goes through these
// helpers and turns an overflow into an error instead.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace kiln {

// a + b, a - b, a * b; nullopt when the exact result does not fit in int64.
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The product of `dims` (1 for none); nullopt on overflow. Does not check
// the signs: a negative dim is the caller's error to report.
inline std::optional<int64_t> checked_product(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

// numel * element_size for non-negative dims; nullopt on overflow.
inline std::optional<int64_t> checked_byte_size(std::span<const int64_t> dims, int64_t element_size) {
  std::optional<int64_t> n = checked_product(dims);
  if (!n) return std::nullopt;
  return checked_mul(*n, element_size);
}

}  // namespace kiln
