// Tests for .npy reading/writing: round trips, bytes numpy itself writes,
// and every malformed-input error path.
#include "engine/base/npy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <string>

namespace kiln {
namespace {

// What np.save(f, np.array([[1.5, -2.0, 3.25]], dtype=np.float32)) writes.
std::string numpy_f32_bytes() {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size());
  out += '\0';
  out += header;
  const float v[3] = {1.5f, -2.0f, 3.25f};
  out.append(reinterpret_cast<const char*>(v), sizeof(v));
  return out;
}

TEST(Npy, ParsesNumpyOutput) {
  const std::string bytes = numpy_f32_bytes();
  auto t = parse_npy(bytes.data(), bytes.size());
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->dtype(), DType::kFloat32);
  EXPECT_EQ(shape_to_string(t->shape()), "[1,3]");
  EXPECT_EQ(t->to_f32_vector(), (std::vector<float>{1.5f, -2.0f, 3.25f}));
}

TEST(Npy, RoundTripsEveryDtype) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kInt64, DType::kInt32, DType::kInt16,
                      DType::kUInt8, DType::kInt8, DType::kBool, DType::kUInt16, DType::kUInt32, DType::kUInt64}) {
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3, 1}, Shape{0, 4}}) {
      auto t = Tensor::allocate(dtype, shape);
      ASSERT_TRUE(t.ok());
      for (int64_t i = 0; i < t->numel(); ++i) t->set_f64(i, dtype == DType::kBool ? (i % 2) : static_cast<double>(i * 3 % 7));
      auto bytes = encode_npy(*t);
      ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
      EXPECT_EQ((bytes->size() - t->nbytes()) % 64, 0u) << "data must be 64-byte aligned";
      auto back = parse_npy(bytes->data(), bytes->size());
      ASSERT_TRUE(back.ok()) << back.status().to_string();
      EXPECT_EQ(back->dtype(), dtype);
      EXPECT_EQ(shape_to_string(back->shape()), shape_to_string(shape));
      for (int64_t i = 0; i < t->numel(); ++i) EXPECT_EQ(back->get_f64(i), t->get_f64(i));
    }
  }
}

TEST(Npy, FileRoundTrip) {
  const std::string path = ::testing::TempDir() + "/kiln_npy_test.npy";
  Tensor t = Tensor::from_vector<int64_t>({2, 2}, {1, -2, 3, -4});
  ASSERT_TRUE(write_npy(path, t).ok());
  auto back = read_npy(path);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->to_i64_vector(), (std::vector<int64_t>{1, -2, 3, -4}));
  std::remove(path.c_str());
  auto missing = read_npy(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(Npy, RejectsMalformedInput) {
  const std::string good = numpy_f32_bytes();
  auto expect_error = [](const std::string& bytes, StatusCode code, const std::string& fragment) {
    auto t = parse_npy(bytes.data(), bytes.size(), "'x.npy'");
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), code) << t.status().to_string();
    EXPECT_NE(t.status().message().find(fragment), std::string::npos) << t.status().to_string();
    EXPECT_NE(t.status().message().find("'x.npy'"), std::string::npos);
  };
  expect_error("not numpy at all", StatusCode::kInvalidArgument, "bad magic");
  expect_error(good.substr(0, good.size() - 1), StatusCode::kDataLoss, "truncated");
  expect_error(good.substr(0, 30), StatusCode::kDataLoss, "truncated .npy header");
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  expect_error(fortran, StatusCode::kUnimplemented, "Fortran");
  std::string big_endian = good;
  big_endian.replace(big_endian.find("<f4"), 3, ">f4");
  expect_error(big_endian, StatusCode::kUnimplemented, "'>f4'");
  std::string object = good;
  object.replace(object.find("<f4"), 3, "|O8");
  expect_error(object, StatusCode::kUnimplemented, "'|O8'");
  std::string bad_shape = good;
  bad_shape.replace(bad_shape.find("(1, 3)"), 6, "(1, x)");
  expect_error(bad_shape, StatusCode::kInvalidArgument, "shape");
  std::string version = good;
  version[6] = 9;
  expect_error(version, StatusCode::kUnimplemented, "version 9");
}

// Files that are not regular files are refused before a byte is read: a
// FIFO would block, /dev/zero would be read until memory runs out.
TEST(Npy, RefusesFilesThatAreNotRegular) {
  const std::string fifo = ::testing::TempDir() + "/kiln_npy_test_fifo.npy";
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, std::string("/dev/zero"), ::testing::TempDir()}) {
    auto t = read_npy(path);
    ASSERT_FALSE(t.ok()) << path;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << t.status().to_string();
    EXPECT_NE(t.status().message().find("not a regular file"), std::string::npos) << t.status().to_string();
    EXPECT_NE(t.status().message().find(path), std::string::npos) << t.status().to_string();
  }
  EXPECT_NE(read_npy(fifo).status().message().find("is a FIFO"), std::string::npos);
  EXPECT_NE(read_npy("/dev/zero").status().message().find("is a character device"), std::string::npos);
  std::remove(fifo.c_str());
}

// A header that declares more data than the file holds is an error before
// anything is allocated (4 GiB of float32 here, over a few bytes).
TEST(Npy, HeaderClaimingMoreThanTheFileIsAnError) {
  std::string bytes = numpy_f32_bytes();
  bytes.replace(bytes.find("(1, 3)"), 6, "(1073741824,)");
  const std::string path = ::testing::TempDir() + "/kiln_npy_test_huge.npy";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
  auto t = read_npy(path);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kDataLoss) << t.status().to_string();
  EXPECT_NE(t.status().message().find("needs 4294967296 bytes"), std::string::npos) << t.status().to_string();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kiln
