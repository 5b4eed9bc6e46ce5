// GLSL compilation, reflection, compute pipelines and dispatch, including
// sampled/storage images, specialization constants, error reporting and
// timestamps.
#include "platform/vulkan/shader_compiler.h"

#include <gtest/gtest.h>

#include <spirv-tools/libspirv.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "engine/base/dtype.h"
#include "platform/vulkan/pipeline.h"
#include "platform/vulkan/timestamps.h"
#include "platform/vulkan/transfer.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::vk {
namespace {

using testing::VulkanTest;

constexpr const char* kAxpy = R"(#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params { float bias; uint n; } p;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n) y[i] = 2.0 * x[i] + p.bias;
}
)";

struct AxpyParams {
  float bias;
  uint32_t n;
};

// spirv-val, through the SPIRV-Tools library.
std::string spirv_validate(const std::vector<uint32_t>& spirv) {
  spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_1);
  spv_diagnostic diag = nullptr;
  spv_result_t r = spvValidateBinary(ctx, spirv.data(), spirv.size(), &diag);
  std::string out = r == SPV_SUCCESS ? "" : (diag != nullptr ? diag->error : "invalid");
  spvDiagnosticDestroy(diag);
  spvContextDestroy(ctx);
  return out;
}

class ShaderTest : public VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto compiler = ShaderCompiler::create();
    ASSERT_TRUE(compiler.ok()) << compiler.status().to_string();
    compiler_ = std::move(compiler).value();
    auto arena = MemoryArena::create(device(), 8 << 20);
    ASSERT_TRUE(arena.ok());
    arena_ = std::move(arena).value();
    auto transfer = Transfer::create(device());
    ASSERT_TRUE(transfer.ok());
    transfer_ = std::move(transfer).value();
    auto descriptors = DescriptorAllocator::create(device(), 4);
    ASSERT_TRUE(descriptors.ok());
    descriptors_ = std::move(descriptors).value();
  }
  void TearDown() override {
    descriptors_.reset();
    transfer_.reset();
    arena_.reset();
    compiler_.reset();
    VulkanTest::TearDown();
  }

  std::unique_ptr<ComputePipeline> build(const std::string& glsl, const CompileOptions& options = {},
                                         std::vector<SpecializationValue> specs = {}) {
    auto spirv = compiler_->compile(glsl, options);
    EXPECT_TRUE(spirv.ok()) << spirv.status().to_string();
    if (!spirv.ok()) return nullptr;
    EXPECT_EQ(spirv_validate(*spirv), "");
    auto refl = reflect(*spirv);
    EXPECT_TRUE(refl.ok()) << refl.status().to_string();
    if (!refl.ok()) return nullptr;
    auto pipeline = ComputePipeline::create(device(), *spirv, std::move(refl).value(), specs, VK_NULL_HANDLE, "test");
    EXPECT_TRUE(pipeline.ok()) << pipeline.status().to_string();
    return pipeline.ok() ? std::move(pipeline).value() : nullptr;
  }

  Buffer upload_floats(const std::vector<float>& v) {
    auto b = arena_->create_buffer(v.size() * sizeof(float));
    EXPECT_TRUE(b.ok());
    EXPECT_TRUE(transfer_->upload(*b, v.data(), v.size() * sizeof(float)).ok());
    return std::move(b).value();
  }

  std::vector<float> download_floats(const Buffer& b) {
    std::vector<float> v(b.size() / sizeof(float));
    Status s = transfer_->download(b, v.data(), v.size() * sizeof(float));
    EXPECT_TRUE(s.ok()) << s.to_string();
    return v;
  }

  std::unique_ptr<ShaderCompiler> compiler_;
  std::unique_ptr<MemoryArena> arena_;
  std::unique_ptr<Transfer> transfer_;
  std::unique_ptr<DescriptorAllocator> descriptors_;
};

