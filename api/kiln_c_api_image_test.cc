// Host images as model inputs and outputs through the C API (kiln_vulkan.h,
// "Images as tensors"). An input image in each of the formats a game hands
// over (RGBA8 UNORM and sRGB, BGRA8, RGBA16F, RGBA32F, R8, R16F, R32F)
// gives the output kiln_session_run gives for the normalized float tensor
// the host computes from the same texels (channel map, mean/std, sRGB
// decode); an output image (RGBA8 UNORM clamped and sRGB-encoded, RGBA16F,
// RGBA32F) holds the run's output scaled for display; kiln_session_record
// and kiln_session_submit write the same bytes as kiln_session_run with the
// bindings; symbolic H and W take the image's extent; inputs come from a
// cropped and bilinearly resized region, outputs go into a region; NHWC and
// fp16 tensors convert too; an older caller's smaller struct still works;
// bad bindings are refused with statuses that name the problem.
//
// The "game" is the validated test instance and device (synchronization
// validation on): the VulkanTest fixture fails on any validation message.
#include "platform/vulkan/vk_test_env.h"  // before kiln_vulkan.h: volk includes vulkan.h itself

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "api/testing/game_commands.h"
#include "api/testing/host_buffer.h"
#include "api/testing/host_device.h"
#include "api/testing/host_image.h"
#include "api/testing/onnx_models.h"
#include "kiln/kiln_vulkan.h"  // before kiln.hpp: its Vulkan parts
#include "kiln/kiln.hpp"

extern "C" size_t capi_c_check_image_binding_size(void);  // kiln_c_api_image_c_check.c

namespace {

using kiln::api::Error;
using kiln::api::Model;
using kiln::api::Session;
using kiln::api::Tensor;
using kiln::api::VulkanDevice;
using kiln::capi::testing::GameCommands;
using kiln::capi::testing::HostBuffer;
using kiln::capi::testing::Dim;
using kiln::capi::testing::HostImage;
using kiln::capi::testing::OnnxBuilder;

constexpr uint32_t kH = 6, kW = 10;  // W not a multiple of the conversion's 8x8 workgroups
constexpr size_t kPixels = kH * kW;
constexpr int64_t kOut = 4;  // output channels

// image [1, 3, H, W] -> 1x1 Conv to 4 channels (+ bias) -> Sigmoid -> y
// [1, 4, H, W]; H and W are "H" and "W" when `symbolic`; with `nhwc` the
// image is [1, H, W, 3] and y [1, H, W, 4] (Transposes around the Conv).
std::string conv_model(bool symbolic, bool nhwc = false) {
  OnnxBuilder b("conv");
  auto dims = [&](int64_t c) {
    std::vector<Dim> d = {1};
    if (!nhwc) d.push_back(c);
    if (symbolic) {
      d.insert(d.end(), {"H", "W"});
    } else {
      d.insert(d.end(), {int64_t{kH}, int64_t{kW}});
    }
    if (nhwc) d.push_back(c);
    return d;
  };
  b.float_input("image", dims(3));
  b.float_output("y", dims(kOut));
  std::vector<float> w(kOut * 3), bias(kOut);
  for (int i = 0; i < kOut * 3; ++i) w[static_cast<size_t>(i)] = 0.3f * static_cast<float>((i * 5) % 7 - 3);
  for (int i = 0; i < kOut; ++i) bias[static_cast<size_t>(i)] = 0.1f * static_cast<float>(i) - 0.15f;
  b.initializer("w", {kOut, 3, 1, 1}, w);
  b.initializer("b", {kOut}, bias);
  if (nhwc) OnnxBuilder::ints_attribute(b.node("Transpose", {"image"}, "nchw"), "perm", {0, 3, 1, 2});
  b.node("Conv", {nhwc ? "nchw" : "image", "w", "b"}, "c", "conv");
  b.node("Sigmoid", {"c"}, nhwc ? "s" : "y", "sigmoid");
  if (nhwc) OnnxBuilder::ints_attribute(b.node("Transpose", {"s"}, "y"), "perm", {0, 2, 3, 1});
  return b.serialize();
}

float half_to_float(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const float v = e == 0 ? std::ldexp(static_cast<float>(m), -24) : std::ldexp(1.0f + m / 1024.0f, e - 15);
  return (h & 0x8000) ? -v : v;
}

float srgb_to_linear(float c) { return c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f); }
float linear_to_srgb(float c) {
  c = std::clamp(c, 0.0f, 1.0f);
  return c <= 0.0031308f ? c * 12.92f : 1.055f * std::pow(c, 1.0f / 2.4f) - 0.055f;
}

struct Format {
  VkFormat format;
  const char* name;
  uint32_t texel_bytes;
};

const Format kRGBA8{VK_FORMAT_R8G8B8A8_UNORM, "RGBA8_UNORM", 4};
const Format kSRGB8{VK_FORMAT_R8G8B8A8_SRGB, "RGBA8_SRGB", 4};
const Format kBGRA8{VK_FORMAT_B8G8R8A8_UNORM, "BGRA8_UNORM", 4};
const Format kRGBA16F{VK_FORMAT_R16G16B16A16_SFLOAT, "RGBA16F", 8};
const Format kRGBA32F{VK_FORMAT_R32G32B32A32_SFLOAT, "RGBA32F", 16};
const Format kR8{VK_FORMAT_R8_UNORM, "R8_UNORM", 1};
const Format kR16F{VK_FORMAT_R16_SFLOAT, "R16F", 2};
const Format kR32F{VK_FORMAT_R32_SFLOAT, "R32F", 4};

// Texel bytes of `f` for every pixel, each component in [0, 1].
std::vector<uint8_t> random_texels(const Format& f, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(kPixels * f.texel_bytes);
  if (f.format == VK_FORMAT_R16G16B16A16_SFLOAT || f.format == VK_FORMAT_R16_SFLOAT) {
    for (size_t i = 0; i < bytes.size() / 2; ++i) {
      const uint16_t h = static_cast<uint16_t>(((1 + rng() % 14) << 10) | (rng() % 1024));  // [2^-14, 1)
      std::memcpy(&bytes[i * 2], &h, 2);
    }
  } else if (f.format == VK_FORMAT_R32G32B32A32_SFLOAT || f.format == VK_FORMAT_R32_SFLOAT) {
    for (size_t i = 0; i < bytes.size() / 4; ++i) {
      const float v = static_cast<float>(rng() % 100000) / 100000.0f;
      std::memcpy(&bytes[i * 4], &v, 4);
    }
  } else {
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng() % 256);
  }
  return bytes;
}

