// Small helpers of the kernel description (see kernel.h).
#include "planner/kernel.h"

namespace kiln::planner {

const char* storage_name(Storage s) { return s == Storage::kImage ? "image" : "buffer"; }

const char* elem_type_name(ElemType t) {
  switch (t) {
    case ElemType::kF32: return "f32";
    case ElemType::kF16: return "f16";
    case ElemType::kI32: return "i32";
  }
  return "?";
}

uint32_t elem_bytes(ElemType t) { return t == ElemType::kF16 ? 2u : 4u; }

bool is_float(ElemType t) { return t != ElemType::kI32; }

ElemType device_elem_type(DType dtype, ElemType float_type) {
  return dtype_is_float(dtype) ? float_type : ElemType::kI32;
}

int default_packed_axis(size_t rank) {
  if (rank == 4) return 1;
  return rank == 0 ? 0 : static_cast<int>(rank) - 1;
}

ImageExtent image_extent(const std::vector<ir::Dim>& shape, int packed_axis) {
  const int rank = static_cast<int>(shape.size());
  if (rank == 0) return {ir::Dim(1), ir::Dim(1)};
  const int last = rank - 1;
  ir::Dim width = ir::Dim::ceil_div(shape[static_cast<size_t>(packed_axis)], ir::Dim(4));
  if (packed_axis != last) width = width * shape[static_cast<size_t>(last)];
  ir::Dim height(1);
  for (int k = 0; k < rank; ++k)
    if (k != packed_axis && k != last) height = height * shape[static_cast<size_t>(k)];
  return {width, height};
}

}  // namespace kiln::planner
