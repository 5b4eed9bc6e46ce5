// TensorProto conversion and confined external-data reading; see onnx_tensor.h.
#include "frontends/onnx/onnx_tensor.h"

#include "engine/base/file_checks.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <vector>

namespace kiln::onnx {

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian; a big-endian host needs byte swapping here");

namespace {

using ::onnx::TensorProto;

std::string errno_text(int err) { return std::strerror(err); }

// Element count of `dims`, or an error for negative dims or overflow.
StatusOr<int64_t> checked_numel(const TensorProto& proto, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0) return invalid_argument(what + " has negative dim " + std::to_string(d));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / 16 / d)
      return invalid_argument(what + " has a shape whose element count overflows");
    n *= d;
  }
  return n;
}

std::string dims_text(const TensorProto& proto) {
  return shape_to_string(Shape(proto.dims().begin(), proto.dims().end()));
}

// Copies typed repeated-field values into `out`, converting to the storage
// type. `count` was checked against the shape by the caller.
template <typename Dst, typename Field>
void copy_field(const Field& field, Tensor& out) {
  Dst* dst = out.data<Dst>();
  int i = 0;
  for (const auto& v : field) {
    if constexpr (std::is_same_v<Dst, bool>) {
      dst[i++] = v != 0;
    } else if constexpr (std::is_same_v<Dst, Half>) {
      Half h;
      h.bits = static_cast<uint16_t>(v & 0xFFFF);  // fp16 travels as its bit pattern in int32_data
      dst[i++] = h;
    } else {
      dst[i++] = static_cast<Dst>(v);
    }
  }
}

Status size_mismatch(const std::string& what, const char* field, int64_t have, const TensorProto& proto, DType dtype,
                     int64_t need, const char* unit) {
  return invalid_argument(what + ": " + field + " has " + std::to_string(have) + " " + unit + ", but shape " +
                          dims_text(proto) + " of " + std::string(dtype_name(dtype)) + " needs " +
                          std::to_string(need));
}

// The typed field the spec assigns to `dtype`, and how many values it holds.
std::pair<const char*, int64_t> typed_field(const TensorProto& proto, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return {"float_data", proto.float_data_size()};
    case DType::kFloat64: return {"double_data", proto.double_data_size()};
    case DType::kInt64: return {"int64_data", proto.int64_data_size()};
    case DType::kUInt32:
    case DType::kUInt64: return {"uint64_data", proto.uint64_data_size()};
    default: return {"int32_data", proto.int32_data_size()};  // int8..int32, uint8/16, bool, fp16
  }
}

// Fills `out` from the typed field; its size was checked by the caller.
void read_typed_fields(const TensorProto& proto, DType dtype, Tensor& out) {
  visit_dtype(dtype, [&]<typename T>() {
    if constexpr (std::is_same_v<T, float>) {
      copy_field<T>(proto.float_data(), out);
    } else if constexpr (std::is_same_v<T, double>) {
      copy_field<T>(proto.double_data(), out);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      copy_field<T>(proto.int64_data(), out);
    } else if constexpr (std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>) {
      copy_field<T>(proto.uint64_data(), out);
    } else {
      copy_field<T>(proto.int32_data(), out);
    }
  });
}

// Parses a decimal external-data field ("offset", "length").
StatusOr<int64_t> parse_size(const std::string& text, const std::string& key, const std::string& what) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < 0)
    return invalid_argument(what + ": external data '" + key + "' is not a non-negative integer: '" + text + "'");
  return v;
}

// Reads external data. The file is opened and its size checked before the
// tensor is allocated, so a hostile shape cannot force a huge allocation.
StatusOr<Tensor> read_external(const TensorProto& proto, const std::string& what, const ExternalDataPolicy& policy,
                               DType dtype, Shape shape, int64_t nbytes) {
  if (!policy.allowed) return permission_denied(what + " uses external data, which the import options forbid");
  if (policy.base_dir.empty())
    return invalid_argument(what + " uses external data, but the model was given as bytes without a directory");
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  bool has_location = false;
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
      has_location = true;
    } else if (entry.key() == "offset") {
      KILN_ASSIGN_OR_RETURN(offset, parse_size(entry.value(), "offset", what));
    } else if (entry.key() == "length") {
      KILN_ASSIGN_OR_RETURN(length, parse_size(entry.value(), "length", what));
    }
  }
  if (!has_location || location.empty()) return invalid_argument(what + ": external data has no 'location'");
  if (length >= 0 && length != nbytes)
    return invalid_argument(what + ": external data 'length' is " + std::to_string(length) + " bytes, but shape " +
                            dims_text(proto) + " of " + std::string(dtype_name(dtype)) + " needs " +
                            std::to_string(nbytes));
  KILN_ASSIGN_OR_RETURN(int raw_fd, open_confined(policy.base_dir, location, what));
  UniqueFd fd(raw_fd);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return not_found(what + ": cannot stat external data file '" + location + "'");
  const int64_t file_size = st.st_size;
  if (offset > file_size || nbytes > file_size - offset)
    return data_loss(what + ": external data file '" + location + "' has " + std::to_string(file_size) +
                     " bytes, too short for " + std::to_string(nbytes) + " bytes at offset " + std::to_string(offset));
  auto allocated = Tensor::allocate(dtype, std::move(shape));
  if (!allocated.ok()) return std::move(allocated).status().add_context(what);
  Tensor out = std::move(allocated).value();
  KILN_RETURN_IF_ERROR(read_exact(fd.get(), out.raw_data(), nbytes, offset,
                                  what + ": reading external data file '" + location + "'"));
  return out;
}

}  // namespace