// Component k (0 R .. 3 A) of pixel p as a shader sees it: floats, RGBA
// order, sRGB decoded.
float component(const Format& f, const std::vector<uint8_t>& texels, size_t p, uint32_t k) {
  const uint8_t* t = &texels[p * f.texel_bytes];
  switch (f.format) {
    case VK_FORMAT_R8G8B8A8_UNORM: return t[k] / 255.0f;
    case VK_FORMAT_R8G8B8A8_SRGB: return k < 3 ? srgb_to_linear(t[k] / 255.0f) : t[k] / 255.0f;
    case VK_FORMAT_B8G8R8A8_UNORM: return t[k == 3 ? 3 : 2 - k] / 255.0f;
    case VK_FORMAT_R8_UNORM: return t[0] / 255.0f;
    case VK_FORMAT_R16G16B16A16_SFLOAT:
    case VK_FORMAT_R16_SFLOAT: {
      uint16_t h;
      std::memcpy(&h, t + 2 * (f.texel_bytes == 2 ? 0 : k), 2);
      return half_to_float(h);
    }
    default: {  // RGBA32F, R32F
      float v;
      std::memcpy(&v, t + 4 * (f.texel_bytes == 4 ? 0 : k), 4);
      return v;
    }
  }
}

constexpr float kMean[4] = {0.485f, 0.456f, 0.406f, 0.5f};
constexpr float kStd[4] = {0.229f, 0.224f, 0.225f, 0.25f};

kiln_vulkan_image_binding_t image_binding(const HostImage& image, const Format& f, VkImageUsageFlags usage,
                                          VkImageLayout layout, uint32_t channels, std::vector<uint32_t> map) {
  kiln_vulkan_image_binding_t b{};
  b.struct_size = sizeof(b);
  b.image = image.handle();
  b.view = image.view();
  b.format = f.format;
  b.usage = usage;
  b.layout = layout;
  b.width = kW;
  b.height = kH;
  b.channel_count = channels;
  for (size_t c = 0; c < 4; ++c) {
    b.channel_map[c] = c < map.size() ? map[c] : 0;
    b.mean[c] = kMean[c];
    b.std[c] = kStd[c];
  }
  return b;
}

// The model input the conversion must produce: (component - mean) / std,
// NCHW.
std::vector<float> normalized(const Format& f, const std::vector<uint8_t>& texels, const std::vector<uint32_t>& map) {
  std::vector<float> x(3 * kPixels);
  for (size_t c = 0; c < 3; ++c)
    for (size_t p = 0; p < kPixels; ++p) x[c * kPixels + p] = (component(f, texels, p, map[c]) - kMean[c]) / kStd[c];
  return x;
}

class CApiImageTest : public kiln::vk::testing::VulkanTest {
 protected:
  // A session on the wrapped test device (timeline semaphores told).
  void wrapped_session(const Model& model, Session& session, kiln_storage_t storage = KILN_STORAGE_BUFFER,
                       kiln_precision_t precision = KILN_PRECISION_FP32, const char* disabled_passes = nullptr) {
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    f11.storageBuffer16BitAccess = device().enabled().storage_buffer_16bit ? VK_TRUE : VK_FALSE;
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f12.timelineSemaphore = device().enabled().timeline_semaphore ? VK_TRUE : VK_FALSE;
    f12.shaderFloat16 = device().enabled().shader_float16 ? VK_TRUE : VK_FALSE;
    f12.pNext = &f11;
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &f12;
    const kiln_vulkan_host_device_t h = kiln::capi::testing::host_device(instance(), device(), &features);
    VulkanDevice host;
    Error e = VulkanDevice::wrap(h, host);
    ASSERT_FALSE(e) << e.message();
    kiln_session_options_t o{};
    o.backend = KILN_BACKEND_VULKAN;
    o.vulkan_device = host.get();
    o.storage = storage;
    o.precision = precision;
    o.disabled_passes = disabled_passes;
    e = Session::create(model, o, session);
    ASSERT_FALSE(e) << e.message();
  }

  Model load(bool symbolic, bool nhwc = false) {
    const std::string path = kiln::capi::testing::write_temp_model(
        std::string("image_conv") + (symbolic ? "_hw" : "") + (nhwc ? "_nhwc" : ""), conv_model(symbolic, nhwc));
    Model m;
    Error e = Model::load(path, m);
    EXPECT_FALSE(e) << e.message();
    std::remove(path.c_str());  // the model is in memory now
    return m;
  }

  // kiln_session_run's output y for the host tensor x ([1, 3, H, W]).
  std::vector<float> run_tensor(Session& session, const std::vector<float>& x, bool nhwc = false) {
    Tensor t;
    EXPECT_FALSE(Tensor::create(KILN_DTYPE_FLOAT32, nhwc ? std::vector<int64_t>{1, kH, kW, 3}
                                                         : std::vector<int64_t>{1, 3, kH, kW}, t));
    std::memcpy(t.data<float>(), x.data(), x.size() * sizeof(float));
    std::vector<Tensor> out;
    Error e = session.run({&t}, 1, out);
    EXPECT_FALSE(e) << e.message();
    if (e || !out[0].get()) return {};
    return std::vector<float>(out[0].data<float>(), out[0].data<float>() + kOut * kPixels);
  }

  // kiln_session_run with every input bound (NULL tensors); `outputs[0]`
  // must come back NULL when y is bound.
  Error run_bound(Session& session, kiln_tensor_t** y) {
    const kiln_tensor_t* none[] = {nullptr};
    return Error(kiln_session_run(session.get(), none, 1, y, 1));
  }
};

struct InputCase {
  Format format;
  VkImageLayout layout;
  std::vector<uint32_t> map;
  bool shader_srgb = false;  // KILN_VULKAN_IMAGE_SRGB on a UNORM view
  // The image lacks VK_IMAGE_USAGE_SAMPLED_BIT: read as a storage image.
  VkImageUsageFlags usage = VK_IMAGE_USAGE_SAMPLED_BIT;
};

