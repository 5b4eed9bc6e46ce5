// .npy reading and writing; see npy.h.
#include "engine/base/npy.h"

#include "engine/base/file_checks.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>
#include <utility>

namespace kiln {

static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct Descr {
  const char* text;
  DType dtype;
};
constexpr Descr kDescrs[] = {
    {"<f4", DType::kFloat32}, {"<f2", DType::kFloat16}, {"<f8", DType::kFloat64}, {"<i8", DType::kInt64},
    {"<i4", DType::kInt32},   {"<i2", DType::kInt16},   {"<u2", DType::kUInt16},  {"<u4", DType::kUInt32},
    {"<u8", DType::kUInt64},  {"|u1", DType::kUInt8},   {"|i1", DType::kInt8},    {"|b1", DType::kBool},
};

const char* descr_of(DType dtype) {
  for (const Descr& d : kDescrs)
    if (d.dtype == dtype) return d.text;
  return nullptr;
}

// A cursor over the header's Python dict literal.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& what) : text_(text), what_(what) {}

  // Positions after `'key':`; false if the key is absent.
  bool find_key(std::string_view key) {
    for (char q : {'\'', '"'}) {
      std::string quoted = std::string(1, q) + std::string(key) + std::string(1, q);
      size_t at = text_.find(quoted);
      if (at == std::string_view::npos) continue;
      pos_ = at + quoted.size();
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ':') {
        ++pos_;
        skip_space();
        return true;
      }
    }
    return false;
  }
  StatusOr<std::string> quoted_string() {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) return error("expected a quoted string");
    const char q = text_[pos_++];
    const size_t end = text_.find(q, pos_);
    if (end == std::string_view::npos) return error("unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  StatusOr<bool> boolean() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    return error("expected True or False");
  }
  StatusOr<Shape> tuple() {
    if (pos_ >= text_.size() || text_[pos_] != '(') return error("expected a shape tuple");
    ++pos_;
    Shape shape;
    for (;;) {
      skip_space();
      if (pos_ >= text_.size()) return error("unterminated shape tuple");
      if (text_[pos_] == ')') {
        ++pos_;
        return shape;
      }
      int64_t v = 0;
      size_t digits = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) return error("shape dim is too large");
        v = v * 10 + (text_[pos_++] - '0');
        ++digits;
      }
      if (digits == 0) return error("expected a non-negative integer in the shape");
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 longs
      shape.push_back(v);
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') ++pos_;
      else if (pos_ < text_.size() && text_[pos_] != ')') return error("malformed shape tuple");
    }
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  Status error(const std::string& message) const {
    return invalid_argument(what_ + ": malformed .npy header (" + message + "): " + std::string(text_));
  }

  std::string_view text_;
  const std::string& what_;
  size_t pos_ = 0;
};

uint32_t read_le(const unsigned char* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

// What a .npy header says: the tensor's type and shape, and where its
// `nbytes` data bytes start.
struct NpyHeader {
  DType dtype = DType::kUndefined;
  Shape shape;
  size_t data_offset = 0;
  size_t nbytes = 0;
};

// The fixed prefix: magic, version, header length. `size` is the whole
// file's (or buffer's) size, which the header must fit in.
StatusOr<std::pair<size_t, size_t>> parse_prefix(const unsigned char* bytes, size_t have, size_t size,
                                                 const std::string& what) {
  if (have < kMagicLen + 4 || std::memcmp(bytes, kMagic, kMagicLen) != 0)
    return invalid_argument(what + " is not a .npy file (bad magic)");
  const int major = bytes[6];
  size_t header_len = 0;
  size_t header_start = 0;
  if (major == 1) {
    header_len = read_le(bytes + 8, 2);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (have < 12) return data_loss(what + ": truncated .npy header");
    header_len = read_le(bytes + 8, 4);
    header_start = 12;
  } else {
    return unimplemented(what + ": .npy format version " + std::to_string(major) + " is not supported");
  }
  if (header_len > size - header_start) return data_loss(what + ": truncated .npy header");
  return std::pair{header_start, header_len};
}

// Parses the header dict and checks that the `size` bytes hold the data.
StatusOr<NpyHeader> parse_header(std::string_view header, size_t header_end, size_t size, const std::string& what) {
  HeaderParser parser(header, what);
  if (!parser.find_key("descr")) return invalid_argument(what + ": .npy header has no 'descr'");
  KILN_ASSIGN_OR_RETURN(std::string descr, parser.quoted_string());
  if (!parser.find_key("fortran_order")) return invalid_argument(what + ": .npy header has no 'fortran_order'");
  KILN_ASSIGN_OR_RETURN(bool fortran, parser.boolean());
  if (!parser.find_key("shape")) return invalid_argument(what + ": .npy header has no 'shape'");
  NpyHeader out;
  KILN_ASSIGN_OR_RETURN(out.shape, parser.tuple());

  for (const Descr& d : kDescrs)
    if (descr == d.text) out.dtype = d.dtype;
  if (out.dtype == DType::kUndefined)
    return unimplemented(what + ": .npy dtype '" + descr +
                         "' is not supported (use little-endian f2/f4/f8, i1/i2/i4/i8, u1/u2/u4/u8 or b1)");
  if (fortran) return unimplemented(what + ": Fortran-order .npy arrays are not supported (save a C-order array)");

  int64_t numel = 1;
  for (int64_t d : out.shape) {
    if (d != 0 && numel > std::numeric_limits<int64_t>::max() / 16 / d)
      return invalid_argument(what + ": .npy shape " + shape_to_string(out.shape) + " is too large");
    numel *= d;
  }
  out.nbytes = static_cast<size_t>(numel) * dtype_size(out.dtype);
  out.data_offset = header_end;
  // The declared size is checked against the real one before anything is
  // allocated: a header claiming gigabytes over a small file is an error.
  const size_t available = size - header_end;
  if (available < out.nbytes)
    return data_loss(what + ": .npy data is truncated: shape " + shape_to_string(out.shape) + " of " +
                     std::string(dtype_name(out.dtype)) + " needs " + std::to_string(out.nbytes) +
                     " bytes, the file has " + std::to_string(available));
  return out;
}

// numpy bools are bytes 0/1; anything else would not be a valid C++ bool.
void normalize_bools(Tensor& t) {
  if (t.dtype() != DType::kBool) return;
  auto* b = static_cast<unsigned char*>(t.raw_data());
  for (size_t i = 0; i < t.nbytes(); ++i) b[i] = b[i] != 0;
}

}  // namespace