TEST_F(ShaderTest, ReflectsBindingsPushConstantsAndLocalSize) {
  auto spirv = compiler_->compile(kAxpy);
  ASSERT_TRUE(spirv.ok()) << spirv.status().to_string();
  EXPECT_EQ(spirv_validate(*spirv), "");
  auto refl = reflect(*spirv);
  ASSERT_TRUE(refl.ok()) << refl.status().to_string();
  ASSERT_EQ(refl->bindings.size(), 2u);
  EXPECT_EQ(refl->bindings[0].binding, 0u);
  EXPECT_EQ(refl->bindings[0].type, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
  EXPECT_EQ(refl->bindings[0].name, "");  // optimized SPIR-V keeps no names
  EXPECT_EQ(refl->bindings[1].binding, 1u);
  EXPECT_EQ(refl->bindings[1].type, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
  EXPECT_EQ(refl->push_constant_size, 8u);
  EXPECT_EQ(refl->local_size[0], 64u);
  EXPECT_EQ(refl->local_size[1], 1u);
  EXPECT_EQ(refl->local_size_spec_id[0], -1);
  EXPECT_EQ(refl->set_count(), 1u);

  // Unoptimized modules keep their names, which errors then quote.
  CompileOptions plain;
  plain.optimize = false;
  auto named = compiler_->compile(kAxpy, plain);
  ASSERT_TRUE(named.ok());
  auto named_refl = reflect(*named);
  ASSERT_TRUE(named_refl.ok());
  EXPECT_EQ(named_refl->bindings[0].name, "X");
  EXPECT_EQ(named_refl->bindings[1].name, "Y");
}

// Two blocks at one binding alias its memory (a buffer read as floats and
// as vec4s): one binding. A buffer and an image at one binding: an error.
TEST_F(ShaderTest, AliasedBindingsAreOneBinding) {
  auto alias = compiler_->compile(R"(#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer S { float s[]; };
layout(set = 0, binding = 0) buffer V { vec4 v[]; };
void main() { v[1] = vec4(s[0]); }
)");
  ASSERT_TRUE(alias.ok()) << alias.status().to_string();
  EXPECT_EQ(spirv_validate(*alias), "");
  auto refl = reflect(*alias);
  ASSERT_TRUE(refl.ok()) << refl.status().to_string();
  ASSERT_EQ(refl->bindings.size(), 1u);
  EXPECT_EQ(refl->bindings[0].type, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
  auto mixed = compiler_->compile(R"(#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer S { float s[]; };
layout(set = 0, binding = 0, rgba32f) uniform writeonly image2D img;
void main() { imageStore(img, ivec2(0), vec4(s[0])); }
)");
  ASSERT_TRUE(mixed.ok()) << mixed.status().to_string();
  auto bad = reflect(*mixed);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("share set 0, binding 0"), std::string::npos) << bad.status().message();
}

TEST_F(ShaderTest, ReflectsImagesUniformsAndArrays) {
  const char* src = R"(#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0) uniform sampler2D src_tex;
layout(set = 0, binding = 1, rgba32f) uniform writeonly image2D dst_img;
layout(set = 1, binding = 0) uniform Consts { vec4 scale; } consts;
layout(set = 1, binding = 2) readonly buffer W { float w[]; } weights[3];
void main() {
  ivec2 p = ivec2(gl_GlobalInvocationID.xy);
  imageStore(dst_img, p, texelFetch(src_tex, p, 0) * consts.scale + weights[2].w[0]);
}
)";
  auto spirv = compiler_->compile(src);
  ASSERT_TRUE(spirv.ok()) << spirv.status().to_string();
  auto refl = reflect(*spirv);
  ASSERT_TRUE(refl.ok()) << refl.status().to_string();
  ASSERT_EQ(refl->bindings.size(), 4u);
  EXPECT_EQ(refl->bindings[0].type, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER);
  EXPECT_EQ(refl->bindings[1].type, VK_DESCRIPTOR_TYPE_STORAGE_IMAGE);
  EXPECT_EQ(refl->bindings[2].set, 1u);
  EXPECT_EQ(refl->bindings[2].type, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER);
  EXPECT_EQ(refl->bindings[3].binding, 2u);
  EXPECT_EQ(refl->bindings[3].count, 3u);
  EXPECT_EQ(refl->push_constant_size, 0u);
  EXPECT_EQ(refl->local_size[1], 8u);
  EXPECT_EQ(refl->set_count(), 2u);
}

TEST_F(ShaderTest, RunsAComputeShader) {
  auto pipeline = build(kAxpy);
  ASSERT_NE(pipeline, nullptr);
  const uint32_t n = 1000;  // not a multiple of the workgroup size
  std::vector<float> x(1024);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.5f - 100.0f;
  Buffer xb = upload_floats(x);
  Buffer yb = upload_floats(std::vector<float>(1024, -7.0f));
  DescriptorResource res[] = {DescriptorResource::of(0, xb), DescriptorResource::of(1, yb)};
  AxpyParams params{3.25f, n};
  Status s = dispatch_sync(transfer_->submitter(), *descriptors_, *pipeline, res, push_bytes(params),
                           {(n + 63) / 64, 1, 1});
  ASSERT_TRUE(s.ok()) << s.to_string();
  std::vector<float> y = download_floats(yb);
  for (size_t i = 0; i < y.size(); ++i) {
    float want = i < n ? 2.0f * x[i] + 3.25f : -7.0f;  // the tail is untouched
    ASSERT_EQ(y[i], want) << "element " << i;
  }
  // Again with other inputs: descriptor sets are recycled between dispatches.
  for (int round = 0; round < 10; ++round) {
    params.bias = static_cast<float>(round);
    ASSERT_TRUE(dispatch_sync(transfer_->submitter(), *descriptors_, *pipeline, res, push_bytes(params),
                              {(n + 63) / 64, 1, 1})
                    .ok());
  }
  y = download_floats(yb);
  EXPECT_EQ(y[5], 2.0f * x[5] + 9.0f);
}

// The split-K fix-up's synchronization (shaders/gemm_tile.comp FIXUP): every
// workgroup stores its slice to a coherent buffer, fences, and after a
// workgroup barrier one invocation counts the arrival with an atomic; the
// last workgroup to arrive fences again and reads every slice. It must see
// them all, on every dispatch (the counter goes back to zero), with
// workgroups of 128 invocations as the GEMM tiles have: the Vulkan memory
// model's scoped barriers, written the same way, let lavapipe (Mesa 22.3)
// read stale slices about one test run in ten under CPU contention.
TEST_F(ShaderTest, LastWorkgroupToArriveSeesEveryWorkgroupsWrites) {
  const char* src = R"(#version 450
layout(local_size_x = 8, local_size_y = 16) in;
layout(set = 0, binding = 0) coherent restrict buffer Slices { float slice[]; };
layout(set = 0, binding = 1) restrict buffer Counter { int counter[]; };
layout(set = 0, binding = 2) restrict buffer Out { float result[]; };
layout(push_constant) uniform P { float base; } p;
shared int last;
void main() {
  int wg = int(gl_WorkGroupID.x), n = int(gl_NumWorkGroups.x);
  int t = int(gl_LocalInvocationID.y) * 8 + int(gl_LocalInvocationID.x);
  slice[wg * 128 + t] = p.base + float(wg * 128 + t);
  memoryBarrierBuffer();
  barrier();
  if (t == 0) {
    int before = atomicAdd(counter[0], 1);
    last = before == n - 1 ? 1 : 0;
    if (last != 0) atomicExchange(counter[0], 0);
  }
  barrier();
  if (last == 0) return;
  memoryBarrierBuffer();
  float wrong = 0.0;
  for (int i = t; i < n * 128; i += 128) wrong += slice[i] == p.base + float(i) ? 0.0 : 1.0;
  result[t] = wrong;
}
)";
  auto pipeline = build(src);
  ASSERT_NE(pipeline, nullptr);
  const uint32_t groups = 3;
  Buffer slices = upload_floats(std::vector<float>(groups * 128, -1.0f));
  Buffer counter = upload_floats(std::vector<float>(1, 0.0f));  // int 0
  Buffer out = upload_floats(std::vector<float>(128, -1.0f));
  DescriptorResource res[] = {DescriptorResource::of(0, slices), DescriptorResource::of(1, counter),
                              DescriptorResource::of(2, out)};
  for (int round = 0; round < 400; ++round) {
    const float base = static_cast<float>(round) * 1000.0f;
    ASSERT_TRUE(
        dispatch_sync(transfer_->submitter(), *descriptors_, *pipeline, res, push_bytes(base), {groups, 1, 1}).ok());
    const std::vector<float> wrong = download_floats(out);
    float total = 0;
    for (float w : wrong) total += w;
    ASSERT_EQ(total, 0.0f) << "round " << round << ": the last workgroup saw stale slices";
    ASSERT_TRUE(transfer_->upload(out, std::vector<float>(128, -1.0f).data(), 128 * sizeof(float)).ok());
  }
}

