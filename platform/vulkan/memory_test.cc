// The memory arena and staged transfers: buffer and image round trips,
// placement, chunking and error reporting.
#include "platform/vulkan/memory_arena.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "engine/base/dtype.h"
#include "platform/vulkan/transfer.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::vk {
namespace {

using testing::VulkanTest;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

class MemoryTest : public VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto arena = MemoryArena::create(device(), 32 << 20);
    ASSERT_TRUE(arena.ok()) << arena.status().to_string();
    arena_ = std::move(arena).value();
    auto transfer = Transfer::create(device());
    ASSERT_TRUE(transfer.ok()) << transfer.status().to_string();
    transfer_ = std::move(transfer).value();
  }
  void TearDown() override {
    transfer_.reset();
    arena_.reset();
    VulkanTest::TearDown();
  }
  std::unique_ptr<MemoryArena> arena_;
  std::unique_ptr<Transfer> transfer_;
};

TEST_F(MemoryTest, BufferRoundTrip) {
  std::vector<float> data = random_floats(250000, 1);
  const size_t bytes = data.size() * sizeof(float);
  auto buffer = arena_->create_buffer(bytes);
  ASSERT_TRUE(buffer.ok()) << buffer.status().to_string();
  ASSERT_TRUE(transfer_->upload(*buffer, data.data(), bytes).ok());
  std::vector<float> back(data.size(), 0.0f);
  Status s = transfer_->download(*buffer, back.data(), bytes);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(back, data);

  // A partial write at an offset leaves the rest intact.
  std::vector<float> patch = {1.5f, 2.5f, 3.5f};
  ASSERT_TRUE(transfer_->upload(*buffer, patch.data(), sizeof(float) * 3, sizeof(float) * 10).ok());
  std::vector<float> window(20);
  ASSERT_TRUE(transfer_->download(*buffer, window.data(), sizeof(float) * 20).ok());
  for (size_t i = 0; i < 20; ++i) {
    float want = (i >= 10 && i < 13) ? patch[i - 10] : data[i];
    EXPECT_EQ(window[i], want) << "element " << i;
  }
}

TEST_F(MemoryTest, TransfersLargerThanStagingAreChunked) {
  auto small = Transfer::create(device(), 4096);
  ASSERT_TRUE(small.ok());
  std::vector<float> data = random_floats(25001, 2);  // 100004 bytes: 25 chunks, last partial
  const size_t bytes = data.size() * sizeof(float);
  auto buffer = arena_->create_buffer(bytes);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE((*small)->upload(*buffer, data.data(), bytes).ok());
  EXPECT_EQ((*small)->chunks(), 25u);
  std::vector<float> back(data.size());
  ASSERT_TRUE((*small)->download(*buffer, back.data(), bytes).ok());
  EXPECT_EQ((*small)->chunks(), 50u);
  EXPECT_EQ(back, data);
}

TEST_F(MemoryTest, UploadBatchesPackRegionsIntoStagingFills) {
  // 4 KiB of staging, regions placed 64-byte aligned: 1000 and 3000 bytes
  // share the first fill, 100 spill into the second (the empty one takes
  // none); 10000 bytes exceed the staging and go in three chunks.
  auto small = Transfer::create(device(), 4096);
  ASSERT_TRUE(small.ok());
  const std::vector<size_t> sizes = {1000, 3000, 100, 0, 10000};
  std::vector<Buffer> buffers;
  std::vector<std::vector<std::byte>> want;
  std::vector<Transfer::Region> regions;
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto b = arena_->create_buffer(std::max<size_t>(sizes[i] + 16, 16));
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    buffers.push_back(std::move(b).value());
    std::vector<std::byte> bytes(sizes[i]);
    for (size_t j = 0; j < bytes.size(); ++j) bytes[j] = static_cast<std::byte>((j * 7 + i * 31) & 0xff);
    want.push_back(std::move(bytes));
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::vector<std::byte>& bytes = want[i];
    regions.push_back({&buffers[i], 16, sizes[i], [&bytes](std::byte* dst) {
                         std::memcpy(dst, bytes.data(), bytes.size());
                       }});
  }
  Status s = (*small)->upload_batch(regions, 3);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ((*small)->chunks(), 2u + 3u);
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) continue;
    std::vector<std::byte> back(sizes[i]);
    ASSERT_TRUE((*small)->download(buffers[i], back.data(), back.size(), 16).ok());
    EXPECT_EQ(back, want[i]) << "region " << i;
  }

  // A region past its buffer's end, or without a fill, is refused.
  std::vector<Transfer::Region> past = {{&buffers[0], 1000, 100, [](std::byte*) {}}};
  EXPECT_EQ((*small)->upload_batch(past).code(), StatusCode::kOutOfRange);
  std::vector<Transfer::Region> no_fill = {{&buffers[0], 0, 8, nullptr}};
  EXPECT_EQ((*small)->upload_batch(no_fill).code(), StatusCode::kInvalidArgument);
}