StatusOr<DType> dtype_from_onnx(int32_t onnx_type, const std::string& what) {
  switch (onnx_type) {
    case TensorProto::FLOAT: return DType::kFloat32;
    case TensorProto::UINT8: return DType::kUInt8;
    case TensorProto::INT8: return DType::kInt8;
    case TensorProto::UINT16: return DType::kUInt16;
    case TensorProto::INT16: return DType::kInt16;
    case TensorProto::INT32: return DType::kInt32;
    case TensorProto::INT64: return DType::kInt64;
    case TensorProto::BOOL: return DType::kBool;
    case TensorProto::FLOAT16: return DType::kFloat16;
    case TensorProto::DOUBLE: return DType::kFloat64;
    case TensorProto::UINT32: return DType::kUInt32;
    case TensorProto::UINT64: return DType::kUInt64;
    case TensorProto::STRING: return unimplemented(what + " has element type string, which Kiln does not support");
    case TensorProto::COMPLEX64:
    case TensorProto::COMPLEX128: return unimplemented(what + " has a complex element type, which Kiln does not support");
    case TensorProto::BFLOAT16: return unimplemented(what + " has element type bfloat16, which Kiln does not support");
    case TensorProto::UNDEFINED: return invalid_argument(what + " has an undefined element type");
    // Types of ONNX 1.14+ (newer than the schema Kiln builds with), which
    // quantizers emit: named, so that the error says what the model needs.
    case 17: case 18: case 19: case 20:
      return unimplemented(what + " has a float8 element type (ONNX type " + std::to_string(onnx_type) +
                           "), which Kiln does not support");
    case 21: return unimplemented(what + " has element type uint4, which Kiln does not support");
    case 22: return unimplemented(what + " has element type int4, which Kiln does not support");
    case 23: return unimplemented(what + " has element type float4e2m1, which Kiln does not support");
    default: return invalid_argument(what + " has unknown element type " + std::to_string(onnx_type));
  }
}

int32_t dtype_to_onnx(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return TensorProto::FLOAT;
    case DType::kFloat16: return TensorProto::FLOAT16;
    case DType::kFloat64: return TensorProto::DOUBLE;
    case DType::kInt8: return TensorProto::INT8;
    case DType::kUInt8: return TensorProto::UINT8;
    case DType::kInt16: return TensorProto::INT16;
    case DType::kUInt16: return TensorProto::UINT16;
    case DType::kInt32: return TensorProto::INT32;
    case DType::kUInt32: return TensorProto::UINT32;
    case DType::kInt64: return TensorProto::INT64;
    case DType::kUInt64: return TensorProto::UINT64;
    case DType::kBool: return TensorProto::BOOL;
    case DType::kUndefined: return TensorProto::UNDEFINED;
  }
  return TensorProto::UNDEFINED;
}

namespace {

// A file with more than one link may be the same inode as a file outside
// the model's directory (a hard link is indistinguishable from its
// original), so confinement by path alone would not hold: refused.
Status refuse_hard_link(const struct stat& st, const std::string& what, const std::string& quoted) {
  if (st.st_nlink <= 1) return ok_status();
  return permission_denied(what + ": " + quoted + " is a hard link (" + std::to_string(st.st_nlink) +
                           " links); a hard link may point outside the model's directory, so it is not read "
                           "(copy the file instead)");
}

}  // namespace

