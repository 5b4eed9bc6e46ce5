// Host tensor storage; see tensor.h.
#include "engine/base/tensor.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "engine/base/checked_math.h"
#include "engine/base/limits.h"

namespace kiln {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::vector<int64_t> shape_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

StatusOr<Tensor> Tensor::allocate(DType dtype, Shape shape) {
  if (dtype == DType::kUndefined) return invalid_argument("cannot allocate a tensor of undefined dtype");
  for (int64_t d : shape)
    if (d < 0) return invalid_argument("negative dimension in shape " + shape_to_string(shape));
  const std::string what = "a tensor of shape " + shape_to_string(shape) + " (" + std::string(dtype_name(dtype)) + ")";
  // 64 bytes of headroom: the allocation is rounded up to whole cache lines.
  const std::optional<int64_t> checked = checked_byte_size(shape, static_cast<int64_t>(dtype_size(dtype)));
  if (!checked || *checked > std::numeric_limits<int64_t>::max() - 64)
    return invalid_argument(what + " is too large: its byte size overflows int64");
  KILN_RETURN_IF_ERROR(check_tensor_bytes(*checked, what));
  const size_t bytes = static_cast<size_t>(*checked);
  size_t padded = (bytes + 63) / 64 * 64;
  if (padded == 0) padded = 64;
  void* p = std::aligned_alloc(64, padded);
  if (!p) return out_of_memory("cannot allocate " + format_bytes(*checked) + " for " + what);
  std::memset(p, 0, padded);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = std::shared_ptr<unsigned char>(static_cast<unsigned char*>(p), [](unsigned char* q) { std::free(q); });
  return t;
}

StatusOr<Tensor> Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel())
    return invalid_argument("cannot reshape " + shape_to_string(shape_) + " to " + shape_to_string(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::without_data() const {
  Tensor t;
  t.dtype_ = dtype_;
  t.shape_ = shape_;
  return t;
}

StatusOr<Tensor> Tensor::clone() const {
  KILN_ASSIGN_OR_RETURN(Tensor t, allocate(dtype_, shape_));
  if (nbytes()) std::memcpy(t.raw_data(), raw_data(), nbytes());
  return t;
}

namespace {
template <typename T>
double load_f64(const void* p, int64_t i) {
  const T v = static_cast<const T*>(p)[i];
  if constexpr (std::is_same_v<T, Half>) return static_cast<double>(static_cast<float>(v));
  else return static_cast<double>(v);
}
template <typename T>
int64_t load_i64(const void* p, int64_t i) {
  const T v = static_cast<const T*>(p)[i];
  if constexpr (std::is_same_v<T, Half>) return static_cast<int64_t>(static_cast<float>(v));
  else return static_cast<int64_t>(v);
}
// double -> T without undefined behaviour: integers truncate toward zero and
// saturate at the type's range; NaN becomes 0.
template <typename T>
void store_f64(void* p, int64_t i, double v) {
  if constexpr (std::is_same_v<T, Half>) {
    static_cast<T*>(p)[i] = Half(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    static_cast<T*>(p)[i] = v != 0.0;
  } else if constexpr (std::is_floating_point_v<T>) {
    static_cast<T*>(p)[i] = static_cast<T>(v);
  } else {
    T out = 0;
    if (std::isnan(v)) out = 0;
    else if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) out = std::numeric_limits<T>::lowest();
    else if (v >= static_cast<double>(std::numeric_limits<T>::max())) out = std::numeric_limits<T>::max();
    else out = static_cast<T>(v);
    static_cast<T*>(p)[i] = out;
  }
}
}  // namespace

double Tensor::get_f64(int64_t i) const {
  double r = 0;
  visit_dtype(dtype_, [&]<typename T>() { r = load_f64<T>(raw_data(), i); });
  return r;
}

int64_t Tensor::get_i64(int64_t i) const {
  int64_t r = 0;
  visit_dtype(dtype_, [&]<typename T>() { r = load_i64<T>(raw_data(), i); });
  return r;
}

void Tensor::set_f64(int64_t i, double v) {
  visit_dtype(dtype_, [&]<typename T>() { store_f64<T>(raw_data(), i, v); });
}

std::vector<int64_t> Tensor::to_i64_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[static_cast<size_t>(i)] = get_i64(i);
  return v;
}

std::vector<float> Tensor::to_f32_vector() const {
  std::vector<float> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[static_cast<size_t>(i)] = static_cast<float>(get_f64(i));
  return v;
}

StatusOr<Tensor> Tensor::cast(DType to) const {
  KILN_ASSIGN_OR_RETURN(Tensor t, allocate(to, shape_));
  const int64_t n = numel();
  if (to == dtype_) {
    if (nbytes()) std::memcpy(t.raw_data(), raw_data(), nbytes());
    return t;
  }
  // int64 -> int64-like paths keep full precision; everything else goes through double.
  if (dtype_is_integer(to) && (dtype_is_integer(dtype_) || dtype_ == DType::kBool)) {
    visit_dtype(to, [&]<typename T>() {
      for (int64_t i = 0; i < n; ++i) t.data<T>()[i] = static_cast<T>(get_i64(i));
    });
    return t;
  }
  for (int64_t i = 0; i < n; ++i) t.set_f64(i, get_f64(i));
  return t;
}

}  // namespace kiln