TEST_F(MemoryTest, HostVisibleArenasMapForInPlaceWrites) {
  auto buffer = arena_->create_buffer(4096);
  ASSERT_TRUE(buffer.ok());
  if (!arena_->host_visible()) {
    EXPECT_EQ(arena_->map().status().code(), StatusCode::kFailedPrecondition);
    GTEST_SKIP() << "the device's memory is not host-visible";
  }
  auto base = arena_->map();
  ASSERT_TRUE(base.ok()) << base.status().to_string();
  std::vector<float> data = random_floats(1024, 3);
  std::memcpy(*base + buffer->arena_offset(), data.data(), 4096);
  ASSERT_TRUE(arena_->flush(buffer->arena_offset(), 4096).ok());
  EXPECT_EQ(*arena_->map(), *base);  // mapped once
  std::vector<float> back(data.size());
  ASSERT_TRUE(transfer_->download(*buffer, back.data(), 4096).ok());
  EXPECT_EQ(back, data);
}

TEST_F(MemoryTest, ImageRoundTripRGBA32F) {
  const uint32_t w = 37, h = 19;  // odd sizes catch row-pitch mistakes
  auto image = arena_->create_image(w, h, ImageFormat::kRGBA32F);
  ASSERT_TRUE(image.ok()) << image.status().to_string();
  EXPECT_EQ(image->data_size(), size_t(w) * h * 16);
  EXPECT_EQ(image->layout(), VK_IMAGE_LAYOUT_UNDEFINED);
  std::vector<float> texels = random_floats(size_t(w) * h * 4, 3);
  ASSERT_TRUE(transfer_->upload(*image, texels.data(), texels.size() * sizeof(float)).ok());
  EXPECT_EQ(image->layout(), VK_IMAGE_LAYOUT_GENERAL);
  std::vector<float> back(texels.size());
  Status s = transfer_->download(*image, back.data(), back.size() * sizeof(float));
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(back, texels);
}

TEST_F(MemoryTest, ImageRoundTripRGBA16F) {
  if (!device().capabilities().rgba16f_image) GTEST_SKIP() << "no RGBA16F images on this device";
  const uint32_t w = 64, h = 33;
  auto image = arena_->create_image(w, h, ImageFormat::kRGBA16F);
  ASSERT_TRUE(image.ok()) << image.status().to_string();
  EXPECT_EQ(image->data_size(), size_t(w) * h * 8);
  std::vector<float> values = random_floats(size_t(w) * h * 4, 4);
  std::vector<uint16_t> halves(values.size());
  for (size_t i = 0; i < values.size(); ++i) halves[i] = float_to_half(values[i]);
  ASSERT_TRUE(transfer_->upload(*image, halves.data(), halves.size() * 2).ok());
  std::vector<uint16_t> back(halves.size());
  ASSERT_TRUE(transfer_->download(*image, back.data(), back.size() * 2).ok());
  EXPECT_EQ(back, halves);
  // And they decode to the values within half precision.
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(half_to_float(back[i]), values[i], std::abs(values[i]) * 1e-3f + 1e-3f);
}

