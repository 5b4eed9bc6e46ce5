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
#ifndef KILN_KILN_HPP_
#define KILN_KILN_HPP_

#include <cstdint>
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

 private:
  kiln_status_t* s_ = nullptr;
};

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
  kiln_dtype_t dtype() const { return kiln_tensor_dtype(t_); }
  std::vector<int64_t> shape() const {
    std::vector<int64_t> s(kiln_tensor_rank(t_));
    for (size_t i = 0; i < s.size(); ++i) s[i] = kiln_tensor_dim(t_, i);
    return s;
  }
  size_t byte_size() const { return kiln_tensor_byte_size(t_); }
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
  size_t input_count() const { return kiln_model_input_count(m_); }
  size_t output_count() const { return kiln_model_output_count(m_); }
  std::string input_name(size_t i) const { return kiln_model_input_name(m_, i); }
  std::string output_name(size_t i) const { return kiln_model_output_name(m_, i); }
  kiln_model_t* get() const { return m_; }

 private:
  void reset(kiln_model_t* m) {
    kiln_model_release(m_);
    m_ = m;
  }
  kiln_model_t* m_ = nullptr;
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
    kiln_session_t* s = nullptr;
    Error e(kiln_session_create(model.get(), &opts, &s));
    if (!e) {
      kiln_session_destroy(out.s_);
      out.s_ = s;
    }
    return e;
  }

  // Runs with `inputs` in model order; fills `outputs` in model order.
  Error run(const std::vector<const Tensor*>& inputs, size_t output_count, std::vector<Tensor>& outputs) {
    std::vector<const kiln_tensor_t*> in;
    for (const Tensor* t : inputs) in.push_back(t ? t->get() : nullptr);
    std::vector<kiln_tensor_t*> out(output_count, nullptr);
    Error e(kiln_session_run(s_, in.data(), in.size(), out.data(), out.size()));
    if (!e) {
      outputs.clear();
      for (kiln_tensor_t* t : out) outputs.emplace_back(t);
    }
    return e;
  }

 private:
  kiln_session_t* s_ = nullptr;
};

}  // namespace kiln::api

#endif  // KILN_KILN_HPP_
