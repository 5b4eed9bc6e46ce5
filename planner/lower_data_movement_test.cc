// Differential tests of the data-movement lowerings (lower_data_movement.cc)
// against the reference executor, in every backend config (check_op).
// Shape-like inputs (target shapes, axes, pads) are constants, as in
// exported models, or small graph inputs (host values per run) where a test
// says so; data and indices are device tensors.
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "planner/testing/op_check.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::check_op;
using testing::OpCheck;
using testing::random_tensor;

class LowerDataMovement : public vk::testing::VulkanTest {};

ir::Attribute i_attr(int64_t v) { return ir::Attribute::of_int(v); }
ir::Attribute ints_attr(std::vector<int64_t> v) { return ir::Attribute::of_ints(std::move(v)); }
ir::Attribute s_attr(std::string v) { return ir::Attribute::of_string(std::move(v)); }
Tensor i64(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }

Tensor random_i64(const Shape& shape, uint64_t seed, int64_t lo, int64_t hi) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  std::vector<int64_t> v(static_cast<size_t>(shape_numel(shape)));
  for (int64_t& x : v) x = dist(rng);
  return Tensor::from_vector<int64_t>(shape, v);
}

OpCheck op(const std::string& name, std::vector<Tensor> inputs, std::vector<size_t> constants = {},
           std::map<std::string, ir::Attribute> attrs = {}) {
  OpCheck c;
  c.op = name;
  c.inputs = std::move(inputs);
  c.constant_inputs = std::move(constants);
  c.attrs = std::move(attrs);
  c.tol_f32 = 1e-5;
  return c;
}

TEST_F(LowerDataMovement, Views) {
  const Tensor x = random_tensor({2, 3, 5}, 1);
  EXPECT_TRUE(check_op(op("Reshape", {x, i64({5, -1})}, {1})));
  EXPECT_TRUE(check_op(op("Reshape", {x, i64({30})}, {1})));
  EXPECT_TRUE(check_op(op("Flatten", {random_tensor({2, 3, 4, 5}, 2)}, {}, {{"axis", i_attr(2)}})));
  EXPECT_TRUE(check_op(op("Unsqueeze", {x, i64({0, -1})}, {1})));
  EXPECT_TRUE(check_op(op("Squeeze", {random_tensor({1, 3, 1, 5}, 3), i64({0, 2})}, {1})));
  EXPECT_TRUE(check_op(op("Identity", {x})));
  EXPECT_TRUE(check_op(op("Identity", {random_i64({7}, 4, -9, 9)})));
  OpCheck drop = op("Dropout", {x});
  drop.num_outputs = 2;
  EXPECT_TRUE(check_op(drop));
}

TEST_F(LowerDataMovement, Transpose) {
  EXPECT_TRUE(check_op(op("Transpose", {random_tensor({2, 3, 5, 7}, 11)}, {}, {{"perm", ints_attr({0, 2, 3, 1})}})));
  EXPECT_TRUE(check_op(op("Transpose", {random_tensor({3, 5, 6}, 12)})));  // reversed
  EXPECT_TRUE(
      check_op(op("Transpose", {random_tensor({2, 3, 1, 4, 5}, 13)}, {}, {{"perm", ints_attr({4, 0, 3, 2, 1})}})));
  EXPECT_TRUE(check_op(op("Transpose", {random_i64({3, 4}, 14, -99, 99)}, {}, {{"perm", ints_attr({1, 0})}})));
}

TEST_F(LowerDataMovement, ConcatAndSplit) {
  EXPECT_TRUE(check_op(op("Concat", {random_tensor({2, 3, 5}, 21), random_tensor({2, 1, 5}, 22), random_tensor({2, 4, 5}, 23)},
                          {}, {{"axis", i_attr(1)}})));
  EXPECT_TRUE(check_op(op("Concat", {random_tensor({3, 2}, 24), random_tensor({3, 5}, 25)}, {}, {{"axis", i_attr(-1)}})));
  EXPECT_TRUE(check_op(op("Concat", {random_tensor({1, 8, 2, 2}, 26), random_tensor({1, 8, 2, 2}, 27)}, {},
                          {{"axis", i_attr(1)}})));
  EXPECT_TRUE(check_op(op("Concat", {random_tensor({4}, 28)}, {}, {{"axis", i_attr(0)}})));
  EXPECT_TRUE(check_op(op("Concat", {random_i64({2, 2}, 29, -9, 9), random_i64({1, 2}, 30, -9, 9)}, {}, {{"axis", i_attr(0)}})));
  OpCheck split = op("Split", {random_tensor({2, 6, 5}, 31), i64({2, 3, 1})}, {1}, {{"axis", i_attr(1)}});
  split.num_outputs = 3;
  EXPECT_TRUE(check_op(split));
  OpCheck uneven = op("Split", {random_tensor({3, 7}, 32)}, {}, {{"axis", i_attr(-1)}, {"num_outputs", i_attr(3)}});
  uneven.num_outputs = 3;
  EXPECT_TRUE(check_op(uneven));
}

