// KernelCache's batches: a set of shaders and pipelines built on N threads
// gives exactly what one thread gives (same SPIR-V, same pipelines in the
// same order, same counters), repeats are built once, the disk cache stays
// consistent, and a failing shader is named in the error, deterministically.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "platform/vulkan/kernel_cache.h"
#include "platform/vulkan/parallel_jobs.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::vk {
namespace {

using testing::VulkanTest;
namespace fs = std::filesystem;

// One source, made distinct by FACTOR; SIZE is a specialization constant
// (workgroup size) the pipelines vary.
constexpr const char* kShader = R"(#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer Data { float v[]; };
void main() { v[gl_GlobalInvocationID.x] *= FACTOR; }
)";
constexpr const char* kBrokenShader = R"(#version 450
layout(local_size_x = 1) in;
void main() { undeclared_thing = 1.0; }
)";

CompileOptions factor_options(int factor, const std::string& name) {
  CompileOptions o;
  o.defines = {{"FACTOR", std::to_string(factor) + ".0"}};
  o.source_name = name + ".comp";
  return o;
}

class KernelCacheBatchTest : public VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto compiler = ShaderCompiler::create();
    ASSERT_TRUE(compiler.ok());
    compiler_ = std::move(compiler).value();
    // Six distinct shaders, requested nine times (three repeats).
    for (int f : {1, 2, 3, 4, 5, 6, 2, 5, 1}) options_.push_back(factor_options(f, "scale" + std::to_string(f)));
    for (const CompileOptions& o : options_) requests_.push_back({kShader, &o});
  }
  void TearDown() override {
    compiler_.reset();
    VulkanTest::TearDown();
  }

  std::unique_ptr<KernelCache> open_cache(const std::string& dir = "") {
    KernelCacheOptions options;
    options.directory = dir;
    options.use_disk = !dir.empty();
    auto cache = KernelCache::open(device(), *compiler_, options);
    EXPECT_TRUE(cache.ok()) << cache.status().to_string();
    return cache.ok() ? std::move(cache).value() : nullptr;
  }

  std::unique_ptr<ShaderCompiler> compiler_;
  std::vector<CompileOptions> options_;
  std::vector<ShaderRequest> requests_;
};