void PrintTo(const InputCase& c, std::ostream* os) { *os << c.format.name; }

class CApiImageInputTest : public CApiImageTest, public ::testing::WithParamInterface<InputCase> {};

// The image's conversion is the host's normalization: the outputs agree with
// kiln_session_run on the normalized tensor to float rounding.
TEST_P(CApiImageInputTest, MatchesTheNormalizedTensor) {
  const InputCase& c = GetParam();
  Model model = load(false);
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model, session));
  const std::vector<uint8_t> texels = random_texels(c.format, 7 + c.format.format);
  std::vector<float> x = normalized(c.format, texels, c.map);
  if (c.shader_srgb)  // the UNORM bytes are sRGB-encoded: the shader decodes them
    for (size_t ch = 0; ch < 3; ++ch)
      for (size_t p = 0; p < kPixels; ++p)
        x[ch * kPixels + p] = (srgb_to_linear(component(c.format, texels, p, c.map[ch])) - kMean[ch]) / kStd[ch];
  const std::vector<float> want = run_tensor(session, x);
  ASSERT_EQ(want.size(), kOut * kPixels);

  HostImage image(device(), c.format.format, kW, kH, c.format.texel_bytes, c.usage);
  ASSERT_TRUE(image.ok());
  ASSERT_TRUE(image.upload(texels, c.layout));
  kiln_vulkan_image_binding_t b = image_binding(image, c.format, c.usage, c.layout, 3, c.map);
  if (c.shader_srgb) b.flags = KILN_VULKAN_IMAGE_SRGB;
  // An older caller's struct, without the region fields: the whole image.
  b.region_x = 7;  // beyond struct_size: never read
  b.struct_size = offsetof(kiln_vulkan_image_binding_t, region_x);
  Error e(kiln_session_bind_vulkan_image(session.get(), "image", &b));
  ASSERT_FALSE(e) << e.message();
  HostBuffer by(device(), kOut * kPixels * sizeof(float));
  ASSERT_TRUE(by.ok());
  ASSERT_FALSE(session.bind_vulkan_buffer("y", by.handle(), 0, by.size()));
  static char sentinel;
  kiln_tensor_t* y = reinterpret_cast<kiln_tensor_t*>(&sentinel);
  e = run_bound(session, &y);
  ASSERT_FALSE(e) << e.message();
  EXPECT_EQ(y, nullptr);
  const std::vector<float> got = by.read(0, want.size());
  float worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  // The hardware's sRGB decode may approximate (Vulkan allows a fraction of
  // an 8-bit step; lavapipe's is up to 1.2e-3 off the exact curve over the
  // 256 codes, which 1/std, the weights and the Sigmoid make up to ~1.2e-3
  // here); every other path is float rounding.
  const bool hardware_srgb = c.format.format == VK_FORMAT_R8G8B8A8_SRGB;
  EXPECT_LT(worst, hardware_srgb ? 3e-3f : 2e-5f) << c.format.name;
  session.forget_vulkan_buffer(by.handle());
  kiln_session_forget_vulkan_image(session.get(), image.handle());
}

INSTANTIATE_TEST_SUITE_P(
    Formats, CApiImageInputTest,
    ::testing::Values(InputCase{kRGBA8, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, {0, 1, 2}},
                      InputCase{kBGRA8, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, {0, 1, 2}},
                      InputCase{kSRGB8, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, {2, 1, 0}},  // a BGR model
                      InputCase{kRGBA8, VK_IMAGE_LAYOUT_GENERAL, {0, 1, 2}, true},
                      InputCase{kRGBA16F, VK_IMAGE_LAYOUT_GENERAL, {3, 0, 1}},
                      InputCase{kRGBA32F, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, {0, 1, 2}},
                      InputCase{kR8, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, {0, 0, 0}},  // gray into RGB
                      InputCase{kR16F, VK_IMAGE_LAYOUT_GENERAL, {0, 0, 0}},
                      InputCase{kR32F, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, {0, 0, 0}},
                      InputCase{kRGBA8, VK_IMAGE_LAYOUT_GENERAL, {2, 1, 0}, true, VK_IMAGE_USAGE_STORAGE_BIT},
                      InputCase{kRGBA16F, VK_IMAGE_LAYOUT_GENERAL, {0, 1, 2}, false, VK_IMAGE_USAGE_STORAGE_BIT}),
    [](const ::testing::TestParamInfo<InputCase>& param) {
      return std::string(param.param.format.name) + (param.param.shader_srgb ? "_ShaderSrgb" : "") +
             (param.param.usage == VK_IMAGE_USAGE_STORAGE_BIT ? "_StorageRead" : "") +
             (param.param.layout == VK_IMAGE_LAYOUT_GENERAL ? "_General" : "");
    });

// The texel the output conversion must store for y's element (c, p).
float display_value(const std::vector<float>& y, size_t c, size_t p) { return y[c * kPixels + p] * kStd[c] + kMean[c]; }

