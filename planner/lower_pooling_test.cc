// Differential tests of the pooling lowerings (lower_pooling.cc) against the
// reference executor in every backend config (check_op): windows with pads,
// strides, dilations, ceil_mode and auto_pad over 1 to 3 spatial axes, and
// the global pools.
#include <string>
#include <vector>

#include "planner/testing/op_check.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::check_op;
using testing::OpCheck;
using testing::random_tensor;

class LowerPooling : public vk::testing::VulkanTest {};

ir::Attribute i_attr(int64_t v) { return ir::Attribute::of_int(v); }
ir::Attribute ints_attr(std::vector<int64_t> v) { return ir::Attribute::of_ints(std::move(v)); }
ir::Attribute s_attr(std::string v) { return ir::Attribute::of_string(std::move(v)); }

struct Window {
  Shape x;
  std::map<std::string, ir::Attribute> attrs;
  std::string what;
};

std::vector<Window> windows() {
  return {
      {{1, 5, 9, 11}, {{"kernel_shape", ints_attr({3, 3})}, {"strides", ints_attr({2, 2})},
                       {"pads", ints_attr({1, 1, 1, 1})}}, "3x3 s2 p1"},
      {{2, 6, 10, 7}, {{"kernel_shape", ints_attr({3, 2})}, {"strides", ints_attr({2, 2})},
                       {"pads", ints_attr({1, 0, 1, 1})}, {"ceil_mode", i_attr(1)}}, "ceil_mode asymmetric pads"},
      {{1, 3, 12, 13}, {{"kernel_shape", ints_attr({3, 3})}, {"dilations", ints_attr({2, 2})},
                        {"pads", ints_attr({2, 1, 2, 1})}}, "dilated"},
      {{1, 4, 9, 10}, {{"kernel_shape", ints_attr({3, 4})}, {"strides", ints_attr({2, 3})},
                       {"auto_pad", s_attr("SAME_UPPER")}}, "SAME_UPPER"},
      {{1, 4, 9, 10}, {{"kernel_shape", ints_attr({2, 3})}, {"strides", ints_attr({2, 2})},
                       {"auto_pad", s_attr("SAME_LOWER")}}, "SAME_LOWER"},
      {{1, 4, 9, 10}, {{"kernel_shape", ints_attr({2, 2})}, {"auto_pad", s_attr("VALID")}}, "VALID"},
      {{2, 3, 17}, {{"kernel_shape", ints_attr({4})}, {"strides", ints_attr({3})}, {"pads", ints_attr({1, 2})}}, "1D"},
      {{1, 2, 5, 6, 7}, {{"kernel_shape", ints_attr({2, 3, 2})}, {"strides", ints_attr({1, 2, 2})},
                         {"pads", ints_attr({0, 1, 1, 1, 1, 0})}}, "3D"},
  };
}

TEST_F(LowerPooling, MaxPoolWindows) {
  uint64_t seed = 1;
  for (const Window& w : windows()) {
    OpCheck c;
    c.op = "MaxPool";
    c.inputs = {random_tensor(w.x, seed++)};
    c.attrs = w.attrs;
    EXPECT_TRUE(check_op(c)) << w.what;
  }
}

TEST_F(LowerPooling, MaxPoolIndices) {
  uint64_t seed = 50;
  for (int64_t order : {0, 1}) {
    for (const Window& w : windows()) {
      OpCheck c;
      c.op = "MaxPool";
      c.inputs = {random_tensor(w.x, seed++)};
      c.attrs = w.attrs;
      c.attrs["storage_order"] = i_attr(order);
      c.num_outputs = 2;
      c.tol_f16 = 2e-2;
      // fp16 rounding can turn two close values into a tie, moving the index.
      c.configs = {{Storage::kBuffer, ElemType::kF32}, {Storage::kImage, ElemType::kF32}};
      EXPECT_TRUE(check_op(c)) << w.what << " storage_order " << order;
    }
  }
}

TEST_F(LowerPooling, AveragePoolWithAndWithoutPadding) {
  uint64_t seed = 100;
  for (int64_t include_pad : {0, 1}) {
    for (const Window& w : windows()) {
      OpCheck c;
      c.op = "AveragePool";
      c.inputs = {random_tensor(w.x, seed++)};
      c.attrs = w.attrs;
      c.attrs["count_include_pad"] = i_attr(include_pad);
      EXPECT_TRUE(check_op(c)) << w.what << " count_include_pad " << include_pad;
    }
  }
}

TEST_F(LowerPooling, LpPool) {
  uint64_t seed = 200;
  for (int64_t p : {1, 2, 3}) {
    OpCheck c;
    c.op = "LpPool";
    c.inputs = {random_tensor({1, 5, 9, 11}, seed++)};
    c.attrs = {{"kernel_shape", ints_attr({3, 2})}, {"strides", ints_attr({2, 1})}, {"pads", ints_attr({1, 0, 1, 1})},
               {"p", i_attr(p)}};
    EXPECT_TRUE(check_op(c)) << "p " << p;
  }
}

TEST_F(LowerPooling, GlobalPools) {
  uint64_t seed = 300;
  // Short planes (map kernel), long planes (workgroup per texel of 4
  // channels), odd channel counts, 1 and 3 spatial axes.
  const Shape shapes[] = {{2, 5, 3, 4}, {1, 6, 40, 41}, {2, 7, 300}, {1, 3, 4, 5, 6}};
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
    for (const Shape& s : shapes) {
      OpCheck c;
      c.op = op;
      c.inputs = {random_tensor(s, seed++)};
      EXPECT_TRUE(check_op(c)) << op << " rank " << s.size();
    }
  }
  OpCheck lp;
  lp.op = "GlobalLpPool";
  lp.inputs = {random_tensor({1, 6, 20, 20}, seed++)};
  lp.attrs["p"] = i_attr(3);
  EXPECT_TRUE(check_op(lp)) << "p 3";
}

}  // namespace
}  // namespace kiln::planner