StatusOr<Tensor> parse_npy(const void* data, size_t size, const std::string& what) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  KILN_ASSIGN_OR_RETURN(auto prefix, parse_prefix(bytes, size, size, what));
  const auto [header_start, header_len] = prefix;
  const std::string_view text(reinterpret_cast<const char*>(bytes + header_start), header_len);
  KILN_ASSIGN_OR_RETURN(NpyHeader header, parse_header(text, header_start + header_len, size, what));
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(header.dtype, std::move(header.shape)));
  if (header.nbytes > 0) std::memcpy(t.raw_data(), bytes + header.data_offset, header.nbytes);
  normalize_bools(t);
  return t;
}

StatusOr<Tensor> read_npy(const std::string& path) {
  // Only the header and then exactly the data it declares are read, each
  // bounded by the file's size: no read waits for bytes that are not there
  // and no buffer is sized by anything but the file.
  KILN_ASSIGN_OR_RETURN(RegularFile file, open_regular_file(path, "input file"));
  const std::string what = "'" + path + "'";
  const size_t size = static_cast<size_t>(file.size);
  unsigned char prefix_bytes[12] = {};
  const size_t prefix_have = std::min(size, sizeof(prefix_bytes));
  KILN_RETURN_IF_ERROR(read_exact(file.fd.get(), prefix_bytes, static_cast<int64_t>(prefix_have), 0, what));
  KILN_ASSIGN_OR_RETURN(auto prefix, parse_prefix(prefix_bytes, prefix_have, size, what));
  const auto [header_start, header_len] = prefix;
  std::string text(header_len, '\0');
  KILN_RETURN_IF_ERROR(read_exact(file.fd.get(), text.data(), static_cast<int64_t>(header_len),
                                  static_cast<int64_t>(header_start), what));
  KILN_ASSIGN_OR_RETURN(NpyHeader header, parse_header(text, header_start + header_len, size, what));
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(header.dtype, std::move(header.shape)));
  KILN_RETURN_IF_ERROR(read_exact(file.fd.get(), t.raw_data(), static_cast<int64_t>(header.nbytes),
                                  static_cast<int64_t>(header.data_offset), what));
  normalize_bools(t);
  return t;
}

StatusOr<std::string> encode_npy(const Tensor& tensor) {
  const char* descr = descr_of(tensor.dtype());
  if (!descr) return unimplemented("dtype " + std::string(dtype_name(tensor.dtype())) + " has no .npy equivalent");
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape().size(); ++i) {
    shape += std::to_string(tensor.shape()[i]);
    shape += tensor.shape().size() == 1 ? "," : (i + 1 < tensor.shape().size() ? ", " : "");
  }
  shape += ")";
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // numpy pads the header with spaces and a newline so the data is 64-byte aligned.
  const bool v2 = header.size() + 11 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const uint32_t len = static_cast<uint32_t>(header.size());
  out += static_cast<char>(len & 0xFF);
  out += static_cast<char>((len >> 8) & 0xFF);
  if (v2) {
    out += static_cast<char>((len >> 16) & 0xFF);
    out += static_cast<char>((len >> 24) & 0xFF);
  }
  out += header;
  out.append(static_cast<const char*>(tensor.raw_data()), tensor.nbytes());
  return out;
}

Status write_npy(const std::string& path, const Tensor& tensor) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, encode_npy(tensor));
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return not_found("cannot create '" + path + "': " + std::strerror(errno));
  if (std::fwrite(bytes.data(), 1, bytes.size(), f.get()) != bytes.size() || std::fflush(f.get()) != 0)
    return data_loss("error writing '" + path + "': " + std::strerror(errno));
  return ok_status();
}

}  // namespace kiln
