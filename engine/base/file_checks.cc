// Regular-file checks and bounded reads; see file_checks.h.
#include "engine/base/file_checks.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kiln {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

const char* file_type_name(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symlink";
  return "not a file";
}

Status require_regular_file(const struct stat& st, const std::string& what, const std::string& path) {
  if (S_ISREG(st.st_mode)) return ok_status();
  return invalid_argument(what + " '" + path + "' is " + file_type_name(st.st_mode) +
                          ", not a regular file; Kiln reads only regular files");
}

Status check_regular_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return not_found("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  return require_regular_file(st, what, path);
}

StatusOr<RegularFile> open_regular_file(const std::string& path, const std::string& what) {
  // Checked by path first so that a device is never even opened (opening
  // some devices has effects); then again on the descriptor, which is what
  // will be read.
  KILN_RETURN_IF_ERROR(check_regular_file(path, what));
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) return not_found("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return not_found("cannot stat " + what + " '" + path + "': " + std::strerror(errno));
  KILN_RETURN_IF_ERROR(require_regular_file(st, what, path));
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0)
    return internal_error("cannot make " + what + " '" + path + "' blocking: " + std::strerror(errno));
  RegularFile out;
  out.fd = std::move(fd);
  out.size = static_cast<int64_t>(st.st_size);
  return out;
}

Status read_exact(int fd, void* dst, int64_t bytes, int64_t offset, const std::string& what) {
  auto* out = static_cast<unsigned char*>(dst);
  int64_t done = 0;
  while (done < bytes) {
    const size_t chunk = static_cast<size_t>(std::min<int64_t>(bytes - done, int64_t{1} << 30));
    const ssize_t got = ::pread(fd, out + done, chunk, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      return data_loss(what + ": read failed at byte " + std::to_string(offset + done) +
                       (got < 0 ? std::string(": ") + std::strerror(errno) : ": unexpected end of file"));
    done += got;
  }
  return ok_status();
}

}  // namespace kiln