// An output image holds y * std + mean per channel, in the image component
// the map names: clamped (and optionally sRGB-encoded) for RGBA8, as floats
// for RGBA16F and RGBA32F.
TEST_F(CApiImageTest, OutputImageForDisplay) {
  Model model = load(false);
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model, session));
  const std::vector<uint32_t> map{2, 1, 0, 3};  // BGR model output into an RGBA image
  const std::vector<float> x = normalized(kRGBA8, random_texels(kRGBA8, 3), {0, 1, 2});
  const std::vector<float> y = run_tensor(session, x);
  ASSERT_EQ(y.size(), kOut * kPixels);
  for (const Format& f : {kRGBA8, kRGBA16F, kRGBA32F}) {
    for (const bool srgb : {false, true}) {
      if (srgb && f.format != VK_FORMAT_R8G8B8A8_UNORM) continue;
      SCOPED_TRACE(std::string(f.name) + (srgb ? " sRGB-encoded" : ""));
      HostImage image(device(), f.format, kW, kH, f.texel_bytes, VK_IMAGE_USAGE_STORAGE_BIT);
      ASSERT_TRUE(image.ok());
      ASSERT_TRUE(image.make_general());
      kiln_vulkan_image_binding_t b =
          image_binding(image, f, VK_IMAGE_USAGE_STORAGE_BIT, VK_IMAGE_LAYOUT_GENERAL, kOut, map);
      if (srgb) b.flags = KILN_VULKAN_IMAGE_SRGB;
      Error e(kiln_session_bind_vulkan_image(session.get(), "y", &b));
      ASSERT_FALSE(e) << e.message();
      (void)run_tensor(session, x);  // the output goes to the image, not back to the host
      const std::vector<uint8_t> texels = image.download();
      ASSERT_EQ(texels.size(), image.bytes());
      for (size_t p = 0; p < kPixels; ++p)
        for (size_t c = 0; c < kOut; ++c) {
          float want = display_value(y, c, p);
          const float got = component(f, texels, p, map[c]);
          if (f.format == VK_FORMAT_R8G8B8A8_UNORM) {
            want = std::clamp(want, 0.0f, 1.0f);
            if (srgb && map[c] < 3) want = linear_to_srgb(want);
            ASSERT_NEAR(got, want, 1.01f / 255.0f) << "pixel " << p << " channel " << c;
          } else {
            ASSERT_NEAR(got, want, (f.format == VK_FORMAT_R16G16B16A16_SFLOAT ? 1e-3f : 1e-6f) * (1 + std::abs(want)))
                << "pixel " << p << " channel " << c;
          }
        }
      kiln_session_forget_vulkan_image(session.get(), image.handle());
    }
  }
}

// The game's command buffer (kiln_session_record) and an asynchronous
// submission write the output image byte for byte as kiln_session_run with
// the same image bindings.
TEST_F(CApiImageTest, RecordAndSubmitMatchRun) {
  Model model = load(false);
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model, session));
  HostImage in(device(), kRGBA8.format, kW, kH, kRGBA8.texel_bytes, VK_IMAGE_USAGE_SAMPLED_BIT);
  HostImage out(device(), kRGBA32F.format, kW, kH, kRGBA32F.texel_bytes, VK_IMAGE_USAGE_STORAGE_BIT);
  ASSERT_TRUE(in.ok() && out.ok());
  ASSERT_TRUE(in.upload(random_texels(kRGBA8, 11), VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL));
  ASSERT_TRUE(out.make_general());
  const kiln_vulkan_image_binding_t bin = image_binding(in, kRGBA8, VK_IMAGE_USAGE_SAMPLED_BIT,
                                                        VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, 3, {0, 1, 2});
  const kiln_vulkan_image_binding_t bout =
      image_binding(out, kRGBA32F, VK_IMAGE_USAGE_STORAGE_BIT, VK_IMAGE_LAYOUT_GENERAL, kOut, {0, 1, 2, 3});
  ASSERT_FALSE(session.bind_vulkan_image("image", bin));  // kiln.hpp's wrapper
  ASSERT_FALSE(session.bind_vulkan_image("y", bout));
  kiln_tensor_t* y = nullptr;
  Error e = run_bound(session, &y);
  ASSERT_FALSE(e) << e.message();
  const std::vector<uint8_t> want = out.download();
  ASSERT_EQ(want.size(), out.bytes());
  ASSERT_TRUE(std::any_of(want.begin(), want.end(), [](uint8_t b) { return b != 0; }));
  // The same bindings again run what was recorded; a new mean records anew.
  kiln_run_stats_t stats;
  ASSERT_FALSE(run_bound(session, &y));
  ASSERT_FALSE(session.last_run_stats(stats));
  EXPECT_EQ(stats.recorded, 0u);
  kiln_vulkan_image_binding_t shifted = bin;
  shifted.mean[0] = 0.25f;
  ASSERT_FALSE(session.bind_vulkan_image("image", shifted));
  ASSERT_FALSE(run_bound(session, &y));
  ASSERT_FALSE(session.last_run_stats(stats));
  EXPECT_EQ(stats.recorded, 1u);
  EXPECT_NE(out.download(), want);
  ASSERT_FALSE(session.bind_vulkan_image("image", bin));

  // Recorded into the game's command buffer.
  ASSERT_TRUE(out.make_general());  // contents discarded
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.queueFamilyIndex = device().queue_family();
  ASSERT_EQ(device().fn().vkCreateCommandPool(device().handle(), &pool_info, nullptr, &pool), VK_SUCCESS);
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = pool;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  VkCommandBuffer frame = VK_NULL_HANDLE;
  ASSERT_EQ(device().fn().vkAllocateCommandBuffers(device().handle(), &alloc, &frame), VK_SUCCESS);
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  ASSERT_EQ(device().fn().vkBeginCommandBuffer(frame, &begin), VK_SUCCESS);
  e = Error(kiln_session_record(session.get(), frame));
  ASSERT_FALSE(e) << e.message();
  ASSERT_EQ(device().fn().vkEndCommandBuffer(frame), VK_SUCCESS);
  VkFence fence = VK_NULL_HANDLE;
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  ASSERT_EQ(device().fn().vkCreateFence(device().handle(), &fence_info, nullptr, &fence), VK_SUCCESS);
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &frame;
  ASSERT_TRUE(device().queue_submit(1, &submit, fence).ok());
  ASSERT_EQ(device().fn().vkWaitForFences(device().handle(), 1, &fence, VK_TRUE, UINT64_MAX), VK_SUCCESS);
  EXPECT_EQ(out.download(), want);

  // Submitted asynchronously.
  if (device().enabled().timeline_semaphore) {
    ASSERT_TRUE(out.make_general());
    const kiln_tensor_t* none[] = {nullptr};
    uint64_t ticket = 0;
    e = Error(kiln_session_submit(session.get(), none, 1, nullptr, &ticket));
    ASSERT_FALSE(e) << e.message();
    e = Error(kiln_session_wait(session.get(), ticket, UINT64_MAX, &y, 1));
    ASSERT_FALSE(e) << e.message();
    EXPECT_EQ(y, nullptr);
    EXPECT_EQ(out.download(), want);
  }
  device().fn().vkDestroyFence(device().handle(), fence, nullptr);
  device().fn().vkDestroyCommandPool(device().handle(), pool, nullptr);
  session.forget_vulkan_image(in.handle());
  session.forget_vulkan_image(out.handle());
  // Forgotten: the bindings are gone with the recordings.
  e = run_bound(session, &y);
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  EXPECT_NE(e.message().find("'image' is missing"), std::string::npos) << e.message();
}