TEST_F(KernelCacheBatchTest, ThreadsChangeNothingButTheThreadCount) {
  auto serial = open_cache();
  auto parallel = open_cache();
  ASSERT_TRUE(serial && parallel);
  CompileBatchReport serial_report, parallel_report;
  auto a = serial->shaders(requests_, 1, &serial_report);
  auto b = parallel->shaders(requests_, 4, &parallel_report);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(serial_report.threads, 1u);
  EXPECT_EQ(parallel_report.threads, 4u);
  EXPECT_EQ(serial_report.distinct, 6u);
  EXPECT_EQ(parallel_report.distinct, 6u);
  // The slowest entry is named by its first request (6 and 8 repeat 1 and 0).
  for (const CompileBatchReport* r : {&serial_report, &parallel_report}) {
    EXPECT_LT(r->slowest, requests_.size());
    EXPECT_NE(r->slowest, 6u);
    EXPECT_NE(r->slowest, 8u);
    EXPECT_GT(r->slowest_ms, 0.0);
  }
  ASSERT_EQ(a->size(), requests_.size());
  ASSERT_EQ(b->size(), requests_.size());
  for (size_t i = 0; i < requests_.size(); ++i) {
    SCOPED_TRACE(options_[i].source_name);
    EXPECT_EQ((*a)[i]->spirv, (*b)[i]->spirv);
    EXPECT_EQ((*a)[i]->key, (*b)[i]->key);
  }
  // Repeats share one shader; different defines do not.
  EXPECT_EQ((*b)[1], (*b)[6]);
  EXPECT_EQ((*b)[0], (*b)[8]);
  EXPECT_NE((*b)[0], (*b)[1]);
  for (KernelCache* cache : {serial.get(), parallel.get()}) {
    EXPECT_EQ(cache->stats().compiles, 6u);     // nothing compiled twice
    EXPECT_EQ(cache->stats().memory_hits, 3u);  // the repeats, as the serial path counts them
  }
  // The same batch again is all memory hits, on any thread count.
  auto again = parallel->shaders(requests_, 4);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *b);
  EXPECT_EQ(parallel->stats().compiles, 6u);

  // Pipelines: workgroup sizes 32 and 64 over the shaders; request order is
  // result order whatever finishes first.
  std::vector<SpecializationValue> size32 = {SpecializationValue::u32(0, 32)};
  std::vector<SpecializationValue> size64 = {SpecializationValue::u32(0, 64)};
  auto pipeline_requests = [&](const std::vector<const CompiledShader*>& shaders) {
    std::vector<PipelineRequest> r;
    for (size_t i = 0; i < shaders.size(); ++i)
      r.push_back({shaders[i], i % 2 ? std::span<const SpecializationValue>(size64) : size32, options_[i].source_name});
    return r;
  };
  const std::vector<PipelineRequest> serial_requests = pipeline_requests(*a);
  const std::vector<PipelineRequest> parallel_requests = pipeline_requests(*b);
  auto pa = serial->pipelines(serial_requests, 1, &serial_report);
  auto pb = parallel->pipelines(parallel_requests, 4, &parallel_report);
  ASSERT_TRUE(pa.ok()) << pa.status().to_string();
  ASSERT_TRUE(pb.ok()) << pb.status().to_string();
  EXPECT_EQ(parallel_report.threads, 4u);
  // Requests 1 and 6 differ in workgroup size (64 vs 32), 0 and 8 share it.
  EXPECT_EQ(parallel_report.distinct, 8u);
  for (size_t i = 0; i < requests_.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ((*pa)[i]->local_size(), (*pb)[i]->local_size());
    EXPECT_EQ((*pb)[i]->local_size()[0], i % 2 ? 64u : 32u);
    EXPECT_EQ((*pa)[i]->name(), (*pb)[i]->name());
    EXPECT_NE((*pb)[i]->handle(), VK_NULL_HANDLE);
  }
  EXPECT_EQ((*pb)[0], (*pb)[8]);
  EXPECT_NE((*pb)[1], (*pb)[6]);
  for (KernelCache* cache : {serial.get(), parallel.get()}) {
    EXPECT_EQ(cache->stats().pipelines_created, 8u);
    EXPECT_EQ(cache->stats().pipeline_hits, 1u);
  }
}

TEST_F(KernelCacheBatchTest, TheFirstFailingShaderIsNamedWhateverTheTiming) {
  std::vector<CompileOptions> options = options_;
  options[2].source_name = "broken_early.comp";
  options[5].source_name = "broken_late.comp";
  std::vector<ShaderRequest> requests;
  for (size_t i = 0; i < options.size(); ++i)
    requests.push_back({i == 2 || i == 5 ? kBrokenShader : kShader, &options[i]});
  for (unsigned threads : {1u, 2u, 4u, 8u}) {
    for (int repeat = 0; repeat < 3; ++repeat) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      auto cache = open_cache();
      ASSERT_NE(cache, nullptr);
      CompileBatchReport report;
      auto result = cache->shaders(requests, threads, &report);
      ASSERT_FALSE(result.ok());
      EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
      const std::string message = result.status().to_string();
      EXPECT_NE(message.find("broken_early.comp"), std::string::npos) << message;
      EXPECT_EQ(message.find("broken_late.comp"), std::string::npos) << message;
      EXPECT_EQ(report.failed, 2u);
      // The cache is still usable, and holds no half-built entry.
      auto fine = cache->shaders(requests_, threads);
      ASSERT_TRUE(fine.ok()) << fine.status().to_string();
      EXPECT_EQ((*fine)[0]->spirv.empty(), false);
    }
  }
}

TEST_F(KernelCacheBatchTest, PipelineErrorsNameTheKernel) {
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  auto shaders = cache->shaders(requests_, 2);
  ASSERT_TRUE(shaders.ok());
  std::vector<SpecializationValue> ok_size = {SpecializationValue::u32(0, 32)};
  std::vector<SpecializationValue> zero_size = {SpecializationValue::u32(0, 0)};  // a zero workgroup is invalid
  std::vector<PipelineRequest> requests = {{(*shaders)[0], ok_size, "fine"},
                                           {(*shaders)[1], zero_size, "zero_workgroup"},
                                           {nullptr, ok_size, "no_shader"}};
  CompileBatchReport report;
  auto missing = cache->pipelines(requests, 2, &report);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no_shader"), std::string::npos) << missing.status().to_string();
  EXPECT_EQ(report.failed, 2u);
  requests.pop_back();
  auto bad = cache->pipelines(requests, 2, &report);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("zero_workgroup"), std::string::npos) << bad.status().to_string();
  EXPECT_EQ(report.failed, 1u);
}