TEST_F(MemoryTest, ImageTransfersAreChunkedByRows) {
  auto small = Transfer::create(device(), 1024);  // 64 RGBA32F texels: 2 rows of 32
  ASSERT_TRUE(small.ok());
  const uint32_t w = 32, h = 9;
  auto image = arena_->create_image(w, h, ImageFormat::kRGBA32F);
  ASSERT_TRUE(image.ok());
  std::vector<float> texels = random_floats(size_t(w) * h * 4, 5);
  ASSERT_TRUE((*small)->upload(*image, texels.data(), texels.size() * 4).ok());
  EXPECT_EQ((*small)->chunks(), 5u);  // rows 0-1, 2-3, 4-5, 6-7, 8
  std::vector<float> back(texels.size());
  ASSERT_TRUE((*small)->download(*image, back.data(), back.size() * 4).ok());
  EXPECT_EQ(back, texels);
}

TEST_F(MemoryTest, PlacementHonorsAlignmentAndReusesFreedRanges) {
  const VkDeviceSize granularity = std::max<VkDeviceSize>(1, device().capabilities().buffer_image_granularity);
  auto a = arena_->create_buffer(1000);
  auto img = arena_->create_image(16, 16, ImageFormat::kRGBA32F);
  auto b = arena_->create_buffer(3000);
  auto c = arena_->create_buffer(500);
  ASSERT_TRUE(a.ok() && img.ok() && b.ok() && c.ok());
  EXPECT_EQ(arena_->live_allocations(), 4u);
  // Every resource starts on a granularity boundary and none overlap.
  struct Range {
    VkDeviceSize begin, end;
  };
  std::vector<Range> ranges = {{a->arena_offset(), a->arena_offset() + a->size()},
                               {img->arena_offset(), img->arena_offset() + img->data_size()},
                               {b->arena_offset(), b->arena_offset() + b->size()},
                               {c->arena_offset(), c->arena_offset() + c->size()}};
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_EQ(ranges[i].begin % granularity, 0u) << "resource " << i;
    for (size_t j = i + 1; j < ranges.size(); ++j) {
      bool disjoint = ranges[i].end <= ranges[j].begin || ranges[j].end <= ranges[i].begin;
      EXPECT_TRUE(disjoint) << "resources " << i << " and " << j << " overlap";
    }
  }
  VkDeviceSize b_offset = b->arena_offset();
  VkDeviceSize used = arena_->used();
  b->reset();
  EXPECT_LT(arena_->used(), used);
  auto d = arena_->create_buffer(2000);  // fits in b's old range (first fit)
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->arena_offset(), b_offset);
  // Moving a resource keeps its range; destroying all returns everything.
  Buffer moved = std::move(*d);
  EXPECT_EQ(moved.arena_offset(), b_offset);
  EXPECT_FALSE(d->valid());
  moved.reset();
  a->reset();
  img->reset();
  c->reset();
  EXPECT_EQ(arena_->used(), 0u);
  EXPECT_EQ(arena_->live_allocations(), 0u);
  EXPECT_GE(arena_->peak(), used);
  // After full release one allocation can take (almost) the whole arena again.
  auto whole = arena_->create_buffer(arena_->capacity() - granularity);
  EXPECT_TRUE(whole.ok()) << whole.status().to_string();
}

