// Host tensor <-> the bytes a device tensor holds.
//
// A device tensor stores f32, f16 or i32 elements (planner::ElemType), in a
// buffer row-major, or in an RGBA image with one axis packed four to a texel
// (planner::image_extent). Uploads convert the graph dtype to the device
// element type (int64 and bool become int32; values outside int32 saturate)
// and pack images; downloads do the reverse.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "planner/kernel.h"

namespace kiln::planner {

// Bytes of a device tensor of `shape` in `layout` (images: the whole texel grid).
size_t device_bytes(const planner::DeviceLayout& layout, const Shape& shape);
// Texel grid of an image tensor (layout must be an image).
void image_size(const planner::DeviceLayout& layout, const Shape& shape, uint32_t* width, uint32_t* height);

// `t` converted and arranged as the device stores it.
std::vector<std::byte> to_device(const Tensor& t, const planner::DeviceLayout& layout);
// The same, written to `out` (device_bytes(layout, t.shape()) bytes): for
// memory that is already there, such as a mapped staging buffer.
void to_device(const Tensor& t, const planner::DeviceLayout& layout, std::byte* out);
// The tensor of `dtype` and `shape` from device bytes (size device_bytes()).
StatusOr<Tensor> from_device(const std::byte* data, size_t size, const planner::DeviceLayout& layout, DType dtype,
                             const Shape& shape);

}  // namespace kiln::planner