TEST_F(ShaderTest, PipelineStatisticsGoToTheNamedFile) {
  // A device created while $KILN_PIPELINE_STATS names a file appends each
  // pipeline's statistics there, or says once that it has none.
  const std::string path = ::testing::TempDir() + "kiln_pipeline_stats.tsv";
  std::remove(path.c_str());
  ASSERT_EQ(setenv("KILN_PIPELINE_STATS", path.c_str(), 1), 0);
  auto stats_device = Device::create(instance());
  ASSERT_TRUE(stats_device.ok()) << stats_device.status().to_string();
  auto spirv = compiler_->compile(kAxpy);
  ASSERT_TRUE(spirv.ok()) << spirv.status().to_string();
  auto refl = reflect(*spirv);
  ASSERT_TRUE(refl.ok());
  auto pipeline = ComputePipeline::create(**stats_device, *spirv, *refl, {}, VK_NULL_HANDLE, "axpy_stats");
  unsetenv("KILN_PIPELINE_STATS");
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().to_string();
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if ((*stats_device)->enabled().pipeline_executable_info) {
    EXPECT_EQ(text.rfind("axpy_stats\t", 0), 0u) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\t'), 3 * std::count(text.begin(), text.end(), '\n')) << text;
  } else {
    EXPECT_NE(text.find("# '" + device().capabilities().device_name +
                        "' does not offer VK_KHR_pipeline_executable_properties"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("axpy_stats"), std::string::npos) << text;
  }
  std::remove(path.c_str());
}

TEST_F(ShaderTest, SpecializationConstantsSetWorkgroupSizeAndValues) {
  const char* src = R"(#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const float scale = 1.0;
layout(set = 0, binding = 0) buffer Data { float v[]; };
void main() { v[gl_GlobalInvocationID.x] *= scale; }
)";
  auto spirv = compiler_->compile(src);
  ASSERT_TRUE(spirv.ok()) << spirv.status().to_string();
  auto refl = reflect(*spirv);
  ASSERT_TRUE(refl.ok());
  EXPECT_EQ(refl->local_size_spec_id[0], 0);
  ASSERT_GE(refl->spec_constants.size(), 1u);
  auto pipeline = build(src, {}, {SpecializationValue::u32(0, 32), SpecializationValue::f32(1, 3.0f)});
  ASSERT_NE(pipeline, nullptr);
  EXPECT_EQ(pipeline->local_size()[0], 32u);
  std::vector<float> v(128);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  Buffer b = upload_floats(v);
  DescriptorResource res[] = {DescriptorResource::of(0, b)};
  ASSERT_TRUE(dispatch_sync(transfer_->submitter(), *descriptors_, *pipeline, res, {}, {4, 1, 1}).ok());
  std::vector<float> out = download_floats(b);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(out[i], 3.0f * v[i]) << i;

  // An id the shader does not declare is named in the error.
  auto bad = ComputePipeline::create(device(), *spirv, *refl, std::vector{SpecializationValue::u32(7, 1)});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("constant_id 7"), std::string::npos);
}

