// The kernel cache: a second load compiles nothing, pipeline-cache data
// survives a restart, and corrupt or foreign files are ignored.
#include "platform/vulkan/kernel_cache.h"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "platform/vulkan/transfer.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::vk {
namespace {

using testing::VulkanTest;
namespace fs = std::filesystem;

constexpr const char* kShader = R"(#version 450
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) buffer Data { float v[]; };
layout(push_constant) uniform P { float add; } p;
void main() { v[gl_GlobalInvocationID.x] += p.add * FACTOR; }
)";

class KernelCacheTest : public VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    std::string tmpl = (fs::temp_directory_path() / "kiln-cache-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto compiler = ShaderCompiler::create();
    ASSERT_TRUE(compiler.ok());
    compiler_ = std::move(compiler).value();
    options_.defines = {{"FACTOR", "2.0"}};
  }
  void TearDown() override {
    compiler_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
    VulkanTest::TearDown();
  }

  std::unique_ptr<KernelCache> open_cache() {
    KernelCacheOptions options;
    options.directory = dir_;
    auto cache = KernelCache::open(device(), *compiler_, options);
    EXPECT_TRUE(cache.ok()) << cache.status().to_string();
    return cache.ok() ? std::move(cache).value() : nullptr;
  }

  // Runs the cached kernel on 64 ones and returns one result.
  float run(const ComputePipeline& pipeline) {
    auto arena = MemoryArena::create(device(), 1 << 20);
    auto transfer = Transfer::create(device());
    auto descriptors = DescriptorAllocator::create(device());
    EXPECT_TRUE(arena.ok() && transfer.ok() && descriptors.ok());
    std::vector<float> v(64, 1.0f);
    auto buffer = (*arena)->create_buffer(v.size() * 4);
    EXPECT_TRUE(buffer.ok());
    EXPECT_TRUE((*transfer)->upload(*buffer, v.data(), v.size() * 4).ok());
    float add = 0.5f;
    DescriptorResource res[] = {DescriptorResource::of(0, *buffer)};
    Status s = dispatch_sync((*transfer)->submitter(), **descriptors, pipeline, res, push_bytes(add), {2, 1, 1});
    EXPECT_TRUE(s.ok()) << s.to_string();
    EXPECT_TRUE((*transfer)->download(*buffer, v.data(), v.size() * 4).ok());
    return v[63];
  }

  std::vector<fs::path> files_in(const std::string& sub) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(fs::path(dir_) / sub)) out.push_back(e.path());
    return out;
  }

  std::string dir_;
  std::unique_ptr<ShaderCompiler> compiler_;
  CompileOptions options_;
};

TEST_F(KernelCacheTest, SecondLoadCompilesNothing) {
  {
    auto cache = open_cache();
    ASSERT_NE(cache, nullptr);
    EXPECT_TRUE(cache->disk_enabled());
    auto p = cache->pipeline(kShader, options_, {}, "add");
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_EQ(cache->stats().compiles, 1u);
    EXPECT_EQ(cache->stats().disk_hits, 0u);
    EXPECT_EQ(cache->stats().pipelines_created, 1u);
    // Same process, same inputs: memory hits.
    auto again = cache->pipeline(kShader, options_, {}, "add");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *p);
    EXPECT_EQ(cache->stats().compiles, 1u);
    EXPECT_EQ(cache->stats().memory_hits, 1u);
    EXPECT_EQ(cache->stats().pipeline_hits, 1u);
    EXPECT_EQ(run(**p), 2.0f);
  }  // closing saves the pipeline cache
  EXPECT_EQ(files_in("spirv").size(), 1u);
  ASSERT_EQ(files_in("pipelines").size(), 1u);

  // A new cache over the same directory: SPIR-V from disk, no compile, and
  // the driver's pipeline cache data is loaded.
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  EXPECT_GT(cache->stats().pipeline_cache_bytes_loaded, 0u);
  auto p = cache->pipeline(kShader, options_, {}, "add");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  KernelCacheStats stats = cache->stats();
  EXPECT_EQ(stats.compiles, 0u);
  EXPECT_EQ(stats.disk_hits, 1u);
  EXPECT_EQ(stats.corrupt_files, 0u);
  EXPECT_EQ(run(**p), 2.0f);

  // Different defines are a different kernel.
  CompileOptions other = options_;
  other.defines = {{"FACTOR", "4.0"}};
  auto q = cache->pipeline(kShader, other);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(cache->stats().compiles, 1u);
  EXPECT_EQ(run(**q), 3.0f);
  // Two kernels, two SPIR-V files.
  EXPECT_EQ(files_in("spirv").size(), 2u);
}

