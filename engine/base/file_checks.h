// Opening and reading files Kiln is told to read, refusing anything that is
// not a regular file before a byte is read.
//
// Models, external weights, .npy/.pb inputs and plugins come from paths a
// user (or a model) names. A FIFO blocks a plain open() forever, a device
// such as /dev/zero never ends, a directory is no file: each is refused here
// with an error naming the path and what it is. open_regular_file opens with
// O_NONBLOCK (a FIFO swapped in after a check cannot block the open either)
// and checks the opened descriptor, so there is no window between the check
// and the read. Reads are bounded by the size the caller expects and by the
// file's real size, so a header that lies cannot make Kiln allocate or wait
// for bytes that are not there. One helper for every reader keeps those
// rules in one place.
//
// Thread-safety: the functions are re-entrant.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "engine/base/status.h"

namespace kiln {

// Closes a file descriptor on scope exit; -1 holds nothing.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  void reset(int fd = -1);
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// What a file of mode `mode` is, for messages: "a regular file", "a FIFO",
// "a character device", "a directory", ...
const char* file_type_name(mode_t mode);

// OK when `st` describes a regular file; INVALID_ARGUMENT "<what> '<path>'
// is a FIFO, not a regular file" otherwise.
Status require_regular_file(const struct stat& st, const std::string& what, const std::string& path);

// The same check by path (stat, following symlinks), for readers that cannot
// take a descriptor (dlopen). NOT_FOUND when the path does not exist.
Status check_regular_file(const std::string& path, const std::string& what);

// A regular file opened read-only (blocking reads), with its size when opened.
struct RegularFile {
  UniqueFd fd;
  int64_t size = 0;
};

// Opens `path` read-only if it is a regular file. `what` names it in errors
// ("model file", "input file"). NOT_FOUND when it cannot be opened,
// INVALID_ARGUMENT when it is not a regular file.
StatusOr<RegularFile> open_regular_file(const std::string& path, const std::string& what);

// Reads exactly `bytes` bytes at `offset` into `dst` (retrying short reads).
// DATA_LOSS naming `what` when the file ends early or a read fails.
Status read_exact(int fd, void* dst, int64_t bytes, int64_t offset, const std::string& what);

}  // namespace kiln