TEST_F(LowerDataMovement, Slice) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  const Tensor x = random_tensor({4, 6, 7}, 41);
  EXPECT_TRUE(check_op(op("Slice", {x, i64({1, 2}), i64({3, big}), i64({0, 2})}, {1, 2, 3})));
  EXPECT_TRUE(check_op(op("Slice", {x, i64({-1}), i64({-big}), i64({1}), i64({-2})}, {1, 2, 3, 4})));
  EXPECT_TRUE(check_op(op("Slice", {x, i64({-3, 0}), i64({-1, 100}), i64({-1, 0}), i64({1, 3})}, {1, 2, 3, 4})));
  EXPECT_TRUE(check_op(op("Slice", {x, i64({0, 0, 1}), i64({4, 6, 7})}, {1, 2})));
  EXPECT_TRUE(check_op(op("Slice", {random_i64({9}, 42, -9, 9), i64({8}), i64({0}), i64({0}), i64({-3})}, {1, 2, 3, 4})));
}

// Bounds given per run (small graph inputs, host values): the kernel takes
// per-axis starts and steps the host computes.
TEST_F(LowerDataMovement, SliceBoundsAsRunInputs) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  const Tensor x = random_tensor({4, 6, 7}, 43);
  EXPECT_TRUE(check_op(op("Slice", {x, i64({1, 2}), i64({3, big}), i64({0, 2})})));
  EXPECT_TRUE(check_op(op("Slice", {x, i64({-1}), i64({-big}), i64({1}), i64({-2})})));
  EXPECT_TRUE(check_op(op("Slice", {x, i64({-3, 0}), i64({-1, 100}), i64({-1, 0}), i64({1, 3})})));
  EXPECT_TRUE(check_op(op("Slice", {x, i64({0, 0, 1}), i64({4, 6, 7})})));
  // Some bounds constant, some per run.
  EXPECT_TRUE(check_op(op("Slice", {x, i64({5}), i64({-8}), i64({-1}), i64({-2})}, {3, 4})));
}

TEST_F(LowerDataMovement, Gathers) {
  const Tensor data = random_tensor({5, 4, 3}, 51);
  EXPECT_TRUE(check_op(op("Gather", {data, Tensor::from_vector<int64_t>({2, 2}, {0, 4, -1, 2})})));
  EXPECT_TRUE(check_op(op("Gather", {data, i64({3, 0, -4})}, {}, {{"axis", i_attr(1)}})));
  EXPECT_TRUE(check_op(op("Gather", {data, Tensor::from_vector<int64_t>({}, {-1})}, {1}, {{"axis", i_attr(-1)}})));
  EXPECT_TRUE(check_op(op("Gather", {data, i64({2, 1})}, {1}, {{"axis", i_attr(2)}})));  // constant indices
  EXPECT_TRUE(check_op(op("Gather", {random_i64({6}, 52, 0, 9), Tensor::from_vector<int32_t>({3}, {5, 0, -2})})));
  // Rank-0 outputs: a scalar index into a vector, on the device and baked in.
  EXPECT_TRUE(check_op(op("Gather", {random_tensor({6}, 61), Tensor::from_vector<int64_t>({}, {4})})));
  EXPECT_TRUE(check_op(op("Gather", {random_tensor({6}, 62), Tensor::from_vector<int64_t>({}, {-2})}, {1})));
  EXPECT_TRUE(check_op(op("GatherElements", {random_tensor({3, 4}, 53), random_i64({3, 2}, 54, -4, 3)}, {},
                          {{"axis", i_attr(1)}})));
  EXPECT_TRUE(check_op(op("GatherElements", {random_tensor({3, 4}, 55), random_i64({2, 4}, 56, -3, 2)})));
  EXPECT_TRUE(check_op(op("GatherND", {random_tensor({3, 4, 5}, 57), random_i64({2, 2}, 58, 0, 2)})));
  EXPECT_TRUE(check_op(op("GatherND", {random_tensor({3, 4, 5}, 59), random_i64({3, 2, 1}, 60, -4, 3)}, {},
                          {{"batch_dims", i_attr(1)}})));
}