TEST_F(ShaderTest, SampledImageInStorageImageOut) {
  if (!device().capabilities().rgba16f_image) GTEST_SKIP() << "no RGBA16F images";
  const char* src = R"(#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0) uniform sampler2D src_tex;
layout(set = 0, binding = 1, rgba32f) uniform writeonly image2D dst_img;
layout(push_constant) uniform P { ivec2 size; } p;
void main() {
  ivec2 q = ivec2(gl_GlobalInvocationID.xy);
  if (q.x >= p.size.x || q.y >= p.size.y) return;
  imageStore(dst_img, q, texelFetch(src_tex, q, 0) * 2.0 + vec4(q, 0, 0));
}
)";
  auto pipeline = build(src);
  ASSERT_NE(pipeline, nullptr);
  const uint32_t w = 13, h = 10;
  auto src_img = arena_->create_image(w, h, ImageFormat::kRGBA16F);
  auto dst_img = arena_->create_image(w, h, ImageFormat::kRGBA32F);
  ASSERT_TRUE(src_img.ok() && dst_img.ok());
  std::vector<uint16_t> halves(size_t(w) * h * 4);
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = float_to_half(static_cast<float>(i % 97) * 0.25f);
  ASSERT_TRUE(transfer_->upload(*src_img, halves.data(), halves.size() * 2).ok());
  // The destination is never uploaded: the dispatch moves it out of UNDEFINED.
  DescriptorResource res[] = {DescriptorResource::of(0, *src_img), DescriptorResource::of(1, *dst_img)};
  int32_t size[2] = {static_cast<int32_t>(w), static_cast<int32_t>(h)};
  Status s = dispatch_sync(transfer_->submitter(), *descriptors_, *pipeline, res, push_bytes(size), {2, 2, 1});
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(dst_img->layout(), VK_IMAGE_LAYOUT_GENERAL);
  std::vector<float> out(size_t(w) * h * 4);
  ASSERT_TRUE(transfer_->download(*dst_img, out.data(), out.size() * 4).ok());
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      for (uint32_t c = 0; c < 4; ++c) {
        size_t i = (size_t(y) * w + x) * 4 + c;
        float want = half_to_float(halves[i]) * 2.0f + (c == 0 ? float(x) : c == 1 ? float(y) : 0.0f);
        ASSERT_EQ(out[i], want) << "texel " << x << "," << y << " channel " << c;
      }
    }
  }
}

