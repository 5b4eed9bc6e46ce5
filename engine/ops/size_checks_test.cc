// Sizes a model asks for that overflow int64 or exceed the one-tensor limit
// are refused by shape inference with an error naming the node, never
// accepted with a wrapped shape: huge Tile repeats, Range bounds, window pads
// and dilations, and any static output over KILN_MAX_TENSOR_BYTES.
#include <gtest/gtest.h>

#include "engine/base/limits.h"
#include "engine/base/scoped_env.h"
#include "engine/ops/op_registry.h"
#include "engine/ops/op_test_util.h"

namespace kiln::ops {
namespace {

using ir::Attribute;
using ir::Dim;
using testing::info;
using testing::infer;
using testing::run_op;

ValueInfo constant(const Tensor& t) {
  ValueInfo v = info(t.dtype(), {});
  v.shape = ir::SymShape::from_concrete(t.shape());
  v.value = &t;
  return v;
}

std::string error_of(const StatusOr<std::vector<ValueInfo>>& r) {
  EXPECT_FALSE(r.ok()) << "accepted";
  return r.ok() ? std::string() : r.status().to_string();
}

TEST(SizeChecks, TileRepeatsThatOverflowAreAnError) {
  const Tensor reps = Tensor::from_vector<int64_t>({2}, {int64_t{1} << 40, 1});
  const std::string e = error_of(infer("Tile", {info(DType::kFloat32, {Dim(int64_t{1} << 30), Dim(3)}), constant(reps)}));
  EXPECT_NE(e.find("INVALID_ARGUMENT: node 'sym' (Tile)"), std::string::npos) << e;
  EXPECT_NE(e.find("overflow int64"), std::string::npos) << e;
}

TEST(SizeChecks, StaticOutputOverTheTensorLimitIsAnError) {
  const Tensor reps = Tensor::from_vector<int64_t>({2}, {1000, 1000});
  // 4 * 3 * 10^6 * 4 bytes = 48 MB: fine by default, refused under a 1 MiB cap.
  const ValueInfo x = info(DType::kFloat32, {Dim(4), Dim(3)});
  ASSERT_TRUE(infer("Tile", {x, constant(reps)}).ok());
  kiln::testing::ScopedEnv cap(std::string(kMaxTensorBytesEnv), "1048576");
  const std::string e = error_of(infer("Tile", {x, constant(reps)}));
  EXPECT_NE(e.find("OUT_OF_MEMORY: node 'sym' (Tile): output 0 [4000,3000] f32 needs"), std::string::npos) << e;
  EXPECT_NE(e.find("KILN_MAX_TENSOR_BYTES"), std::string::npos) << e;
  // Element count * dtype size beyond int64 is refused whatever the cap.
  const std::string o = error_of(infer("Relu", {info(DType::kFloat32, {Dim(int64_t{1} << 62), Dim(2)})}));
  EXPECT_NE(o.find("node 'sym' (Relu): output 0"), std::string::npos) << o;
  EXPECT_NE(o.find("overflows int64"), std::string::npos) << o;
}

TEST(SizeChecks, RangeWhoseLengthOverflowsIsAnError) {
  const Tensor start = Tensor::scalar_i64(INT64_MIN + 1), limit = Tensor::scalar_i64(INT64_MAX),
               delta = Tensor::scalar_i64(1);
  const std::string e = error_of(infer("Range", {constant(start), constant(limit), constant(delta)}));
  EXPECT_NE(e.find("node 'sym' (Range)"), std::string::npos) << e;
  // The kernel refuses the same at run time, and does not step past the end.
  auto r = run_op("Range", {start, limit, delta});
  ASSERT_FALSE(r.ok());
  auto edge = run_op("Range", {Tensor::scalar_i64(INT64_MAX - 1), Tensor::scalar_i64(INT64_MAX),
                               Tensor::scalar_i64(INT64_MAX)});
  ASSERT_TRUE(edge.ok()) << edge.status().to_string();
  EXPECT_EQ((*edge)[0].to_i64_vector(), (std::vector<int64_t>{INT64_MAX - 1}));
}

TEST(SizeChecks, HugePadsAndDilationsAreAnError) {
  const ValueInfo x = info(DType::kFloat32, {Dim(1), Dim(1), Dim(8), Dim(8)});
  const std::string pads = error_of(infer(
      "MaxPool", {x}, {{"kernel_shape", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({0, 0, INT64_MAX, 0})}}));
  EXPECT_NE(pads.find("node 'sym' (MaxPool): pads[2] = 9223372036854775807 is larger than the limit"),
            std::string::npos)
      << pads;
  const std::string dil = error_of(infer("MaxPool", {x},
                                         {{"kernel_shape", Attribute::of_ints({2, 2})},
                                          {"dilations", Attribute::of_ints({int64_t{1} << 62, 1})}}));
  EXPECT_NE(dil.find("dilations[0]"), std::string::npos) << dil;
  const ValueInfo w = info(DType::kFloat32, {Dim(1), Dim(1), Dim(3), Dim(3)});
  const std::string conv = error_of(infer("Conv", {x, w}, {{"strides", Attribute::of_ints({1, int64_t{1} << 40})}}));
  EXPECT_NE(conv.find("node 'sym' (Conv): strides[1]"), std::string::npos) << conv;
  // Large but valid pads still give the exact size: 8 + 0 + (2^31-1) - 3 + 1
  // (a symbolic batch keeps the output out of the one-tensor limit).
  const ValueInfo xn = info(DType::kFloat32, {Dim::symbol("n"), Dim(1), Dim(8), Dim(8)});
  auto big = infer("Conv", {xn, w}, {{"pads", Attribute::of_ints({0, 0, INT32_MAX, 0})}});
  ASSERT_TRUE(big.ok()) << big.status().to_string();
  EXPECT_EQ((*big)[0].shape.to_string(), "[n,1," + std::to_string(int64_t{INT32_MAX} + 6) + ",6]");
}

}  // namespace
}  // namespace kiln::ops
