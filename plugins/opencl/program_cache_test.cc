// The on-disk program cache (program_cache.h) on the machine's OpenCL
// device (skipped without one): a second cache on the same directory loads
// the binary instead of building, and a corrupt, truncated or foreign file
// is rejected, rebuilt and rewritten, never trusted.
#include "plugins/opencl/program_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/base/scoped_env.h"
#include "plugins/opencl/cl_device.h"
#include "plugins/opencl/cl_test_requirement.h"

namespace kiln::opencl {
namespace {

namespace fs = std::filesystem;

constexpr char kSource[] =
    "kernel void kiln_kernel(global float* y) { size_t i = get_global_id(0); y[i] = 2.0f * y[i] + 1.0f; }\n";
constexpr char kDeviceKey[] = "device: test\ndriver: 1";

class ProgramCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = ClDevice::shared();
    if (!device.ok()) {
      if (kiln::opencl::opencl_required())
        FAIL() << kiln::opencl::opencl_required_failure(device.status().to_string());
      GTEST_SKIP() << device.status().to_string();
    }
    device_ = *device;
    std::string tmpl = (fs::temp_directory_path() / "kiln-opencl-cache-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  std::unique_ptr<ProgramCache> cache(const std::string& key = kDeviceKey) const {
    return std::make_unique<ProgramCache>(device_->context(), device_->device(), dir_, key, "-w");
  }

  // Runs the program's kernel on {0, 1, 2, 3}: it must give 2x + 1.
  void expect_runs(cl_program program) const {
    cl_int rc = CL_SUCCESS;
    cl_kernel kernel = clCreateKernel(program, "kiln_kernel", &rc);
    ASSERT_EQ(rc, CL_SUCCESS);
    float y[4] = {0, 1, 2, 3};
    cl_mem mem = clCreateBuffer(device_->context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof y, y, &rc);
    ASSERT_EQ(rc, CL_SUCCESS);
    ASSERT_EQ(clSetKernelArg(kernel, 0, sizeof mem, &mem), CL_SUCCESS);
    const size_t global = 4;
    ASSERT_EQ(clEnqueueNDRangeKernel(device_->queue(), kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
              CL_SUCCESS);
    ASSERT_EQ(clEnqueueReadBuffer(device_->queue(), mem, CL_TRUE, 0, sizeof y, y, 0, nullptr, nullptr), CL_SUCCESS);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i], 2.0f * static_cast<float>(i) + 1.0f) << i;
    clReleaseMemObject(mem);
    clReleaseKernel(kernel);
  }

  std::string read(const std::string& path) const {
    std::ifstream f(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  void write(const std::string& path, const std::string& data) const {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
  }

  std::shared_ptr<ClDevice> device_;
  std::string dir_;
};

TEST_F(ProgramCacheTest, TheSecondCompileLoadsTheBinaryFromDisk) {
  auto first = cache();
  ASSERT_TRUE(first->get(kSource, "test").ok());
  EXPECT_EQ(first->stats().builds, 1u);
  ASSERT_TRUE(fs::exists(first->file_for(kSource)));
  ASSERT_TRUE(first->get(kSource, "test").ok());
  EXPECT_EQ(first->stats().memory_hits, 1u);

  auto second = cache();  // a new process, as far as the cache can tell
  auto program = second->get(kSource, "test");
  ASSERT_TRUE(program.ok()) << program.status().to_string();
  EXPECT_EQ(second->stats().disk_hits, 1u);
  EXPECT_EQ(second->stats().builds, 0u);
  EXPECT_EQ(second->stats().rejected_files, 0u);
  expect_runs(*program);
}

TEST_F(ProgramCacheTest, CorruptTruncatedOrForeignFilesAreRebuilt) {
  const std::string file = cache()->file_for(kSource);
  ASSERT_TRUE(cache()->get(kSource, "test").ok());
  const std::string good = read(file);
  ASSERT_GT(good.size(), 64u);

  std::string flipped = good;
  flipped[flipped.size() - 10] ^= 0x5a;  // inside the binary: the checksum no longer matches
  const std::string truncated = good.substr(0, good.size() / 2);
  std::string other_driver = good;     // the key inside names another driver
  other_driver[other_driver.find("driver: 1") + 8] = '2';
  for (const std::string& bad : {flipped, truncated, other_driver, std::string("garbage")}) {
    write(file, bad);
    auto c = cache();
    auto program = c->get(kSource, "test");
    ASSERT_TRUE(program.ok()) << program.status().to_string();
    EXPECT_EQ(c->stats().rejected_files, 1u);
    EXPECT_EQ(c->stats().builds, 1u);
    expect_runs(*program);
    auto after = cache();  // the rebuilt program was written back
    ASSERT_TRUE(after->get(kSource, "test").ok());
    EXPECT_EQ(after->stats().disk_hits, 1u);
  }
}

TEST_F(ProgramCacheTest, AnotherDeviceKeyIsAnotherFile) {
  ASSERT_TRUE(cache()->get(kSource, "test").ok());
  auto other = cache("device: test\ndriver: 2");
  EXPECT_NE(other->file_for(kSource), cache()->file_for(kSource));
  ASSERT_TRUE(other->get(kSource, "test").ok());
  EXPECT_EQ(other->stats().builds, 1u);
  EXPECT_EQ(other->stats().disk_hits, 0u);
}

TEST_F(ProgramCacheTest, ABuildErrorIsAStatusAndNothingIsWritten) {
  auto c = cache();
  auto program = c->get("kernel void kiln_kernel() { undeclared = 1; }", "broken kernel");
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(program.status().message().find("broken kernel"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST(ProgramCacheDirectory, FollowsKilnsCacheConventionAndCanBeTurnedOff) {
  testing::ScopedEnv cache_dir("KILN_CACHE_DIR", "/somewhere");
  EXPECT_EQ(ProgramCache::default_directory(), "/somewhere/opencl");
  testing::ScopedEnv off("KILN_OPENCL_PROGRAM_CACHE", "off");
  EXPECT_EQ(ProgramCache::default_directory(), "");
}

}  // namespace
}  // namespace kiln::opencl
