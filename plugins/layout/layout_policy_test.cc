// The layout decisions on hand-made facts (layout_policy.h): packed axis by
// reduction dimension, conflicts, producer order, the device rule and the
// image limit.
#include "plugins/layout/layout_policy.h"

#include <gtest/gtest.h>

#include "kiln/kiln_plugin.h"

namespace kiln_layout {
namespace {

ConsumerFacts reducing(uint64_t axes, bool stencil = false) {
  return {KILN_LAYOUT_CLASS_ILD_VARIABLE, axes, stencil};
}
ConsumerFacts elementwise() { return {KILN_LAYOUT_CLASS_ILI_VARIABLE, 0, false}; }

TensorFacts tensor(std::vector<int64_t> dims, std::vector<ConsumerFacts> consumers = {}) {
  TensorFacts t;
  t.rank = static_cast<int>(dims.size());
  t.dims = std::move(dims);
  t.is_float = true;
  t.consumers = std::move(consumers);
  return t;
}

TEST(PackedAxis, FollowsTheReductionDimension) {
  // MatMul A[M,K] (last axis), B[K,N] (axis 0), Conv input (channels).
  EXPECT_EQ(choose_packed_axis(tensor({8, 16}, {reducing(0b10)})).axis, 1);
  EXPECT_EQ(choose_packed_axis(tensor({16, 8}, {reducing(0b01)})).axis, 0);
  const PackChoice conv = choose_packed_axis(tensor({1, 8, 6, 6}, {reducing(0b1110, true)}));
  EXPECT_EQ(conv.axis, 1);
  EXPECT_EQ(conv.reason, PackReason::kReduction);
  EXPECT_FALSE(conv.conflict);
}

TEST(PackedAxis, OnlyIldVariableConsumersVote) {
  ConsumerFacts fixed{KILN_LAYOUT_CLASS_ILD_FIXED, 0b01, false};
  EXPECT_EQ(choose_packed_axis(tensor({16, 8}, {fixed})).reason, PackReason::kDefault);
}

TEST(PackedAxis, MultiConsumerConflicts) {
  // Last axis and one other: both served (packed + x), no conflict.
  const PackChoice both = choose_packed_axis(tensor({8, 8}, {reducing(0b10), reducing(0b01)}));
  EXPECT_EQ(both.axis, 0);
  EXPECT_FALSE(both.conflict);
  // Two non-last axes: the most wanted wins, counted as a conflict.
  const PackChoice majority =
      choose_packed_axis(tensor({4, 8, 16}, {reducing(0b010), reducing(0b010), reducing(0b001)}));
  EXPECT_EQ(majority.axis, 1);
  EXPECT_TRUE(majority.conflict);
}

TEST(PackedAxis, WithoutReductionsTheProducerDecides) {
  TensorFacts t = tensor({2, 8, 16}, {elementwise()});
  EXPECT_EQ(choose_packed_axis(t).axis, 2);  // the planner's default below rank 4
  EXPECT_EQ(choose_packed_axis(tensor({1, 8, 4, 4})).axis, 1);
  t.producer_packed_axis = 1;
  const PackChoice inherited = choose_packed_axis(t);
  EXPECT_EQ(inherited.axis, 1);
  EXPECT_EQ(inherited.reason, PackReason::kProducer);
}

TEST(PackedAxis, GemmProducersKeepTheirNaturalOrder) {
  TensorFacts t = tensor({1, 8, 6, 6}, {reducing(0b1100)});  // GlobalAveragePool: H, W
  EXPECT_EQ(choose_packed_axis(t).axis, 2);
  t.producer_natural_axis = 1;  // a Conv made it
  const PackChoice kept = choose_packed_axis(t);
  EXPECT_EQ(kept.axis, 1);
  EXPECT_EQ(kept.reason, PackReason::kProducer);
  EXPECT_TRUE(kept.overridden);
  t.consumers = {reducing(0b0010, true)};  // a Conv reading along C: agrees
  EXPECT_FALSE(choose_packed_axis(t).overridden);
}

TEST(ReshapeAxisMap, SplitsAndMerges) {
  // [2,12] -> [2,3,4]: axis 1 split; both parts read along input axis 1.
  EXPECT_EQ(reshape_axis_map({2, 12}, {2, 3, 4}), (std::vector<int>{0, 1, 1}));
  // [2,3,4] -> [2,12]: merged, contiguous along the inner axis 2.
  EXPECT_EQ(reshape_axis_map({2, 3, 4}, {2, 12}), (std::vector<int>{0, 2}));
  // Unsqueeze and Squeeze: unit axes map to a neighbour in their group.
  EXPECT_EQ(reshape_axis_map({8, 16}, {1, 8, 16}), (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(reshape_axis_map({1, 8, 16}, {8, 16}), (std::vector<int>{1, 2}));
  EXPECT_TRUE(reshape_axis_map({2, -1}, {2, 3, 4}).empty());  // symbolic
  EXPECT_TRUE(reshape_axis_map({2, 5}, {2, 3}).empty());      // counts differ
}

TEST(ImageFits, ChecksBothExtents) {
  EXPECT_TRUE(image_fits({1, 3, 48, 640}, 1, 16384));       // 640 x 48
  EXPECT_FALSE(image_fits({4, 64, 24, 19200}, 1, 16384));   // 16 * 19200 wide
  EXPECT_FALSE(image_fits({40000, 4}, 1, 16384));           // 40000 high
  EXPECT_TRUE(image_fits({-1, 64, 24, 19200}, 1, 16384));   // symbolic: the planner checks
  EXPECT_FALSE(image_fits({1, 4, int64_t{1} << 40, int64_t{1} << 40}, 1, 16384));  // no overflow
}

TEST(Storage, PerDeviceRule) {
  DeviceFacts cpu{DeviceKind::kCpu, Mode::kAuto, 16384};
  DeviceFacts discrete{DeviceKind::kDiscreteGpu, Mode::kAuto, 16384};
  DeviceFacts mobile{DeviceKind::kOtherGpu, Mode::kAuto, 16384};
  const TensorFacts fmap = tensor({1, 8, 6, 6});
  const TensorFacts seq = tensor({2, 8, 16});
  EXPECT_TRUE(choose_storage(fmap, cpu, 1).image);
  EXPECT_FALSE(choose_storage(seq, cpu, 2).image);
  EXPECT_FALSE(choose_storage(fmap, discrete, 1).image);
  EXPECT_TRUE(choose_storage(seq, mobile, 2).image);
  TensorFacts io = fmap;
  io.graph_io = true;
  EXPECT_EQ(choose_storage(io, cpu, 1).reason, StorageReason::kGraphIo);
  EXPECT_FALSE(choose_storage(io, cpu, 1).image);
  const StorageChoice big = choose_storage(tensor({4, 64, 24, 19200}), cpu, 1);
  EXPECT_FALSE(big.image);
  EXPECT_EQ(big.reason, StorageReason::kTooLarge);
  const StorageChoice dynamic = choose_storage(tensor({1, 8, -1, -1}), cpu, 1);
  EXPECT_FALSE(dynamic.image);
  EXPECT_EQ(dynamic.reason, StorageReason::kSymbolic);
  EXPECT_EQ(device_kind(4), DeviceKind::kCpu);
  EXPECT_EQ(device_kind(2), DeviceKind::kDiscreteGpu);
  EXPECT_EQ(device_kind(1), DeviceKind::kOtherGpu);
}

}  // namespace
}  // namespace kiln_layout