TEST_F(KernelCacheTest, CorruptFilesAreIgnoredAndReplaced) {
  {
    auto cache = open_cache();
    ASSERT_NE(cache, nullptr);
    ASSERT_TRUE(cache->pipeline(kShader, options_).ok());
  }
  fs::path spv = files_in("spirv").at(0);
  fs::path pipelines = files_in("pipelines").at(0);
  // Flip a byte in the middle of the SPIR-V file; truncate the pipeline file.
  {
    std::fstream f(spv, std::ios::in | std::ios::out | std::ios::binary);
    const auto middle = static_cast<std::streamoff>(fs::file_size(spv) / 2);
    f.seekg(middle);
    char c = 0;
    f.get(c);
    f.seekp(middle);
    f.put(static_cast<char>(c ^ 0xff));
  }
  fs::resize_file(pipelines, 20);

  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->stats().pipeline_cache_bytes_loaded, 0u);
  auto p = cache->pipeline(kShader, options_);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  KernelCacheStats stats = cache->stats();
  EXPECT_EQ(stats.corrupt_files, 2u);
  EXPECT_EQ(stats.compiles, 1u);
  EXPECT_EQ(stats.disk_hits, 0u);
  EXPECT_EQ(run(**p), 2.0f);
  cache.reset();

  // The rewritten files are good again.
  auto healed = open_cache();
  ASSERT_NE(healed, nullptr);
  ASSERT_TRUE(healed->pipeline(kShader, options_).ok());
  EXPECT_EQ(healed->stats().compiles, 0u);
  EXPECT_EQ(healed->stats().corrupt_files, 0u);
  EXPECT_GT(healed->stats().pipeline_cache_bytes_loaded, 0u);
  // No temporary files are left behind.
  for (const auto& f : files_in("spirv")) EXPECT_EQ(f.string().find(".tmp."), std::string::npos) << f;
}

TEST_F(KernelCacheTest, PipelineCacheBytesForTheHost) {
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(cache->pipeline(kShader, options_).ok());
  auto bytes = cache->pipeline_cache_data();
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  ASSERT_GE(bytes->size(), 32u);
  cache.reset();

  // A host that persists the bytes itself hands them back at open.
  KernelCacheOptions options;
  options.use_disk = false;
  options.initial_pipeline_cache = *bytes;
  auto reopened = KernelCache::open(device(), *compiler_, options);
  ASSERT_TRUE(reopened.ok());
  EXPECT_FALSE((*reopened)->disk_enabled());
  EXPECT_EQ((*reopened)->stats().pipeline_cache_bytes_loaded, bytes->size());
  EXPECT_EQ((*reopened)->save_pipeline_cache().code(), StatusCode::kUnavailable);

  // Another device's data (vendor id changed) is refused before the driver sees it.
  std::vector<uint8_t> foreign = *bytes;
  foreign[8] ^= 0xff;
  options.initial_pipeline_cache = foreign;
  auto refused = KernelCache::open(device(), *compiler_, options);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ((*refused)->stats().pipeline_cache_bytes_loaded, 0u);
  EXPECT_EQ((*refused)->stats().corrupt_files, 1u);
}

TEST_F(KernelCacheTest, CompileErrorsPassThroughAndWriteNothing) {
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  CompileOptions no_factor;  // FACTOR undefined
  auto p = cache->pipeline(kShader, no_factor);
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("FACTOR"), std::string::npos) << p.status().message();
  EXPECT_TRUE(files_in("spirv").empty());
}

TEST_F(KernelCacheTest, DefaultDirectoryFollowsEnvironment) {
  const char* old = std::getenv("KILN_CACHE_DIR");
  std::string saved = old != nullptr ? old : "";
  setenv("KILN_CACHE_DIR", dir_.c_str(), 1);
  EXPECT_EQ(KernelCache::default_directory(), dir_);
  auto cache = KernelCache::open(device(), *compiler_);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ((*cache)->directory(), dir_);
  unsetenv("KILN_CACHE_DIR");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg != '\0') {
    EXPECT_EQ(KernelCache::default_directory(), std::string(xdg) + "/kiln");
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    EXPECT_EQ(KernelCache::default_directory(), std::string(home) + "/.cache/kiln");
  }
  if (old != nullptr) setenv("KILN_CACHE_DIR", saved.c_str(), 1);
}

}  // namespace
}  // namespace kiln::vk
