// Status implementation; see status.h.
#include "engine/base/status.h"

#include <cstdio>
#include <cstdlib>

namespace kiln {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kOutOfMemory: return "OUT_OF_MEMORY";
    case StatusCode::kDeviceLost: return "DEVICE_LOST";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
  }
  return "UNKNOWN";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) state_ = std::make_unique<State>(State{code, std::move(message)});
}

Status::Status(const Status& other)
    : state_(other.state_ ? std::make_unique<State>(*other.state_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) state_ = other.state_ ? std::make_unique<State>(*other.state_) : nullptr;
  return *this;
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->message : kEmpty;
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  return std::string(status_code_name(state_->code)) + ": " + state_->message;
}

Status& Status::add_context(std::string_view context) & {
  if (state_) state_->message = std::string(context) + ": " + state_->message;
  return *this;
}

Status&& Status::add_context(std::string_view context) && {
  if (state_) state_->message = std::string(context) + ": " + state_->message;
  return std::move(*this);
}

Status invalid_argument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
Status not_found(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
Status unimplemented(std::string m) { return Status(StatusCode::kUnimplemented, std::move(m)); }
Status internal_error(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
Status out_of_memory(std::string m) { return Status(StatusCode::kOutOfMemory, std::move(m)); }
Status failed_precondition(std::string m) { return Status(StatusCode::kFailedPrecondition, std::move(m)); }
Status unavailable(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
Status permission_denied(std::string m) { return Status(StatusCode::kPermissionDenied, std::move(m)); }
Status out_of_range(std::string m) { return Status(StatusCode::kOutOfRange, std::move(m)); }
Status data_loss(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }

namespace detail {
void die_on_error_value_access(const Status& status) {
  std::fprintf(stderr, "kiln: fatal: StatusOr::value() on an error: %s\n", status.to_string().c_str());
  std::fflush(stderr);
  std::abort();
}
}  // namespace detail

}  // namespace kiln