// kiln_session_record_slice with image bindings: the input conversion rides
// in the first slice, the output conversion in the last, and slices of one
// dispatch each, submitted one after another, write kiln_session_run's
// output image byte for byte (NHWC: Transposes around the Conv make
// several dispatches — without the fusion pass, which folds them all into
// the Conv's kernel).
TEST_F(CApiImageTest, SlicedRecordMatchesRun) {
  Model model = load(false, true);
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model, session, KILN_STORAGE_BUFFER, KILN_PRECISION_FP32, "fusion"));
  HostImage in(device(), kRGBA8.format, kW, kH, kRGBA8.texel_bytes, VK_IMAGE_USAGE_SAMPLED_BIT);
  HostImage out(device(), kRGBA32F.format, kW, kH, kRGBA32F.texel_bytes, VK_IMAGE_USAGE_STORAGE_BIT);
  ASSERT_TRUE(in.ok() && out.ok());
  ASSERT_TRUE(in.upload(random_texels(kRGBA8, 5), VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL));
  ASSERT_TRUE(out.make_general());
  kiln_vulkan_image_binding_t bin = image_binding(in, kRGBA8, VK_IMAGE_USAGE_SAMPLED_BIT,
                                                  VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, 3, {0, 1, 2});
  kiln_vulkan_image_binding_t bout =
      image_binding(out, kRGBA32F, VK_IMAGE_USAGE_STORAGE_BIT, VK_IMAGE_LAYOUT_GENERAL, kOut, {0, 1, 2, 3});
  bin.flags = bout.flags = KILN_VULKAN_IMAGE_NHWC;
  ASSERT_FALSE(session.bind_vulkan_image("image", bin));
  ASSERT_FALSE(session.bind_vulkan_image("y", bout));
  kiln_tensor_t* y = nullptr;
  Error e = run_bound(session, &y);
  ASSERT_FALSE(e) << e.message();
  const std::vector<uint8_t> want = out.download();
  ASSERT_TRUE(std::any_of(want.begin(), want.end(), [](uint8_t b) { return b != 0; }));

  ASSERT_TRUE(out.make_general());  // contents discarded
  GameCommands game(device());
  kiln_record_slice_options_t opts{};
  opts.struct_size = sizeof(opts);
  opts.max_dispatches = 1;
  kiln_record_slice_progress_t progress{};
  progress.struct_size = sizeof(progress);
  std::vector<VkCommandBuffer> slices;
  do {
    VkCommandBuffer cmd = game.allocate(VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    game.begin(cmd);
    e = Error(kiln_session_record_slice(session.get(), cmd, &opts, &progress));
    ASSERT_FALSE(e) << e.message();
    ASSERT_EQ(device().fn().vkEndCommandBuffer(cmd), VK_SUCCESS);
    slices.push_back(cmd);
    ASSERT_LT(slices.size(), 100u);
  } while (!progress.done);
  EXPECT_EQ(slices.size(), progress.dispatches_total);
  EXPECT_GE(slices.size(), 2u) << "the NHWC model should take several dispatches";
  for (size_t i = 0; i + 1 < slices.size(); ++i) game.submit(slices[i]);
  game.submit_and_wait(slices.back());
  EXPECT_EQ(out.download(), want);
  session.forget_vulkan_image(in.handle());
  session.forget_vulkan_image(out.handle());
}

// Symbolic H and W take the image's extent; an output image of another
// extent is refused by the run, naming both shapes.
TEST_F(CApiImageTest, SymbolicHeightAndWidthFollowTheImage) {
  Model fixed = load(false), symbolic = load(true);
  Session reference, session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(fixed, reference));
  ASSERT_NO_FATAL_FAILURE(wrapped_session(symbolic, session));
  const std::vector<uint8_t> texels = random_texels(kRGBA8, 5);
  const std::vector<float> want = run_tensor(reference, normalized(kRGBA8, texels, {0, 1, 2}));
  HostImage in(device(), kRGBA8.format, kW, kH, kRGBA8.texel_bytes, VK_IMAGE_USAGE_SAMPLED_BIT);
  ASSERT_TRUE(in.ok());
  ASSERT_TRUE(in.upload(texels, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL));
  const kiln_vulkan_image_binding_t b = image_binding(in, kRGBA8, VK_IMAGE_USAGE_SAMPLED_BIT,
                                                      VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, 3, {0, 1, 2});
  ASSERT_FALSE(Error(kiln_session_bind_vulkan_image(session.get(), "image", &b)));
  kiln_tensor_t* y = nullptr;
  Error e = run_bound(session, &y);
  ASSERT_FALSE(e) << e.message();
  ASSERT_NE(y, nullptr);
  Tensor out(y);
  ASSERT_EQ(out.shape(), (std::vector<int64_t>{1, kOut, kH, kW}));
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(out.data<float>()[i], want[i], 2e-5f) << i;

  HostImage wide(device(), kRGBA32F.format, kW + 2, kH, kRGBA32F.texel_bytes, VK_IMAGE_USAGE_STORAGE_BIT);
  ASSERT_TRUE(wide.ok());
  kiln_vulkan_image_binding_t bw =
      image_binding(wide, kRGBA32F, VK_IMAGE_USAGE_STORAGE_BIT, VK_IMAGE_LAYOUT_GENERAL, kOut, {0, 1, 2, 3});
  bw.width = kW + 2;
  ASSERT_FALSE(Error(kiln_session_bind_vulkan_image(session.get(), "y", &bw)));  // y's W is symbolic
  e = run_bound(session, &y);
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  EXPECT_NE(e.message().find("[1,4,6,10]"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("[1,4,6,12]"), std::string::npos) << e.message();
  kiln_session_forget_vulkan_image(session.get(), in.handle());
  kiln_session_forget_vulkan_image(session.get(), wide.handle());
}

