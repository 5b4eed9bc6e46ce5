// Status and StatusOr: Kiln's one error type inside C++.
//
// The core library builds with -fno-exceptions, so every fallible function
// returns a Status (or StatusOr<T>). A Status is one pointer wide: null means
// success, so the happy path costs nothing. Errors carry a canonical code and
// a message; KILN_RETURN_IF_ERROR prepends context ("node 'conv1' (Conv): ")
// on the way up so that the final message says what was wrong and where.
#pragma once

#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace kiln {

// Canonical codes. The numeric values are part of the C API (kiln_status_code_t).
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,   // bad input from the caller: malformed model, wrong shape
  kNotFound = 2,          // missing file, device, input name
  kUnimplemented = 3,     // unsupported op, dtype or feature
  kOutOfMemory = 4,       // host or device allocation failed
  kDeviceLost = 5,        // the GPU is gone; sticky
  kInternal = 6,          // a bug in Kiln
  kFailedPrecondition = 7,// call made in the wrong state
  kUnavailable = 8,       // no Vulkan driver, no device
  kPermissionDenied = 9,  // e.g. external data outside the model's directory
  kOutOfRange = 10,       // index or value outside its valid range
  kDataLoss = 11,         // truncated or corrupt file
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  // The message without the code prefix; empty for OK.
  const std::string& message() const;
  // "INVALID_ARGUMENT: node 'x' (Conv): ..." for logs and the CLI.
  std::string to_string() const;

  // Prepends "context: " to the message. No-op on OK.
  Status& add_context(std::string_view context) &;
  Status&& add_context(std::string_view context) &&;

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<State> state_;
};

inline Status ok_status() { return Status(); }
Status invalid_argument(std::string message);
Status not_found(std::string message);
Status unimplemented(std::string message);
Status internal_error(std::string message);
Status out_of_memory(std::string message);
Status failed_precondition(std::string message);
Status unavailable(std::string message);
Status permission_denied(std::string message);
Status out_of_range(std::string message);
Status data_loss(std::string message);

namespace detail {
// Prints "StatusOr::value() on an error: <status>" to stderr and aborts.
// Reading the value of an error is a programmer error; stopping with the
// error's own message beats reading uninitialized storage.
[[noreturn]] void die_on_error_value_access(const Status& status);
}  // namespace detail

// A value or an error. Accessing value() of an error is a programmer error
// and stops the process with the error's message.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = internal_error("StatusOr constructed from OK status");
  }
  StatusOr(T value) : has_value_(true) { new (&storage_) T(std::move(value)); }  // NOLINT
  template <typename U, typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                                    !std::is_same_v<std::decay_t<U>, T> &&
                                                    !std::is_same_v<std::decay_t<U>, Status>>>
  StatusOr(U&& value) : has_value_(true) {  // NOLINT
    new (&storage_) T(std::forward<U>(value));
  }
  StatusOr(StatusOr&& other) noexcept : status_(std::move(other.status_)), has_value_(other.has_value_) {
    if (has_value_) new (&storage_) T(std::move(*other.ptr()));
  }
  StatusOr& operator=(StatusOr&& other) noexcept {
    if (this != &other) {
      reset();
      status_ = std::move(other.status_);
      has_value_ = other.has_value_;
      if (has_value_) new (&storage_) T(std::move(*other.ptr()));
    }
    return *this;
  }
  StatusOr(const StatusOr&) = delete;
  StatusOr& operator=(const StatusOr&) = delete;
  ~StatusOr() { reset(); }

  bool ok() const { return has_value_; }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  T& value() & { return *ptr(); }
  const T& value() const& { return *ptr(); }
  T&& value() && { return std::move(*ptr()); }
  T& operator*() & { return *ptr(); }
  const T& operator*() const& { return *ptr(); }
  T* operator->() { return ptr(); }
  const T* operator->() const { return ptr(); }

 private:
  T* ptr() {
    if (!has_value_) detail::die_on_error_value_access(status_);
    return std::launder(reinterpret_cast<T*>(&storage_));
  }
  const T* ptr() const {
    if (!has_value_) detail::die_on_error_value_access(status_);
    return std::launder(reinterpret_cast<const T*>(&storage_));
  }
  void reset() {
    if (has_value_) ptr()->~T();
    has_value_ = false;
  }

  Status status_;
  bool has_value_ = false;
  alignas(T) unsigned char storage_[sizeof(T)];
};

namespace detail {
inline Status as_status(Status s) { return s; }
template <typename T>
Status as_status(StatusOr<T>&& s) {
  return std::move(s).status();
}
}  // namespace detail

}  // namespace kiln

#define KILN_CONCAT_INNER_(a, b) a##b
#define KILN_CONCAT_(a, b) KILN_CONCAT_INNER_(a, b)

// Returns the error from `expr`, if any.
#define KILN_RETURN_IF_ERROR(expr)                           \
  do {                                                       \
    ::kiln::Status kiln_status_ = (expr);                    \
    if (!kiln_status_.ok()) return kiln_status_;             \
  } while (0)

// Returns the error from `expr` with "context: " prepended.
#define KILN_RETURN_IF_ERROR_CTX(expr, context)                               \
  do {                                                                        \
    ::kiln::Status kiln_status_ = (expr);                                     \
    if (!kiln_status_.ok()) return std::move(kiln_status_).add_context(context); \
  } while (0)

#define KILN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return std::move(tmp).status();    \
  lhs = std::move(tmp).value()

// `lhs = value of expr`, or return its error. lhs may be a declaration.
#define KILN_ASSIGN_OR_RETURN(lhs, expr) \
  KILN_ASSIGN_OR_RETURN_IMPL_(KILN_CONCAT_(kiln_statusor_, __LINE__), lhs, expr)
