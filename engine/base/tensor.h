// Tensor: a dense, row-major host tensor with shared, 64-byte aligned storage.
//
// Used for constants in the IR (initializers), for the reference executor's
// activations and for inputs/outputs crossing the API. Copies share storage
// (cheap, like a shared buffer); clone() makes a deep copy. Not thread-safe
// for concurrent writes to the same storage.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/base/dtype.h"
#include "engine/base/status.h"

namespace kiln {

using Shape = std::vector<int64_t>;

// Product of dims; 1 for a scalar (empty shape).
int64_t shape_numel(const Shape& shape);
std::string shape_to_string(const Shape& shape);  // "[1,3,224,224]"
// Row-major strides in elements.
std::vector<int64_t> shape_strides(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;

  // Allocates zero-initialized storage. Fails with kOutOfMemory or, for a
  // negative dim or an element count that overflows, kInvalidArgument.
  static StatusOr<Tensor> allocate(DType dtype, Shape shape);
  // Makes a tensor from typed values (tests, constants). Aborts on OOM.
  template <typename T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);
  static Tensor scalar_f32(float v) { return from_vector<float>({}, {v}); }
  static Tensor scalar_i64(int64_t v) { return from_vector<int64_t>({}, {v}); }

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw_data() { return data_.get(); }
  const void* raw_data() const { return data_.get(); }
  template <typename T>
  T* data() { return static_cast<T*>(raw_data()); }
  template <typename T>
  const T* data() const { return static_cast<const T*>(raw_data()); }
  template <typename T>
  std::span<T> span() { return {data<T>(), static_cast<size_t>(numel())}; }
  template <typename T>
  std::span<const T> span() const { return {data<T>(), static_cast<size_t>(numel())}; }

  // Same storage, new shape; the element count must match.
  StatusOr<Tensor> reshaped(Shape shape) const;
  // Deep copy.
  StatusOr<Tensor> clone() const;
  // This dtype and shape holding no data (raw_data() is null; nothing may
  // read elements): for a holder that keeps only the description of data
  // that now lives elsewhere, such as a compiled model's uploaded weights.
  Tensor without_data() const;
  // Converts elements to another dtype (saturating casts follow C++ semantics
  // of static_cast from double; bool is value != 0).
  StatusOr<Tensor> cast(DType to) const;

  // Element `i` (flat index) read as double / int64 regardless of dtype.
  double get_f64(int64_t i) const;
  int64_t get_i64(int64_t i) const;
  void set_f64(int64_t i, double v);
  // All elements as int64 (for shape-like tensors: axes, pads, shapes).
  std::vector<int64_t> to_i64_vector() const;
  std::vector<float> to_f32_vector() const;

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  std::shared_ptr<unsigned char> data_;
};

template <typename T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  auto t = allocate(dtype_of<T>(), std::move(shape));
  Tensor out = std::move(t).value();
  for (size_t i = 0; i < values.size() && i < static_cast<size_t>(out.numel()); ++i)
    out.data<T>()[i] = values[i];
  return out;
}

}  // namespace kiln