// Resources bound at planned offsets (the runtime's memplan arena) may
// alias: an image and a buffer over the same bytes, used one after the
// other, each hold what was last written through them; a misaligned or
// out-of-range offset is rejected, and placed resources reserve nothing.
TEST_F(MemoryTest, PlacedResourcesAliasAtTheirOffsets) {
  auto req = MemoryArena::image_requirements(device(), 64, 32, ImageFormat::kRGBA32F);
  ASSERT_TRUE(req.ok()) << req.status().to_string();
  EXPECT_GE(req->size, VkDeviceSize(64) * 32 * 16);
  const VkDeviceSize used = arena_->used();
  const VkDeviceSize at = (VkDeviceSize(1) << 20) / req->alignment * req->alignment;
  auto image = arena_->bind_image(at, 64, 32, ImageFormat::kRGBA32F);
  ASSERT_TRUE(image.ok()) << image.status().to_string();
  EXPECT_EQ(image->arena_offset(), at);
  auto buffer = arena_->bind_buffer(at, req->size);
  ASSERT_TRUE(buffer.ok()) << buffer.status().to_string();
  EXPECT_EQ(arena_->used(), used);
  EXPECT_EQ(arena_->live_allocations(), 2u);

  std::vector<float> pixels = random_floats(64 * 32 * 4, 7);
  ASSERT_TRUE(transfer_->upload(*image, pixels.data(), pixels.size() * sizeof(float)).ok());
  std::vector<float> back(pixels.size());
  ASSERT_TRUE(transfer_->download(*image, back.data(), back.size() * sizeof(float)).ok());
  EXPECT_EQ(back, pixels);
  std::vector<float> words = random_floats(1024, 8);
  ASSERT_TRUE(transfer_->upload(*buffer, words.data(), words.size() * sizeof(float)).ok());
  std::vector<float> words_back(words.size());
  ASSERT_TRUE(transfer_->download(*buffer, words_back.data(), words_back.size() * sizeof(float)).ok());
  EXPECT_EQ(words_back, words);

  if (req->alignment > 1) {
    auto misaligned = arena_->bind_image(at + 1, 64, 32, ImageFormat::kRGBA32F);
    EXPECT_EQ(misaligned.status().code(), StatusCode::kInvalidArgument);
  }
  auto past_end = arena_->bind_buffer(arena_->capacity(), 256);
  EXPECT_EQ(past_end.status().code(), StatusCode::kInvalidArgument);
  image->reset();
  buffer->reset();
  EXPECT_EQ(arena_->live_allocations(), 0u);
  EXPECT_EQ(arena_->used(), used);
}

TEST_F(MemoryTest, ReportsBadRequests) {
  EXPECT_EQ(MemoryArena::create(device(), 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(arena_->create_buffer(0).status().code(), StatusCode::kInvalidArgument);
  auto big = arena_->create_buffer(arena_->capacity() + 1);
  EXPECT_EQ(big.status().code(), StatusCode::kOutOfMemory);
  auto first = arena_->create_buffer(arena_->capacity() / 2 + 4096);
  ASSERT_TRUE(first.ok());
  auto second = arena_->create_buffer(arena_->capacity() / 2 + 4096);
  EXPECT_EQ(second.status().code(), StatusCode::kOutOfMemory);
  EXPECT_NE(second.status().message().find("largest free range"), std::string::npos) << second.status().message();

  const uint32_t max_dim = device().capabilities().max_image_dimension_2d;
  auto huge = arena_->create_image(max_dim + 1, 1, ImageFormat::kRGBA32F);
  EXPECT_EQ(huge.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(huge.status().message().find("maxImageDimension2D"), std::string::npos);
  EXPECT_EQ(arena_->create_image(0, 4, ImageFormat::kRGBA32F).status().code(), StatusCode::kInvalidArgument);

  auto small = arena_->create_buffer(64);
  ASSERT_TRUE(small.ok());
  std::vector<uint8_t> bytes(65);
  Status over = transfer_->upload(*small, bytes.data(), 65);
  EXPECT_EQ(over.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(transfer_->download(*small, bytes.data(), 8, 60).code(), StatusCode::kOutOfRange);

  auto image = arena_->create_image(4, 4, ImageFormat::kRGBA32F);
  ASSERT_TRUE(image.ok());
  std::vector<float> texels(4 * 4 * 4);
  EXPECT_EQ(transfer_->download(*image, texels.data(), texels.size() * 4).code(), StatusCode::kFailedPrecondition);
  Status wrong = transfer_->upload(*image, texels.data(), texels.size() * 4 - 4);
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.message().find("4x4"), std::string::npos) << wrong.message();
}

TEST_F(MemoryTest, ArenaRespectsDeviceLimits) {
  const Capabilities& caps = device().capabilities();
  VkDeviceSize too_big = caps.max_memory_allocation_size + 1;
  for (const MemoryHeapInfo& heap : caps.heaps) too_big = std::max(too_big, heap.size + 1);
  auto arena = MemoryArena::create(device(), too_big);
  EXPECT_EQ(arena.status().code(), StatusCode::kOutOfMemory);
  EXPECT_NE(arena.status().message().find("exceeds"), std::string::npos) << arena.status().message();
}

}  // namespace
}  // namespace kiln::vk
