// Signature keys and LRU eviction without a device: what makes two runs
// share a recording, and which recordings go when the cache is full.
#include "engine/runtime/vulkan/signature_cache.h"

#include <gtest/gtest.h>

namespace kiln::runtime {
namespace {

StatusOr<std::string> key_of(const std::vector<InputSpec>& inputs, const std::vector<bool>& host = {},
                             const DeviceBindings& bindings = {}) {
  return signature_key(inputs, host, std::vector<std::string>(inputs.size(), "x"), bindings);
}

TEST(SignatureKey, DtypeAndShapeOfEveryInput) {
  const auto a = key_of({{DType::kFloat32, {1, 8}}, {DType::kInt64, {2}}});
  const auto same = key_of({{DType::kFloat32, {1, 8}}, {DType::kInt64, {2}}});
  const auto longer = key_of({{DType::kFloat32, {1, 9}}, {DType::kInt64, {2}}});
  const auto half = key_of({{DType::kFloat16, {1, 8}}, {DType::kInt64, {2}}});
  const auto flat = key_of({{DType::kFloat32, {8}}, {DType::kInt64, {2}}});
  ASSERT_TRUE(a.ok() && same.ok() && longer.ok() && half.ok() && flat.ok());
  EXPECT_EQ(*a, *same);
  EXPECT_NE(*a, *longer);
  EXPECT_NE(*a, *half);
  EXPECT_NE(*a, *flat);
}

TEST(SignatureKey, HostResidentInputsKeyByTheirBytes) {
  const Tensor two = Tensor::from_vector<int64_t>({2}, {4, 8});
  const Tensor other = Tensor::from_vector<int64_t>({2}, {4, 9});
  const auto a = key_of({{DType::kInt64, {2}, &two}}, {true});
  const auto b = key_of({{DType::kInt64, {2}, &other}}, {true});
  const auto device = key_of({{DType::kInt64, {2}, &other}}, {false});
  const auto device2 = key_of({{DType::kInt64, {2}, &two}}, {false});
  ASSERT_TRUE(a.ok() && b.ok() && device.ok() && device2.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(*device, *device2);  // values of device inputs do not shape the run
  EXPECT_EQ(hex_bytes(Tensor::from_vector<uint8_t>({2}, {0x0f, 0xa0})), "0fa0");
}

TEST(SignatureKey, AHostResidentInputNeedsAHostTensor) {
  const auto missing = signature_key({{DType::kInt64, {2}}}, {true}, {"shape"}, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("'shape'"), std::string::npos);
}

TEST(SignatureKey, BindingsArePartOfTheKey) {
  ExternalBuffer b;
  b.size = 64;
  const auto plain = key_of({{DType::kFloat32, {4}}});
  const auto bound = key_of({{DType::kFloat32, {4}}}, {}, {{"y", b}});
  b.offset = 64;
  const auto moved = key_of({{DType::kFloat32, {4}}}, {}, {{"y", b}});
  ASSERT_TRUE(plain.ok() && bound.ok() && moved.ok());
  EXPECT_NE(*plain, *bound);
  EXPECT_NE(*bound, *moved);
}

// An image binding's view, layout, usage (which picks the kernel) and
// conversion numbers are recorded into the command buffers: each is part of
// the key.
TEST(SignatureKey, ImageBindingsKeyByEveryRecordedField) {
  ExternalBuffer b;
  b.image.image = reinterpret_cast<VkImage>(uintptr_t{0x10});
  b.image.view = reinterpret_cast<VkImageView>(uintptr_t{0x20});
  b.image.format = VK_FORMAT_R8G8B8A8_UNORM;
  b.image.layout = VK_IMAGE_LAYOUT_GENERAL;
  b.image.width = 4;
  b.image.height = 2;
  b.image.channels = 3;
  const std::vector<InputSpec> in{{DType::kFloat32, {1, 3, 2, 4}}};
  const auto base = key_of(in, {}, {{"x", b}});
  ASSERT_TRUE(base.ok());
  EXPECT_EQ(*base, *key_of(in, {}, {{"x", b}}));
  std::vector<ExternalBuffer> changed(9, b);
  changed[0].image.view = reinterpret_cast<VkImageView>(uintptr_t{0x21});
  changed[1].image.layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
  changed[2].image.map[1] = 2;
  changed[3].image.scale[0] = 2.0f;
  changed[4].image.bias[2] = 0.5f;
  changed[5].image.srgb = true;
  changed[6].image.region_x = 1;
  changed[7].image.tensor_height = 3;
  changed[8].image.usage = VK_IMAGE_USAGE_STORAGE_BIT;  // read with imageLoad instead
  for (const ExternalBuffer& c : changed) {
    const auto other = key_of(in, {}, {{"x", c}});
    ASSERT_TRUE(other.ok());
    EXPECT_NE(*base, *other);
  }
}

TEST(ContinuationKey, ShapesOfHostOutputsAndReadBackValues) {
  const Tensor three = Tensor::from_vector<int64_t>({2, 3}, {0, 1, 2, 3, 4, 5});
  const Tensor five = Tensor::from_vector<int64_t>({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_NE(host_outputs_key({three}), host_outputs_key({five}));
  EXPECT_EQ(host_outputs_key({three}), host_outputs_key({Tensor::from_vector<int64_t>({2, 3}, {9, 9, 9, 9, 9, 9})}));
  const Tensor shape_a = Tensor::from_vector<int64_t>({2}, {2, 3});
  const Tensor shape_b = Tensor::from_vector<int64_t>({2}, {3, 2});
  EXPECT_NE(read_back_key(7, shape_a), read_back_key(7, shape_b));
  EXPECT_NE(read_back_key(7, shape_a), read_back_key(8, shape_a));
}

struct Entry {
  uint64_t last_run = 0;
};

std::map<std::string, std::unique_ptr<Entry>> family(const std::vector<std::pair<std::string, uint64_t>>& runs) {
  std::map<std::string, std::unique_ptr<Entry>> out;
  for (const auto& [key, run] : runs) out[key] = std::make_unique<Entry>(Entry{run});
  return out;
}

TEST(LruVictims, LeastRecentlyRunGoFirst) {
  const auto f = family({{"a", 5}, {"b", 2}, {"c", 9}, {"d", 1}});
  EXPECT_EQ(lru_victims(f, 2, static_cast<const Entry*>(nullptr)), (std::vector<std::string>{"d", "b"}));
  EXPECT_TRUE(lru_victims(f, 4, static_cast<const Entry*>(nullptr)).empty());
  EXPECT_TRUE(lru_victims(f, 10, static_cast<const Entry*>(nullptr)).empty());
}

TEST(LruVictims, NeverTheOneJustMadeAndAtLeastOneStays) {
  const auto f = family({{"a", 5}, {"b", 2}, {"new", 0}});
  // The signature just made has not run yet (last_run 0) but stays.
  EXPECT_EQ(lru_victims(f, 1, f.at("new").get()), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(lru_victims(f, 0, f.at("new").get()), (std::vector<std::string>{"b", "a"}));  // a limit of 0 keeps 1
}

TEST(LruVictims, TiesGoInKeyOrder) {
  const auto f = family({{"c", 3}, {"a", 3}, {"b", 3}});
  EXPECT_EQ(lru_victims(f, 1, static_cast<const Entry*>(nullptr)), (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace kiln::runtime