TEST_F(ShaderTest, DefinesAndIncludes) {
  const char* src = R"(#version 450
#extension GL_GOOGLE_include_directive : require
#include "scale.glsl"
layout(local_size_x = 16) in;
layout(set = 0, binding = 0) buffer Data { float v[]; };
void main() { v[gl_GlobalInvocationID.x] = apply(v[gl_GlobalInvocationID.x]); }
)";
  CompileOptions options;
  options.defines = {{"SCALE", "5.0"}};
  options.includes["scale.glsl"] = "float apply(float x) { return x * SCALE; }\n";
  auto pipeline = build(src, options);
  ASSERT_NE(pipeline, nullptr);
  std::vector<float> v(16, 1.5f);
  Buffer b = upload_floats(v);
  DescriptorResource res[] = {DescriptorResource::of(0, b)};
  ASSERT_TRUE(dispatch_sync(transfer_->submitter(), *descriptors_, *pipeline, res, {}, {1, 1, 1}).ok());
  EXPECT_EQ(download_floats(b), std::vector<float>(16, 7.5f));

  options.includes.clear();
  auto missing = compiler_->compile(src, options);
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("scale.glsl"), std::string::npos) << missing.status().message();
}

TEST_F(ShaderTest, CompileErrorsNameTheLine) {
  const char* broken = R"(#version 450
layout(local_size_x = 1) in;
void main() {
  float y = undefined_thing * 2.0;
}
)";
  CompileOptions options;
  options.source_name = "broken.comp";
  auto r = compiler_->compile(broken, options);
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.find("broken.comp:4:"), std::string::npos) << m;
  EXPECT_NE(m.find("undefined_thing"), std::string::npos) << m;
  EXPECT_NE(m.find("float y = undefined_thing * 2.0;"), std::string::npos) << "quotes the source line: " << m;

  auto bad_spirv = reflect(std::vector<uint32_t>{1, 2, 3, 4, 5, 6});
  EXPECT_EQ(bad_spirv.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ShaderTest, BindingMistakesAreReported) {
  CompileOptions plain;
  plain.optimize = false;
  auto pipeline = build(kAxpy, plain);
  ASSERT_NE(pipeline, nullptr);
  Buffer xb = upload_floats(std::vector<float>(64, 1.0f));
  auto img = arena_->create_image(4, 4, ImageFormat::kRGBA32F);
  ASSERT_TRUE(img.ok());
  AxpyParams params{0.0f, 64};
  auto run = [&](std::vector<DescriptorResource> res, std::span<const std::byte> push) {
    return dispatch_sync(transfer_->submitter(), *descriptors_, *pipeline, res, push, {1, 1, 1});
  };
  Status missing = run({DescriptorResource::of(0, xb)}, push_bytes(params));
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("binding 1 ('Y') is not bound"), std::string::npos) << missing.message();
  Status wrong_kind = run({DescriptorResource::of(0, xb), DescriptorResource::of(1, *img)}, push_bytes(params));
  EXPECT_EQ(wrong_kind.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_kind.message().find("needs a buffer"), std::string::npos) << wrong_kind.message();
  Status twice = run({DescriptorResource::of(0, xb), DescriptorResource::of(0, xb)}, push_bytes(params));
  EXPECT_NE(twice.message().find("bound twice"), std::string::npos) << twice.message();
  Status nonexistent = run({DescriptorResource::of(0, xb), DescriptorResource::of(1, xb), DescriptorResource::of(5, xb)},
                           push_bytes(params));
  EXPECT_NE(nonexistent.message().find("binding 5"), std::string::npos) << nonexistent.message();
  uint32_t short_push = 1;
  Status push = run({DescriptorResource::of(0, xb), DescriptorResource::of(1, xb)}, push_bytes(short_push));
  EXPECT_EQ(push.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(push.message().find("takes 8 bytes of push constants, 4 given"), std::string::npos) << push.message();
  Status groups = dispatch_sync(transfer_->submitter(), *descriptors_, *pipeline,
                                std::vector{DescriptorResource::of(0, xb), DescriptorResource::of(1, xb)},
                                push_bytes(params), {0, 1, 1});
  EXPECT_EQ(groups.code(), StatusCode::kInvalidArgument);
}