TEST_F(LowerDataMovement, ExpandAndTile) {
  EXPECT_TRUE(check_op(op("Expand", {random_tensor({3, 1}, 61), i64({2, 3, 5})}, {1})));
  EXPECT_TRUE(check_op(op("Expand", {random_tensor({1, 4}, 62), i64({3, 1})}, {1})));
  EXPECT_TRUE(check_op(op("Expand", {random_tensor({}, 63), i64({7})}, {1})));
  EXPECT_TRUE(check_op(op("Tile", {random_tensor({2, 3, 1}, 64), i64({2, 1, 3})}, {1})));
  EXPECT_TRUE(check_op(op("Tile", {random_i64({3}, 65, -5, 5), i64({3})}, {1})));
}

TEST_F(LowerDataMovement, Pad) {
  const Tensor x = random_tensor({1, 3, 4, 5}, 71);
  const Tensor pads = i64({0, 0, 1, 2, 0, 0, 3, 1});
  EXPECT_TRUE(check_op(op("Pad", {x, pads, Tensor::from_vector<float>({}, {0.5f})}, {1, 2})));
  EXPECT_TRUE(check_op(op("Pad", {x, pads}, {1})));
  for (const char* mode : {"reflect", "edge", "wrap"}) {
    SCOPED_TRACE(mode);
    EXPECT_TRUE(check_op(op("Pad", {x, pads}, {1}, {{"mode", s_attr(mode)}})));
  }
  // Wider than the axis (periodic reflect), negative pads crop, axes input.
  EXPECT_TRUE(check_op(op("Pad", {random_tensor({2, 3}, 72), i64({0, 4, 0, -1})}, {1}, {{"mode", s_attr("reflect")}})));
  EXPECT_TRUE(check_op(op("Pad", {random_tensor({2, 3, 4}, 73), i64({1, -1}), Tensor(), i64({-1})}, {1, 3})));
  EXPECT_TRUE(check_op(op("Pad", {random_i64({5}, 74, -9, 9), i64({2, 1}), Tensor::from_vector<int64_t>({}, {7})}, {1, 2})));
}

TEST_F(LowerDataMovement, PadAsRunInputs) {
  const Tensor x = random_tensor({1, 3, 4, 5}, 75);
  EXPECT_TRUE(check_op(op("Pad", {x, i64({0, 0, 1, 2, 0, 0, 3, 1})})));
  EXPECT_TRUE(check_op(op("Pad", {x, i64({0, 2, -1, 1}), Tensor(), i64({-1, 1})}, {}, {{"mode", s_attr("edge")}})));
}

TEST_F(LowerDataMovement, Resize) {
  const Tensor x = random_tensor({1, 2, 3, 5}, 81);
  const Tensor up = Tensor::from_vector<float>({4}, {1, 1, 2, 2});
  EXPECT_TRUE(check_op(op("Resize", {x, Tensor(), up}, {2})));  // nearest, half_pixel
  EXPECT_TRUE(check_op(op("Resize", {x, Tensor(), up}, {2},
                          {{"nearest_mode", s_attr("floor")}, {"coordinate_transformation_mode", s_attr("asymmetric")}})));
  for (const char* ctm : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"}) {
    SCOPED_TRACE(ctm);
    EXPECT_TRUE(check_op(op("Resize", {x, Tensor(), up}, {2},
                            {{"mode", s_attr("linear")}, {"coordinate_transformation_mode", s_attr(ctm)}})));
  }
  EXPECT_TRUE(check_op(op("Resize", {x, Tensor(), up}, {2}, {{"mode", s_attr("cubic")}})));
  EXPECT_TRUE(check_op(op("Resize", {x, Tensor(), up}, {2},
                          {{"mode", s_attr("cubic")}, {"exclude_outside", i_attr(1)}, {"cubic_coeff_a", ir::Attribute::of_float(-0.5f)},
                           {"coordinate_transformation_mode", s_attr("align_corners")}})));
  // Scales given per run (a host value): each resized axis's scale is a parameter.
  EXPECT_TRUE(check_op(op("Resize", {x, Tensor(), up}, {}, {{"mode", s_attr("linear")}})));
  EXPECT_TRUE(check_op(op("Resize", {x, Tensor(), Tensor::from_vector<float>({2}, {0.6f, 1.5f})}, {},
                          {{"axes", ints_attr({2, 3})}, {"coordinate_transformation_mode", s_attr("align_corners")}})));
  // Sizes, downscaling.
  EXPECT_TRUE(check_op(op("Resize", {random_tensor({1, 2, 8, 6}, 82), Tensor(), Tensor(), i64({1, 2, 4, 3})}, {3},
                          {{"mode", s_attr("linear")}})));
  EXPECT_TRUE(check_op(op("Resize", {random_tensor({1, 2, 4, 4}, 83), Tensor(), Tensor(), i64({6, 12})}, {3},
                          {{"axes", ints_attr({2, 3})}})));
}