// Under fp16 precision the conversions read and write fp16 tensors: the
// output image holds what kiln_session_run gives for the normalized tensor
// (which the upload rounds to fp16 too), to fp16 rounding.
TEST_F(CApiImageTest, Fp16Tensors) {
  if (!device().enabled().storage_buffer_16bit || !device().enabled().shader_float16)
    GTEST_SKIP() << "the test device has no fp16 storage and arithmetic";
  Model model = load(false);
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model, session, KILN_STORAGE_BUFFER, KILN_PRECISION_FP16));
  kiln_dtype_t dtype = KILN_DTYPE_FLOAT32;
  ASSERT_FALSE(Error(kiln_session_device_dtype(session.get(), "image", &dtype)));
  ASSERT_EQ(dtype, KILN_DTYPE_FLOAT16);
  const std::vector<uint8_t> texels = random_texels(kRGBA8, 13);
  const std::vector<float> y = run_tensor(session, normalized(kRGBA8, texels, {0, 1, 2}));
  ASSERT_EQ(y.size(), kOut * kPixels);
  HostImage in(device(), kRGBA8.format, kW, kH, kRGBA8.texel_bytes, VK_IMAGE_USAGE_SAMPLED_BIT);
  HostImage out(device(), kRGBA32F.format, kW, kH, kRGBA32F.texel_bytes, VK_IMAGE_USAGE_STORAGE_BIT);
  ASSERT_TRUE(in.ok() && out.ok());
  ASSERT_TRUE(in.upload(texels, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL));
  ASSERT_TRUE(out.make_general());
  const kiln_vulkan_image_binding_t bin = image_binding(in, kRGBA8, VK_IMAGE_USAGE_SAMPLED_BIT,
                                                        VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, 3, {0, 1, 2});
  const kiln_vulkan_image_binding_t bout =
      image_binding(out, kRGBA32F, VK_IMAGE_USAGE_STORAGE_BIT, VK_IMAGE_LAYOUT_GENERAL, kOut, {0, 1, 2, 3});
  ASSERT_FALSE(Error(kiln_session_bind_vulkan_image(session.get(), "image", &bin)));
  ASSERT_FALSE(Error(kiln_session_bind_vulkan_image(session.get(), "y", &bout)));
  kiln_tensor_t* none = nullptr;
  Error e = run_bound(session, &none);
  ASSERT_FALSE(e) << e.message();
  const std::vector<uint8_t> got = out.download();
  ASSERT_EQ(got.size(), out.bytes());
  // One fp16 ulp of an input (~2e-3 at 2.5) moves y by at most ~1e-3.
  for (size_t p = 0; p < kPixels; ++p)
    for (size_t c = 0; c < kOut; ++c)
      ASSERT_NEAR(component(kRGBA32F, got, p, c), y[c * kPixels + p] * kStd[c] + kMean[c], 2e-3f)
          << "pixel " << p << " channel " << c;
  kiln_session_forget_vulkan_image(session.get(), in.handle());
  kiln_session_forget_vulkan_image(session.get(), out.handle());
}

// Component k of the image's pixel (px, py) of an image `width` wide.
float at(const Format& f, const std::vector<uint8_t>& texels, uint32_t width, uint32_t px, uint32_t py, uint32_t k) {
  return component(f, texels, size_t{py} * width + px, k);
}

// An input from a region of a larger image: cropped at the tensor's size,
// and resized bilinearly from a region of another size (half-pixel
// centres, edges clamped), as the host computes it.
TEST_F(CApiImageTest, CropAndResizeInput) {
  Model model = load(false);
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model, session));
  constexpr uint32_t kImageW = 23, kImageH = 17;
  std::mt19937 rng(21);
  std::vector<uint8_t> texels(size_t{kImageW} * kImageH * 4);
  for (uint8_t& b : texels) b = static_cast<uint8_t>(rng() % 256);
  HostImage image(device(), kRGBA8.format, kImageW, kImageH, 4, VK_IMAGE_USAGE_SAMPLED_BIT);
  ASSERT_TRUE(image.ok());
  ASSERT_TRUE(image.upload(texels, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL));
  HostBuffer by(device(), kOut * kPixels * sizeof(float));
  ASSERT_TRUE(by.ok());
  struct Region {
    uint32_t x, y, w, h;
  };
  for (const Region r : {Region{5, 4, kW, kH}, Region{3, 2, 17, 13}, Region{0, 0, kImageW, kImageH},
                         Region{8, 9, 4, 3}}) {  // the last one upscales
    SCOPED_TRACE(std::to_string(r.w) + "x" + std::to_string(r.h) + " at " + std::to_string(r.x) + "," +
                 std::to_string(r.y));
    std::vector<float> x(3 * kPixels);
    for (uint32_t ty = 0; ty < kH; ++ty)
      for (uint32_t tx = 0; tx < kW; ++tx) {
        auto source = [](uint32_t t, uint32_t lo, uint32_t size, uint32_t out) {
          const float s = static_cast<float>(lo) + (static_cast<float>(t) + 0.5f) * static_cast<float>(size) /
                                                       static_cast<float>(out) - 0.5f;
          return std::clamp(s, static_cast<float>(lo), static_cast<float>(lo + size - 1));
        };
        const float sx = source(tx, r.x, r.w, kW), sy = source(ty, r.y, r.h, kH);
        const uint32_t x0 = static_cast<uint32_t>(std::floor(sx)), y0 = static_cast<uint32_t>(std::floor(sy));
        const uint32_t x1 = std::min(x0 + 1, r.x + r.w - 1), y1 = std::min(y0 + 1, r.y + r.h - 1);
        const float fx = sx - static_cast<float>(x0), fy = sy - static_cast<float>(y0);
        for (uint32_t c = 0; c < 3; ++c) {
          auto mix = [](float a, float b, float t) { return a * (1 - t) + b * t; };
          const float top = mix(at(kRGBA8, texels, kImageW, x0, y0, c), at(kRGBA8, texels, kImageW, x1, y0, c), fx);
          const float bottom =
              mix(at(kRGBA8, texels, kImageW, x0, y1, c), at(kRGBA8, texels, kImageW, x1, y1, c), fx);
          x[c * kPixels + ty * kW + tx] = (mix(top, bottom, fy) - kMean[c]) / kStd[c];
        }
      }
    const std::vector<float> want = run_tensor(session, x);
    ASSERT_EQ(want.size(), kOut * kPixels);
    kiln_vulkan_image_binding_t b = image_binding(image, kRGBA8, VK_IMAGE_USAGE_SAMPLED_BIT,
                                                  VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, 3, {0, 1, 2});
    b.width = kImageW;
    b.height = kImageH;
    b.region_x = r.x;
    b.region_y = r.y;
    b.region_width = r.w == kImageW ? 0 : r.w;  // 0: to the edge
    b.region_height = r.h == kImageH ? 0 : r.h;
    if (r.w != kW || r.h != kH) {
      b.tensor_width = kW;
      b.tensor_height = kH;
    }
    Error e(kiln_session_bind_vulkan_image(session.get(), "image", &b));
    ASSERT_FALSE(e) << e.message();
    ASSERT_FALSE(session.bind_vulkan_buffer("y", by.handle(), 0, by.size()));
    kiln_tensor_t* y = nullptr;
    e = run_bound(session, &y);
    ASSERT_FALSE(e) << e.message();
    const std::vector<float> got = by.read(0, want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-5f) << i;
    kiln_session_unbind_all(session.get());  // the next reference runs on a host tensor
  }
  session.forget_vulkan_buffer(by.handle());
  kiln_session_forget_vulkan_image(session.get(), image.handle());
}