TEST_F(ShaderTest, TimestampsBracketADispatch) {
  if (device().timestamp_valid_bits() == 0) GTEST_SKIP() << "no timestamps on this queue";
  auto pipeline = build(kAxpy);
  ASSERT_NE(pipeline, nullptr);
  Buffer xb = upload_floats(std::vector<float>(4096, 1.0f));
  Buffer yb = upload_floats(std::vector<float>(4096, 0.0f));
  auto ts = TimestampQueries::create(device(), 4);
  ASSERT_TRUE(ts.ok()) << ts.status().to_string();
  auto sets = descriptors_->allocate(*pipeline);
  ASSERT_TRUE(sets.ok());
  DescriptorResource res[] = {DescriptorResource::of(0, xb), DescriptorResource::of(1, yb)};
  ASSERT_TRUE(write_descriptors(*pipeline, *sets, res).ok());
  AxpyParams params{1.0f, 4096};
  Status s = transfer_->submitter().run([&](VkCommandBuffer cmd) {
    (*ts)->reset(cmd);
    KILN_RETURN_IF_ERROR((*ts)->write(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT).status());
    KILN_RETURN_IF_ERROR(record_dispatch(cmd, *pipeline, *sets, push_bytes(params), {64, 1, 1}));
    KILN_RETURN_IF_ERROR((*ts)->write(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT).status());
    // Make the dispatch's writes visible to the download that follows.
    VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    b.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    device().fn().vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                                       &b, 0, nullptr, 0, nullptr);
    return ok_status();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  auto ticks = (*ts)->read_ticks();
  ASSERT_TRUE(ticks.ok()) << ticks.status().to_string();
  ASSERT_EQ(ticks->size(), 2u);
  EXPECT_GE((*ticks)[1], (*ticks)[0]);
  EXPECT_GE((*ts)->elapsed_ns((*ticks)[0], (*ticks)[1]), 0.0);
  EXPECT_EQ(download_floats(yb)[100], 3.0f);
  descriptors_->free(*sets);
  // A full pool says so instead of writing past its end.
  Status full = transfer_->submitter().run([&](VkCommandBuffer cmd) {
    (*ts)->reset(cmd);
    for (int i = 0; i < 5; ++i) KILN_RETURN_IF_ERROR((*ts)->write(cmd).status());
    return ok_status();
  });
  EXPECT_EQ(full.code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace kiln::vk
