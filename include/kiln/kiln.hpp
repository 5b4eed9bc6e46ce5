// Header-only C++ wrapper over the Kiln C API (kiln.h).
//
// RAII handles and an Error value; nothing here throws, so it works in
// builds with -fno-exceptions. Every fallible call returns kiln::api::Error,
// which is empty on success:
//
//   kiln::api::Model model;
//   if (auto err = kiln::api::Model::load("resnet18.onnx", model)) { log(err.message()); return; }
//   kiln::api::Session session;
//   if (auto err = kiln::api::Session::create(model, KILN_BACKEND_DEFAULT, session)) ...
//
// Vulkan interop (VulkanDevice::wrap, Session::bind_vulkan_buffer) is
// available when kiln/kiln_vulkan.h is included before this header.
#ifndef KILN_KILN_HPP_
#define KILN_KILN_HPP_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::api {

// Owns a kiln_status_t*. Converts to true when it holds an error.
class [[nodiscard]] Error {
 public:
  Error() = default;
  explicit Error(kiln_status_t* s) : s_(s) {}
  Error(Error&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Error& operator=(Error&& o) noexcept {
    if (this != &o) {
      kiln_status_free(s_);
      s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
  }
  Error(const Error&) = delete;
  Error& operator=(const Error&) = delete;
  ~Error() { kiln_status_free(s_); }

  explicit operator bool() const { return s_ != nullptr; }
  kiln_status_code_t code() const { return kiln_status_code(s_); }
  std::string message() const { return kiln_status_message(s_); }
  // "NOT_FOUND: no such file 'x.onnx'" ("OK" when empty).
  std::string to_string() const {
    return s_ ? std::string(kiln_status_code_name(code())) + ": " + message() : std::string("OK");
  }

 private:
  kiln_status_t* s_ = nullptr;
};

// Moves a string a describe function returned into `out` and frees it.
inline Error take_text(kiln_status_t* status, char* text, std::string& out) {
  Error e(status);
  if (!e && text) out = text;
  kiln_string_free(text);
  return e;
}

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(kiln_tensor_t* t) : t_(t) {}
  Tensor(Tensor&& o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
  Tensor& operator=(Tensor&& o) noexcept {
    if (this != &o) {
      kiln_tensor_destroy(t_);
      t_ = std::exchange(o.t_, nullptr);
    }
    return *this;
  }
  ~Tensor() { kiln_tensor_destroy(t_); }

  static Error create(kiln_dtype_t dtype, const std::vector<int64_t>& shape, Tensor& out) {
    kiln_tensor_t* t = nullptr;
    Error e(kiln_tensor_create(dtype, shape.data(), shape.size(), &t));
    if (!e) out = Tensor(t);
    return e;
  }
  // A .npy file, or an ONNX TensorProto (.pb).
  static Error load(const std::string& path, Tensor& out) {
    kiln_tensor_t* t = nullptr;
    Error e(kiln_tensor_load(path.c_str(), &t));
    if (!e) out = Tensor(t);
    return e;
  }
  Error save_npy(const std::string& path) const { return Error(kiln_tensor_save_npy(t_, path.c_str())); }
  // Element `i` (row-major) as a double; NaN out of range.
  double get_f64(size_t i) const { return kiln_tensor_get_f64(t_, i); }
  Error set_f64(size_t i, double v) { return Error(kiln_tensor_set_f64(t_, i, v)); }
  size_t numel() const {
    size_t n = 1;
    for (size_t i = 0; i < kiln_tensor_rank(t_); ++i) n *= static_cast<size_t>(kiln_tensor_dim(t_, i));
    return n;
  }
  kiln_dtype_t dtype() const { return kiln_tensor_dtype(t_); }
  std::vector<int64_t> shape() const {
    std::vector<int64_t> s(kiln_tensor_rank(t_));
    for (size_t i = 0; i < s.size(); ++i) s[i] = kiln_tensor_dim(t_, i);
    return s;
  }
  size_t byte_size() const { return kiln_tensor_byte_size(t_); }
  // False for an empty handle (e.g. an output bound to a Vulkan buffer).
  explicit operator bool() const { return t_ != nullptr; }
  template <typename T>
  T* data() { return static_cast<T*>(kiln_tensor_data(t_)); }
  kiln_tensor_t* get() const { return t_; }

 private:
  kiln_tensor_t* t_ = nullptr;
};

class Model {
 public:
  Model() = default;
  Model(Model&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
  Model& operator=(Model&& o) noexcept {
    if (this != &o) {
      kiln_model_release(m_);
      m_ = std::exchange(o.m_, nullptr);
    }
    return *this;
  }
  ~Model() { kiln_model_release(m_); }

  static Error load(const std::string& path, Model& out) {
    kiln_model_t* m = nullptr;
    Error e(kiln_model_load(path.c_str(), &m));
    if (!e) out.reset(m);
    return e;
  }
  // Serialized ModelProto bytes (no external data).
  static Error load_from_memory(const void* data, size_t size, Model& out) {
    kiln_model_t* m = nullptr;
    Error e(kiln_model_load_from_memory(data, size, &m));
    if (!e) out.reset(m);
    return e;
  }
  size_t input_count() const { return kiln_model_input_count(m_); }
  size_t output_count() const { return kiln_model_output_count(m_); }
  std::string input_name(size_t i) const { return kiln_model_input_name(m_, i); }
  std::string output_name(size_t i) const { return kiln_model_output_name(m_, i); }
  // What the model declares for input `i` (strings live as long as the model).
  Error input_info(size_t i, kiln_input_info_t& out) const {
    out = kiln_input_info_t{};
    out.struct_size = sizeof(out);
    return Error(kiln_model_input_info(m_, i, &out));
  }
  Error input_dim(size_t i, size_t axis, kiln_input_dim_t& out) const {
    out = kiln_input_dim_t{};
    out.struct_size = sizeof(out);
    return Error(kiln_model_input_dim(m_, i, axis, &out));
  }
  // Input `i`'s shape with `symbols` bound (FAILED_PRECONDITION when they do
  // not determine it).
  Error input_shape(size_t i, const std::map<std::string, int64_t>& symbols, std::vector<int64_t>& out) const {
    std::vector<const char*> names;
    std::vector<int64_t> values;
    for (const auto& [name, value] : symbols) {
      names.push_back(name.c_str());
      values.push_back(value);
    }
    kiln_input_info_t info{};
    info.struct_size = sizeof(info);
    if (Error e{kiln_model_input_info(m_, i, &info)}) return e;
    std::vector<int64_t> shape(info.rank > 0 ? static_cast<size_t>(info.rank) : 0);
    size_t rank = 0;
    Error e(kiln_model_input_shape(m_, i, names.data(), values.data(), names.size(), shape.data(), shape.size(),
                                   &rank));
    if (!e) out.assign(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(rank));
    return e;
  }
  kiln_model_t* get() const { return m_; }

 private:
  void reset(kiln_model_t* m) {
    kiln_model_release(m_);
    m_ = m;
  }
  kiln_model_t* m_ = nullptr;
};

// A Vulkan device for sessions: Kiln's own, or the host's (wrap). Shared:
// each session on it holds a reference.
class VulkanDevice {
 public:
  VulkanDevice() = default;
  VulkanDevice(VulkanDevice&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  VulkanDevice& operator=(VulkanDevice&& o) noexcept {
    if (this != &o) {
      kiln_vulkan_device_release(d_);
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  VulkanDevice(const VulkanDevice&) = delete;
  VulkanDevice& operator=(const VulkanDevice&) = delete;
  ~VulkanDevice() { kiln_vulkan_device_release(d_); }

  // `selector`: "" = best device, an index, or part of a name.
  // `kernel_cache_dir`: nullptr = the default cache location, "" = memory only.
  static Error create(const std::string& selector, const char* kernel_cache_dir, VulkanDevice& out) {
    kiln_vulkan_device_options_t opts{};
    opts.struct_size = sizeof(opts);
    opts.selector = selector.c_str();
    opts.kernel_cache_dir = kernel_cache_dir;
    return create(opts, out);
  }
  // Full options (struct_size is set here).
  static Error create(kiln_vulkan_device_options_t options, VulkanDevice& out) {
    options.struct_size = sizeof(options);
    kiln_vulkan_device_t* d = nullptr;
    Error e(kiln_vulkan_device_create(&options, &d));
    if (!e) out.reset(d);
    return e;
  }
  uint64_t validation_errors() const { return kiln_vulkan_device_validation_errors(d_); }
  // The device's capabilities as JSON.
  Error describe_json(std::string& out) const {
    char* text = nullptr;
    kiln_status_t* s = kiln_vulkan_device_describe_json(d_, &text);
    return take_text(s, text, out);
  }
#ifdef KILN_KILN_VULKAN_H_
  // Wraps the host's VkInstance/VkDevice/queue (borrowed, never destroyed).
  static Error wrap(const kiln_vulkan_host_device_t& host, VulkanDevice& out) {
    kiln_vulkan_device_t* d = nullptr;
    Error e(kiln_vulkan_device_wrap(&host, &d));
    if (!e) out.reset(d);
    return e;
  }
#endif
  std::string name() const { return kiln_vulkan_device_name(d_); }
  kiln_vulkan_device_t* get() const { return d_; }

 private:
  void reset(kiln_vulkan_device_t* d) {
    kiln_vulkan_device_release(d_);
    d_ = d;
  }
  kiln_vulkan_device_t* d_ = nullptr;
};

class Session {
 public:
  Session() = default;
  Session(Session&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Session& operator=(Session&& o) noexcept {
    if (this != &o) {
      kiln_session_destroy(s_);
      s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
  }
  ~Session() { kiln_session_destroy(s_); }

  static Error create(const Model& model, kiln_backend_t backend, Session& out) {
    kiln_session_options_t opts{};
    opts.struct_size = sizeof(opts);
    opts.backend = backend;
    return create(model, opts, out);
  }
  // Full options (struct_size is set here).
  static Error create(const Model& model, kiln_session_options_t options, Session& out) {
    options.struct_size = sizeof(options);
    kiln_session_t* s = nullptr;
    Error e(kiln_session_create(model.get(), &options, &s));
    if (!e) {
      kiln_session_destroy(out.s_);
      out.s_ = s;
    }
    return e;
  }
  // A Vulkan session on `device` with buffer storage; `precision` FP32/FP16.
  static Error create(const Model& model, const VulkanDevice& device, kiln_precision_t precision, Session& out) {
    kiln_session_options_t opts{};
    opts.backend = KILN_BACKEND_VULKAN;
    opts.vulkan_device = device.get();
    opts.precision = precision;
    return create(model, opts, out);
  }

  kiln_backend_t backend() const { return kiln_session_backend(s_); }
  // The element type a bound buffer of input/output `name` must hold.
  Error device_dtype(const std::string& name, kiln_dtype_t& out) const {
    return Error(kiln_session_device_dtype(s_, name.c_str(), &out));
  }
#ifdef KILN_KILN_VULKAN_H_
  // Keeps input/output `name` in a range of a host VkBuffer (zero-copy); see
  // kiln_vulkan_buffer_binding_t. `shape` is for inputs (empty: the model's
  // static shape).
  Error bind_vulkan_buffer(const std::string& name, VkBuffer buffer, VkDeviceSize offset, VkDeviceSize size,
                           const std::vector<int64_t>& shape = {}) {
    kiln_vulkan_buffer_binding_t b{};
    b.struct_size = sizeof(b);
    b.buffer = buffer;
    b.offset = offset;
    b.size = size;
    b.shape = shape.empty() ? nullptr : shape.data();
    b.rank = shape.size();
    return Error(kiln_session_bind_vulkan_buffer(s_, name.c_str(), &b));
  }
  // Before destroying a VkBuffer bound to this session.
  void forget_vulkan_buffer(VkBuffer buffer) { kiln_session_forget_vulkan_buffer(s_, buffer); }
  // Reads input (writes output) `name` from (into) a host VkImage, converted
  // on the device; see kiln_vulkan_image_binding_t (struct_size is set here).
  Error bind_vulkan_image(const std::string& name, kiln_vulkan_image_binding_t binding) {
    binding.struct_size = sizeof(binding);
    return Error(kiln_session_bind_vulkan_image(s_, name.c_str(), &binding));
  }
  // Before destroying a VkImage bound to this session.
  void forget_vulkan_image(VkImage image) { kiln_session_forget_vulkan_image(s_, image); }
#endif
  // The last run's numbers, and its per-kernel GPU times (profile on).
  Error last_run_stats(kiln_run_stats_t& out) const {
    out = kiln_run_stats_t{};
    out.struct_size = sizeof(out);
    return Error(kiln_session_last_run_stats(s_, &out));
  }
  Error kernel_timing(size_t index, kiln_kernel_timing_t& out) const {
    out = kiln_kernel_timing_t{};
    out.struct_size = sizeof(out);
    return Error(kiln_session_kernel_timing(s_, index, &out));
  }
  // JSON descriptions of the compiled session and of its last run, and the
  // graph it runs (kiln.h "descriptions").
  Error describe_json(std::string& out) const {
    char* text = nullptr;
    kiln_status_t* s = kiln_session_describe_json(s_, &text);
    return take_text(s, text, out);
  }
  Error last_run_json(std::string& out) const {
    char* text = nullptr;
    kiln_status_t* s = kiln_session_last_run_json(s_, &text);
    return take_text(s, text, out);
  }
  Error graph(kiln_graph_format_t format, uint32_t flags, std::string& out) const {
    char* text = nullptr;
    kiln_status_t* s = kiln_session_graph(s_, format, flags, &text);
    return take_text(s, text, out);
  }
  Error unbind(const std::string& name) { return Error(kiln_session_unbind(s_, name.c_str())); }
  void unbind_all() { kiln_session_unbind_all(s_); }
  kiln_session_t* get() const { return s_; }

  // Runs with `inputs` in model order (nullptr for inputs bound to Vulkan
  // buffers); fills `outputs` in model order (empty for bound outputs).
  // With `stats`, this run's numbers (kiln_session_run_with_stats: right
  // even while other threads run the session).
  Error run(const std::vector<const Tensor*>& inputs, size_t output_count, std::vector<Tensor>& outputs,
            kiln_run_stats_t* stats = nullptr) {
    std::vector<const kiln_tensor_t*> in;
    for (const Tensor* t : inputs) in.push_back(t ? t->get() : nullptr);
    std::vector<kiln_tensor_t*> out(output_count, nullptr);
    if (stats) {
      *stats = kiln_run_stats_t{};
      stats->struct_size = sizeof(*stats);
    }
    Error e(kiln_session_run_with_stats(s_, in.data(), in.size(), out.data(), out.size(), stats));
    if (!e) {
      outputs.clear();
      for (kiln_tensor_t* t : out) outputs.emplace_back(t);
    }
    return e;
  }

 private:
  kiln_session_t* s_ = nullptr;
};

// The plugin catalogue a session with `options` would load (nullptr: the
// defaults), as JSON.
inline Error plugins_describe_json(const kiln_session_options_t* options, std::string& out) {
  char* text = nullptr;
  kiln_status_t* s = kiln_plugins_describe_json(options, &text);
  return take_text(s, text, out);
}

// The machine's Vulkan devices: JSON, or (text) a readable listing.
inline Error vulkan_devices_describe(bool text_listing, std::string& out) {
  char* text = nullptr;
  kiln_status_t* s = kiln_vulkan_devices_describe(text_listing ? 1u : 0u, &text);
  return take_text(s, text, out);
}

}  // namespace kiln::api

#endif  // KILN_KILN_HPP_