// An output written into a region of a larger image leaves the rest of the
// image as it was.
TEST_F(CApiImageTest, OutputIntoARegion) {
  Model model = load(false);
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model, session));
  const std::vector<float> x = normalized(kRGBA8, random_texels(kRGBA8, 4), {0, 1, 2});
  const std::vector<float> y = run_tensor(session, x);
  ASSERT_EQ(y.size(), kOut * kPixels);
  constexpr uint32_t kImageW = 14, kImageH = 9, kX = 3, kY = 2;
  HostImage image(device(), kRGBA32F.format, kImageW, kImageH, 16, VK_IMAGE_USAGE_STORAGE_BIT);
  ASSERT_TRUE(image.ok());
  std::vector<float> background(size_t{kImageW} * kImageH * 4, -7.0f);
  std::vector<uint8_t> bytes(background.size() * 4);
  std::memcpy(bytes.data(), background.data(), bytes.size());
  ASSERT_TRUE(image.upload(bytes, VK_IMAGE_LAYOUT_GENERAL));
  kiln_vulkan_image_binding_t b =
      image_binding(image, kRGBA32F, VK_IMAGE_USAGE_STORAGE_BIT, VK_IMAGE_LAYOUT_GENERAL, kOut, {0, 1, 2, 3});
  b.width = kImageW;
  b.height = kImageH;
  b.region_x = kX;
  b.region_y = kY;
  b.region_width = kW;
  b.region_height = kH;
  ASSERT_FALSE(Error(kiln_session_bind_vulkan_image(session.get(), "y", &b)));
  (void)run_tensor(session, x);
  const std::vector<uint8_t> texels = image.download();
  ASSERT_EQ(texels.size(), image.bytes());
  for (uint32_t py = 0; py < kImageH; ++py)
    for (uint32_t px = 0; px < kImageW; ++px)
      for (uint32_t c = 0; c < kOut; ++c) {
        const bool inside = px >= kX && px < kX + kW && py >= kY && py < kY + kH;
        const float want = inside ? display_value(y, c, (py - kY) * kW + (px - kX)) : -7.0f;
        ASSERT_NEAR(at(kRGBA32F, texels, kImageW, px, py, c), want, 1e-6f * (1 + std::abs(want)))
            << px << "," << py << " channel " << c;
      }
  kiln_session_forget_vulkan_image(session.get(), image.handle());
}

// NHWC tensors: the input image's pixels become [1, H, W, 3] rows, the
// output image is written from [1, H, W, 4].
TEST_F(CApiImageTest, NhwcTensors) {
  Model model = load(false, true);
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model, session));
  const std::vector<uint8_t> texels = random_texels(kBGRA8, 9);
  const std::vector<float> nchw = normalized(kBGRA8, texels, {0, 1, 2});
  std::vector<float> x(nchw.size());
  for (size_t c = 0; c < 3; ++c)
    for (size_t p = 0; p < kPixels; ++p) x[p * 3 + c] = nchw[c * kPixels + p];
  const std::vector<float> y = run_tensor(session, x, true);  // [1, H, W, 4]
  ASSERT_EQ(y.size(), kOut * kPixels);

  HostImage in(device(), kBGRA8.format, kW, kH, kBGRA8.texel_bytes, VK_IMAGE_USAGE_SAMPLED_BIT);
  HostImage out(device(), kRGBA32F.format, kW, kH, kRGBA32F.texel_bytes, VK_IMAGE_USAGE_STORAGE_BIT);
  ASSERT_TRUE(in.ok() && out.ok());
  ASSERT_TRUE(in.upload(texels, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL));
  ASSERT_TRUE(out.make_general());
  kiln_vulkan_image_binding_t bin = image_binding(in, kBGRA8, VK_IMAGE_USAGE_SAMPLED_BIT,
                                                  VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, 3, {0, 1, 2});
  kiln_vulkan_image_binding_t bout =
      image_binding(out, kRGBA32F, VK_IMAGE_USAGE_STORAGE_BIT, VK_IMAGE_LAYOUT_GENERAL, kOut, {0, 1, 2, 3});
  bin.flags = bout.flags = KILN_VULKAN_IMAGE_NHWC;
  ASSERT_FALSE(Error(kiln_session_bind_vulkan_image(session.get(), "image", &bin)));
  ASSERT_FALSE(Error(kiln_session_bind_vulkan_image(session.get(), "y", &bout)));
  kiln_tensor_t* none = nullptr;
  Error e = run_bound(session, &none);
  ASSERT_FALSE(e) << e.message();
  const std::vector<uint8_t> texels_out = out.download();
  ASSERT_EQ(texels_out.size(), out.bytes());
  for (size_t p = 0; p < kPixels; ++p)
    for (size_t c = 0; c < kOut; ++c)
      ASSERT_NEAR(component(kRGBA32F, texels_out, p, c), y[p * kOut + c] * kStd[c] + kMean[c], 3e-5f)
          << "pixel " << p << " channel " << c;
  // Without the flag the same images are [1, C, H, W], which this model's
  // [1, H, W, C] input is not.
  bin.flags = 0;
  e = Error(kiln_session_bind_vulkan_image(session.get(), "image", &bin));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  kiln_session_forget_vulkan_image(session.get(), in.handle());
  kiln_session_forget_vulkan_image(session.get(), out.handle());
}

