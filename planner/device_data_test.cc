// Host tensors to device bytes, into memory the caller already holds.
#include "planner/device_data.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "engine/base/dtype.h"

namespace kiln::planner {
namespace {

TEST(DeviceData, ToDeviceWritesGivenMemoryAsTheVectorFormDoes) {
  Tensor t = Tensor::allocate(DType::kFloat32, {1, 6, 1, 2}).value();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.5f * static_cast<float>(i) - 1.0f;
  const DeviceLayout layouts[] = {{Storage::kBuffer, ElemType::kF32, -1},
                                  {Storage::kBuffer, ElemType::kF16, -1},
                                  {Storage::kImage, ElemType::kF32, 1},
                                  {Storage::kImage, ElemType::kF16, 1}};
  for (const DeviceLayout& layout : layouts) {
    const std::vector<std::byte> want = to_device(t, layout);
    ASSERT_EQ(want.size(), device_bytes(layout, t.shape()));
    // Memory holding old bytes, as a reused staging buffer does: an image's
    // texels past the 6 channels (2 of the second block) must come out zero.
    std::vector<std::byte> out(want.size(), std::byte{0xab});
    to_device(t, layout, out.data());
    EXPECT_EQ(out, want) << "storage " << static_cast<int>(layout.storage) << " type " << static_cast<int>(layout.type);
  }
  // The fp16 buffer holds the halves of the values.
  const std::vector<std::byte> halves = to_device(t, {Storage::kBuffer, ElemType::kF16, -1});
  uint16_t h = 0;
  std::memcpy(&h, halves.data() + 2 * 5, 2);
  EXPECT_EQ(half_to_float(h), 1.5f);
}

}  // namespace
}  // namespace kiln::planner