StatusOr<int> open_confined(const std::string& base_dir, const std::string& location, const std::string& what) {
  const std::string quoted = "external data path '" + location + "'";
  if (location.empty()) return invalid_argument(what + ": external data has an empty 'location'");
  if (location.find('\0') != std::string::npos)
    return permission_denied(what + ": " + quoted + " contains a NUL byte");
  if (location.front() == '/') return permission_denied(what + ": " + quoted + " is absolute; it must be relative to the model's directory");
  if (location.find('\\') != std::string::npos)
    return permission_denied(what + ": " + quoted + " contains a backslash; use '/' separators");
  std::vector<std::string> parts;
  for (size_t start = 0; start <= location.size();) {
    size_t slash = location.find('/', start);
    if (slash == std::string::npos) slash = location.size();
    std::string part = location.substr(start, slash - start);
    if (part == "..") return permission_denied(what + ": " + quoted + " contains '..'; it must stay inside the model's directory");
    if (!part.empty() && part != ".") parts.push_back(std::move(part));
    start = slash + 1;
  }
  if (parts.empty()) return invalid_argument(what + ": " + quoted + " names no file");

  // Walk component by component with O_NOFOLLOW so that no symlink is ever
  // followed, not even one swapped in between a check and the open.
  UniqueFd dir(::open(base_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0)
    return not_found(what + ": cannot open the model's directory '" + base_dir + "': " + errno_text(errno));
  std::string walked;
  for (size_t i = 0; i < parts.size(); ++i) {
    walked += (walked.empty() ? "" : "/") + parts[i];
    struct stat st {};
    if (::fstatat(dir.get(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return not_found(what + ": " + quoted + ": '" + walked + "' does not exist in '" + base_dir + "'");
    if (S_ISLNK(st.st_mode))
      return permission_denied(what + ": " + quoted + " passes through the symlink '" + walked + "'; symlinks are not followed");
    const bool last = i + 1 == parts.size();
    if (!last && !S_ISDIR(st.st_mode))
      return not_found(what + ": " + quoted + ": '" + walked + "' is not a directory");
    if (last && !S_ISREG(st.st_mode))
      return permission_denied(what + ": " + quoted + " is " + file_type_name(st.st_mode) + ", not a regular file");
    if (last) KILN_RETURN_IF_ERROR(refuse_hard_link(st, what, quoted));
    // O_NONBLOCK: a FIFO swapped in after the fstatat cannot block the open
    // (the descriptor is read with pread, which O_NONBLOCK does not affect
    // on a regular file).
    const int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (last ? 0 : O_DIRECTORY);
    UniqueFd next(::openat(dir.get(), parts[i].c_str(), flags));
    if (next.get() < 0) {
      if (errno == ELOOP) return permission_denied(what + ": " + quoted + " passes through the symlink '" + walked + "'");
      return not_found(what + ": cannot open '" + walked + "' in '" + base_dir + "': " + errno_text(errno));
    }
    if (last) {
      struct stat fst {};
      if (::fstat(next.get(), &fst) != 0 || !S_ISREG(fst.st_mode))
        return permission_denied(what + ": " + quoted + " is not a regular file");
      KILN_RETURN_IF_ERROR(refuse_hard_link(fst, what, quoted));
      return next.release();
    }
    dir.reset(next.release());
  }
  return internal_error(what + ": unreachable");
}

StatusOr<Tensor> tensor_from_proto(const TensorProto& proto, const std::string& what, const ExternalDataPolicy& policy) {
  if (proto.has_segment()) return unimplemented(what + " is segmented, which Kiln does not support");
  KILN_ASSIGN_OR_RETURN(DType dtype, dtype_from_onnx(proto.data_type(), what));
  KILN_ASSIGN_OR_RETURN(int64_t numel, checked_numel(proto, what));
  const int64_t elem = static_cast<int64_t>(dtype_size(dtype));
  if (numel > std::numeric_limits<int64_t>::max() / elem)
    return invalid_argument(what + " has a shape whose byte size overflows");
  const int64_t nbytes = numel * elem;
  Shape shape(proto.dims().begin(), proto.dims().end());

  const bool external = proto.has_data_location() && proto.data_location() == TensorProto::EXTERNAL;
  if (external) return read_external(proto, what, policy, dtype, std::move(shape), nbytes);
  // Sizes are checked before allocating, so a hostile shape with no data
  // behind it never turns into a huge allocation.
  if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != nbytes)
      return size_mismatch(what, "raw_data", static_cast<int64_t>(proto.raw_data().size()), proto, dtype, nbytes,
                           "bytes");
  } else {
    auto [field, have] = typed_field(proto, dtype);
    if (have != numel) {
      if (have == 0) return invalid_argument(what + " has no data (shape " + dims_text(proto) + ")");
      return size_mismatch(what, field, have, proto, dtype, numel, "values");
    }
  }
  auto allocated = Tensor::allocate(dtype, std::move(shape));
  if (!allocated.ok()) return std::move(allocated).status().add_context(what);
  Tensor out = std::move(allocated).value();
  if (proto.has_raw_data()) {
    if (nbytes > 0) std::memcpy(out.raw_data(), proto.raw_data().data(), static_cast<size_t>(nbytes));
  } else {
    read_typed_fields(proto, dtype, out);
  }
  return out;
}

}  // namespace kiln::onnx
