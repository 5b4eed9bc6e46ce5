// Host <-> device element conversion and image packing (see device_data.h).
#include "planner/device_data.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace kiln::planner {
namespace {


// For each row-major element index, the element slot in the device array
// (buffer: the index itself; image: texel * 4 + lane).
std::vector<int64_t> image_slots(const DeviceLayout& layout, const Shape& shape) {
  const int rank = std::max<int>(1, static_cast<int>(shape.size()));
  Shape dims = shape.empty() ? Shape{1} : shape;
  const int p = layout.packed_axis;
  const int last = rank - 1;
  const int64_t width = ((dims[static_cast<size_t>(p)] + 3) / 4) * (p != last ? dims[static_cast<size_t>(last)] : 1);
  const int64_t n = shape_numel(dims);
  std::vector<int64_t> slots(static_cast<size_t>(n));
  std::vector<int64_t> c(static_cast<size_t>(rank), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t x = (c[static_cast<size_t>(p)] >> 2) * (p != last ? dims[static_cast<size_t>(last)] : 1);
    if (p != last) x += c[static_cast<size_t>(last)];
    int64_t y = 0;
    for (int k = 0; k < rank; ++k)
      if (k != p && k != last) y = y * dims[static_cast<size_t>(k)] + c[static_cast<size_t>(k)];
    slots[static_cast<size_t>(i)] = (y * width + x) * 4 + (c[static_cast<size_t>(p)] & 3);
    for (int k = rank - 1; k >= 0; --k) {
      if (++c[static_cast<size_t>(k)] < dims[static_cast<size_t>(k)]) break;
      c[static_cast<size_t>(k)] = 0;
    }
  }
  return slots;
}

int32_t saturate_i32(double v) {
  if (std::isnan(v)) return 0;
  if (v >= static_cast<double>(std::numeric_limits<int32_t>::max())) return std::numeric_limits<int32_t>::max();
  if (v <= static_cast<double>(std::numeric_limits<int32_t>::min())) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(v);
}

}  // namespace

void image_size(const DeviceLayout& layout, const Shape& shape, uint32_t* width, uint32_t* height) {
  Shape dims = shape.empty() ? Shape{1} : shape;
  const int rank = static_cast<int>(dims.size());
  const int p = layout.packed_axis;
  const int last = rank - 1;
  int64_t w = (dims[static_cast<size_t>(p)] + 3) / 4;
  if (p != last) w *= dims[static_cast<size_t>(last)];
  int64_t h = 1;
  for (int k = 0; k < rank; ++k)
    if (k != p && k != last) h *= dims[static_cast<size_t>(k)];
  *width = static_cast<uint32_t>(std::max<int64_t>(w, 1));
  *height = static_cast<uint32_t>(std::max<int64_t>(h, 1));
}

size_t device_bytes(const DeviceLayout& layout, const Shape& shape) {
  const size_t elem = planner::elem_bytes(layout.type);
  if (layout.storage == Storage::kImage) {
    uint32_t w = 0, h = 0;
    image_size(layout, shape, &w, &h);
    return static_cast<size_t>(w) * h * 4 * elem;
  }
  return static_cast<size_t>(shape_numel(shape)) * elem;
}

namespace {

// Element slots of a buffer (identity) or image (texel * 4 + lane), in
// row-major element order, walked incrementally.
template <typename Fn>
void for_each_slot(const DeviceLayout& layout, const Shape& shape, Fn&& fn) {
  const int64_t n = shape_numel(shape);
  if (layout.storage != Storage::kImage) {
    for (int64_t i = 0; i < n; ++i) fn(i, i);
    return;
  }
  const std::vector<int64_t> slots = image_slots(layout, shape);
  for (int64_t i = 0; i < n; ++i) fn(i, slots[static_cast<size_t>(i)]);
}

}  // namespace

std::vector<std::byte> to_device(const Tensor& t, const DeviceLayout& layout) {
  std::vector<std::byte> out(device_bytes(layout, t.shape()));
  to_device(t, layout, out.data());
  return out;
}

void to_device(const Tensor& t, const DeviceLayout& layout, std::byte* out) {
  // An image's texels past the packed axis's end hold zeros.
  if (layout.storage == Storage::kImage) std::memset(out, 0, device_bytes(layout, t.shape()));
  if (layout.type == ElemType::kI32) {
    auto* d = reinterpret_cast<int32_t*>(out);
    if (dtype_is_float(t.dtype())) {
      for_each_slot(layout, t.shape(), [&](int64_t i, int64_t s) { d[s] = saturate_i32(t.get_f64(i)); });
    } else {
      for_each_slot(layout, t.shape(), [&](int64_t i, int64_t s) {
        d[s] = static_cast<int32_t>(std::clamp<int64_t>(t.get_i64(i), std::numeric_limits<int32_t>::min(),
                                                        std::numeric_limits<int32_t>::max()));
      });
    }
    return;
  }
  // Float: go through a float32 view of the data (typed loops, no per-element dispatch).
  Tensor f32;
  const float* src = nullptr;
  if (t.dtype() == DType::kFloat32) {
    src = t.data<float>();
  } else {
    f32 = t.cast(DType::kFloat32).value();
    src = f32.data<float>();
  }
  if (layout.type == ElemType::kF32) {
    auto* d = reinterpret_cast<float*>(out);
    if (layout.storage == Storage::kBuffer) std::memcpy(d, src, static_cast<size_t>(t.numel()) * 4);
    else for_each_slot(layout, t.shape(), [&](int64_t i, int64_t s) { d[s] = src[i]; });
  } else {
    auto* d = reinterpret_cast<uint16_t*>(out);
    if (layout.storage == Storage::kBuffer) {
      floats_to_halves(src, d, static_cast<size_t>(t.numel()));
    } else {
      std::vector<uint16_t> halves(static_cast<size_t>(t.numel()));
      floats_to_halves(src, halves.data(), halves.size());
      for_each_slot(layout, t.shape(), [&](int64_t i, int64_t s) { d[s] = halves[static_cast<size_t>(i)]; });
    }
  }
}

StatusOr<Tensor> from_device(const std::byte* data, size_t size, const DeviceLayout& layout, DType dtype,
                             const Shape& shape) {
  if (size < device_bytes(layout, shape)) return internal_error("device tensor smaller than its shape");
  if (layout.type == ElemType::kI32) {
    KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, shape));
    const auto* s = reinterpret_cast<const int32_t*>(data);
    for_each_slot(layout, shape, [&](int64_t i, int64_t slot) { t.set_f64(i, static_cast<double>(s[slot])); });
    return t;
  }
  KILN_ASSIGN_OR_RETURN(Tensor f32, Tensor::allocate(DType::kFloat32, shape));
  float* d = f32.data<float>();
  if (layout.type == ElemType::kF32) {
    const auto* s = reinterpret_cast<const float*>(data);
    if (layout.storage == Storage::kBuffer) std::memcpy(d, s, static_cast<size_t>(f32.numel()) * 4);
    else for_each_slot(layout, shape, [&](int64_t i, int64_t slot) { d[i] = s[slot]; });
  } else {
    const auto* s = reinterpret_cast<const uint16_t*>(data);
    if (layout.storage == Storage::kBuffer) halves_to_floats(s, d, static_cast<size_t>(f32.numel()));
    else for_each_slot(layout, shape, [&](int64_t i, int64_t slot) { d[i] = half_to_float(s[slot]); });
  }
  if (dtype == DType::kFloat32) return f32;
  return f32.cast(dtype);
}

}  // namespace kiln::planner