TEST_F(LowerDataMovement, DepthSpace) {
  const Tensor x = random_tensor({1, 8, 2, 3}, 91);
  EXPECT_TRUE(check_op(op("DepthToSpace", {x}, {}, {{"blocksize", i_attr(2)}})));
  EXPECT_TRUE(check_op(op("DepthToSpace", {x}, {}, {{"blocksize", i_attr(2)}, {"mode", s_attr("CRD")}})));
  EXPECT_TRUE(check_op(op("SpaceToDepth", {random_tensor({2, 3, 4, 6}, 92)}, {}, {{"blocksize", i_attr(2)}})));
}

TEST_F(LowerDataMovement, Generators) {
  EXPECT_TRUE(check_op(op("EyeLike", {random_tensor({3, 5}, 101)}, {}, {{"k", i_attr(1)}})));
  EXPECT_TRUE(check_op(op("Trilu", {random_tensor({2, 4, 5}, 102), Tensor::from_vector<int64_t>({}, {-1})}, {1})));
  EXPECT_TRUE(check_op(op("Trilu", {random_tensor({4, 3}, 103)}, {}, {{"upper", i_attr(0)}})));
  EXPECT_TRUE(check_op(op("OneHot", {random_i64({2, 3}, 104, -5, 4), Tensor::from_vector<int64_t>({}, {5}),
                                     Tensor::from_vector<float>({2}, {-1.0f, 2.0f})},
                          {1, 2}, {{"axis", i_attr(1)}})));
}

TEST_F(LowerDataMovement, Scatters) {
  const Tensor data = random_tensor({3, 4}, 111);
  // Duplicate indices: the last update wins, or all of them reduce.
  const Tensor idx = Tensor::from_vector<int64_t>({2, 3}, {1, 0, 2, -1, 0, 2});
  const Tensor upd = random_tensor({2, 3}, 112);
  EXPECT_TRUE(check_op(op("ScatterElements", {data, idx, upd}, {}, {{"axis", i_attr(1)}})));
  EXPECT_TRUE(check_op(op("ScatterElements", {data, idx, upd}, {}, {{"axis", i_attr(1)}, {"reduction", s_attr("add")}})));
  EXPECT_TRUE(check_op(op("ScatterElements", {data, Tensor::from_vector<int64_t>({1, 2}, {2, 0}), random_tensor({1, 2}, 113)})));
  const Tensor nd = random_tensor({4, 3, 5}, 114);
  EXPECT_TRUE(check_op(op("ScatterND", {nd, Tensor::from_vector<int64_t>({2, 1}, {3, -4}), random_tensor({2, 3, 5}, 115)})));
  EXPECT_TRUE(check_op(op("ScatterND", {nd, Tensor::from_vector<int64_t>({3, 2}, {0, 1, 3, 2, 0, 1}), random_tensor({3, 5}, 116)},
                          {}, {{"reduction", s_attr("mul")}})));
}

TEST_F(LowerDataMovement, CumSum) {
  const Tensor x = random_tensor({3, 5, 2}, 121);
  for (int64_t exclusive : {0, 1})
    for (int64_t reverse : {0, 1}) {
      SCOPED_TRACE(std::to_string(exclusive) + std::to_string(reverse));
      EXPECT_TRUE(check_op(op("CumSum", {x, Tensor::from_vector<int64_t>({}, {1})}, {1},
                              {{"exclusive", i_attr(exclusive)}, {"reverse", i_attr(reverse)}})));
    }
  EXPECT_TRUE(check_op(op("CumSum", {random_i64({7}, 122, -9, 9), Tensor::from_vector<int64_t>({}, {-1})}, {1})));
  // The axis given per run (a host value): one kernel for every axis.
  for (int64_t axis : {0, -1, 1})
    for (int64_t reverse : {0, 1}) {
      SCOPED_TRACE(std::to_string(axis) + std::to_string(reverse));
      EXPECT_TRUE(check_op(op("CumSum", {x, Tensor::from_vector<int64_t>({}, {axis})}, {},
                              {{"exclusive", i_attr(1 - reverse)}, {"reverse", i_attr(reverse)}})));
    }
}

}  // namespace
}  // namespace kiln::planner