// Several batches at once on one cache backed by disk: every thread gets
// correct shaders, each distinct shader lands in exactly one valid file,
// and a second cache over the directory compiles nothing.
TEST_F(KernelCacheBatchTest, ConcurrentBatchesShareOneDiskCache) {
  std::string tmpl = (fs::temp_directory_path() / "kiln-batch-test-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  {
    auto cache = open_cache(dir);
    ASSERT_NE(cache, nullptr);
    std::atomic<int> failures{0};
    parallel_jobs(4, 4, [&](size_t) {
      auto r = cache->shaders(requests_, 3);
      if (!r.ok() || (*r)[0]->spirv.empty()) failures.fetch_add(1);
    });
    EXPECT_EQ(failures.load(), 0);
    // Concurrent batches may both compile a shader neither found (the first
    // insert wins); within a batch nothing is compiled twice.
    EXPECT_GE(cache->stats().compiles, 6u);
    EXPECT_EQ(cache->stats().write_failures, 0u);
  }
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / "spirv")) {
    EXPECT_EQ(e.path().extension(), ".spv") << e.path();  // no temp file left behind
    ++files;
  }
  EXPECT_EQ(files, 6u);
  {
    auto cache = open_cache(dir);
    ASSERT_NE(cache, nullptr);
    auto r = cache->shaders(requests_, 4);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(cache->stats().compiles, 0u);
    EXPECT_EQ(cache->stats().disk_hits, 6u);
    EXPECT_EQ(cache->stats().corrupt_files, 0u);
  }
  fs::remove_all(dir);
}

TEST(ParallelJobsTest, RunsEveryJobOnceAndStopsInOrder) {
  std::vector<std::atomic<int>> runs(100);
  EXPECT_EQ(parallel_jobs(100, 4, [&](size_t i) { runs[i].fetch_add(1); }), 4u);
  for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
  EXPECT_EQ(parallel_jobs(3, 8, [](size_t) {}), 3u);  // never more threads than jobs
  EXPECT_EQ(parallel_jobs(0, 8, [](size_t) {}), 0u);
  EXPECT_EQ(parallel_jobs(5, 0, [](size_t) {}), 1u);  // 0 threads means the caller alone

  // Stop after job 10 fails: every job below 10 ran, later ones may be skipped.
  std::vector<std::atomic<int>> ran(1000);
  std::atomic<bool> stop{false};
  parallel_jobs(
      1000, 4,
      [&](size_t i) {
        ran[i].store(1);
        if (i == 10) stop.store(true);
      },
      [&] { return stop.load(); });
  for (size_t i = 0; i <= 10; ++i) EXPECT_EQ(ran[i].load(), 1) << i;
  size_t total = 0;
  for (const auto& r : ran) total += r.load();
  EXPECT_LT(total, 1000u);
}

TEST(ParallelJobsTest, ThreadCountComesFromTheEnvironment) {
  const char* old = std::getenv("KILN_COMPILE_THREADS");
  const std::string saved = old ? old : "";
  setenv("KILN_COMPILE_THREADS", "3", 1);
  EXPECT_EQ(default_compile_threads(), 3u);
  EXPECT_EQ(resolve_compile_threads(0), 3u);
  EXPECT_EQ(resolve_compile_threads(5), 5u);
  for (const char* bad : {"0", "-2", "lots", "4x"}) {
    setenv("KILN_COMPILE_THREADS", bad, 1);
    const unsigned n = default_compile_threads();
    EXPECT_GE(n, 1u) << bad;
    EXPECT_LE(n, kMaxDefaultCompileThreads) << bad;
  }
  if (old) setenv("KILN_COMPILE_THREADS", saved.c_str(), 1);
  else unsetenv("KILN_COMPILE_THREADS");
}

}  // namespace
}  // namespace kiln::vk