// The struct as C sees it (strict C99, the header's example initializer)
// is the struct C++ sees.
TEST(CApiImageC, SameStructInC) { EXPECT_EQ(capi_c_check_image_binding_size(), sizeof(kiln_vulkan_image_binding_t)); }

// Bad bindings: each refused with the code and a message naming the problem.
TEST_F(CApiImageTest, BadBindingsAreNamedErrors) {
  Model model = load(false);
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model, session));
  HostImage in(device(), kRGBA8.format, kW, kH, kRGBA8.texel_bytes, VK_IMAGE_USAGE_SAMPLED_BIT);
  ASSERT_TRUE(in.ok());
  const kiln_vulkan_image_binding_t good = image_binding(in, kRGBA8, VK_IMAGE_USAGE_SAMPLED_BIT,
                                                         VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, 3, {0, 1, 2});
  auto expect = [&](const char* name, kiln_vulkan_image_binding_t b, kiln_status_code_t code, const char* needle) {
    Error e(kiln_session_bind_vulkan_image(session.get(), name, &b));
    EXPECT_EQ(e.code(), code) << e.to_string();
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
  };
  kiln_vulkan_image_binding_t b = good;
  b.struct_size = offsetof(kiln_vulkan_image_binding_t, flags);
  expect("image", b, KILN_INVALID_ARGUMENT, "struct_size");
  expect("nothing", good, KILN_NOT_FOUND, "inputs: image");
  b = good;
  b.format = VK_FORMAT_R8G8B8_UNORM;
  expect("image", b, KILN_INVALID_ARGUMENT, "VK_FORMAT_B8G8R8A8_UNORM");  // the list of formats
  b = good;
  b.usage = VK_IMAGE_USAGE_TRANSFER_DST_BIT;
  expect("image", b, KILN_INVALID_ARGUMENT, "VK_IMAGE_USAGE_SAMPLED_BIT");
  b = good;
  b.layout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
  expect("image", b, KILN_INVALID_ARGUMENT, "VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL");
  b = good;  // read as a storage image: a storage format, in GENERAL
  b.usage = VK_IMAGE_USAGE_STORAGE_BIT;
  expect("image", b, KILN_INVALID_ARGUMENT, "read as a storage image (no VK_IMAGE_USAGE_SAMPLED_BIT) must be in");
  b.layout = VK_IMAGE_LAYOUT_GENERAL;
  b.format = VK_FORMAT_B8G8R8A8_UNORM;
  expect("image", b, KILN_INVALID_ARGUMENT, "cannot be read as a storage image");
  b = good;
  b.width = kW + 1;
  expect("image", b, KILN_INVALID_ARGUMENT, "height and width of the image's region");
  b = good;
  b.region_x = 2;
  b.region_width = kW - 1;
  expect("image", b, KILN_INVALID_ARGUMENT, "not inside the 10x6 image");
  b = good;
  b.channel_count = 4;
  expect("image", b, KILN_INVALID_ARGUMENT, "[1,4,6,10]");
  b = good;
  b.format = VK_FORMAT_R8_UNORM;
  expect("image", b, KILN_INVALID_ARGUMENT, "image component 1");
  b = good;
  b.std[1] = 0;
  expect("image", b, KILN_INVALID_ARGUMENT, "std[1]");
  b = good;
  b.view = VK_NULL_HANDLE;
  expect("image", b, KILN_INVALID_ARGUMENT, "view");
  b = good;
  b.format = VK_FORMAT_R8G8B8A8_SRGB;
  b.flags = KILN_VULKAN_IMAGE_SRGB;
  expect("image", b, KILN_INVALID_ARGUMENT, "hardware");
  b = good;
  b.flags = 0x80;
  expect("image", b, KILN_INVALID_ARGUMENT, "flags");
  // Outputs: storage images of a storable format, in GENERAL.
  kiln_vulkan_image_binding_t o = good;
  o.channel_count = kOut;
  o.channel_map[3] = 3;
  o.usage = VK_IMAGE_USAGE_STORAGE_BIT;
  o.layout = VK_IMAGE_LAYOUT_GENERAL;
  o.format = VK_FORMAT_B8G8R8A8_UNORM;
  expect("y", o, KILN_INVALID_ARGUMENT, "output images may be");
  o.format = VK_FORMAT_R8G8B8A8_UNORM;
  o.usage = VK_IMAGE_USAGE_SAMPLED_BIT;
  expect("y", o, KILN_INVALID_ARGUMENT, "VK_IMAGE_USAGE_STORAGE_BIT");
  o.usage = VK_IMAGE_USAGE_STORAGE_BIT;
  o.layout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
  expect("y", o, KILN_INVALID_ARGUMENT, "must be in VK_IMAGE_LAYOUT_GENERAL");
  o.layout = VK_IMAGE_LAYOUT_GENERAL;
  o.tensor_width = kW / 2;
  expect("y", o, KILN_INVALID_ARGUMENT, "output images are not resized");
  o.tensor_width = 0;
  o.channel_map[3] = 0;
  expect("y", o, KILN_INVALID_ARGUMENT, "same image component");

  // Nothing above was bound: the input is still missing.
  kiln_tensor_t* y = nullptr;
  Error e = run_bound(session, &y);
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  // A bound image can be unbound like a buffer.
  ASSERT_FALSE(Error(kiln_session_bind_vulkan_image(session.get(), "image", &good)));
  ASSERT_FALSE(Error(kiln_session_unbind(session.get(), "image")));
  e = run_bound(session, &y);
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  EXPECT_NE(e.message().find("'image' is missing"), std::string::npos) << e.message();

  // Image storage: the tensor is a Kiln image, not a buffer to convert into.
  Session images;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model, images, KILN_STORAGE_IMAGE));
  e = Error(kiln_session_bind_vulkan_image(images.get(), "image", &good));
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();
  EXPECT_NE(e.message().find("KILN_STORAGE_BUFFER"), std::string::npos) << e.message();
  // The reference backend has no device.
  Session reference;
  ASSERT_FALSE(Session::create(model, KILN_BACKEND_REFERENCE, reference));
  e = Error(kiln_session_bind_vulkan_image(reference.get(), "image", &good));
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();
}

}  // namespace
