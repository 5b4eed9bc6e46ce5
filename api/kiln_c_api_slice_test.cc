// A frame budget through the C API (kiln_vulkan.h, kiln_session_record_slice):
// one run recorded a slice at a time into the game's command buffers,
// submitted one after another on its queue with no wait between them, gives
// kiln_session_run's outputs bit for bit, and the output buffer is untouched
// until the last slice ran. Budgets: a huge one is one slice, a tiny one a
// dispatch per slice, a count limit binds, no limit or a negative or NaN
// budget is INVALID_ARGUMENT; estimates come from a profiled run's
// timestamps when there is one, else from the rate model. A run in progress
// is continued, restarted on request, and interrupted (a clear status) by
// another run or a forgotten buffer. Refusals are clear statuses.
// CApiSliceZoo does the same over a real model (ctest passes it with
// KILN_SLICE_TEST_MODEL; skipped when unset).
//
// The "host" is the validated test instance and device (synchronization
// validation on): the VulkanTest fixture fails on any validation message.
#include "platform/vulkan/vk_test_env.h"  // before kiln_vulkan.h: volk includes vulkan.h itself

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "api/testing/game_commands.h"
#include "api/testing/host_buffer.h"
#include "api/testing/host_device.h"
#include "api/testing/onnx_models.h"
#include "kiln/kiln_vulkan.h"  // before kiln.hpp: its Vulkan parts
#include "kiln/kiln.hpp"

extern "C" int capi_c_check_record_slice(void);  // kiln_c_api_slice_c_check.c (strict C99)

namespace {

using kiln::api::Error;
using kiln::api::Model;
using kiln::api::Session;
using kiln::api::VulkanDevice;
using kiln::capi::testing::GameCommands;
using kiln::capi::testing::HostBuffer;
using kiln::capi::testing::nonzero_model;
using kiln::capi::testing::OnnxBuilder;

constexpr int64_t kRows = 4;
constexpr int64_t kWidth = 16;
constexpr VkDeviceSize kBytes = kRows * kWidth * sizeof(float);
constexpr int kLayers = 6;

// x[4,16] -> kLayers x (MatMul [16,16] -> Tanh) -> y: a chain of kernels,
// each reading what the one before wrote, so that slices cut real
// dependencies.
std::string deep_model() {
  OnnxBuilder b("deep");
  b.float_input("x", {kRows, kWidth});
  b.float_output("y", {kRows, kWidth});
  std::string in = "x";
  for (int l = 0; l < kLayers; ++l) {
    const std::string w = "w" + std::to_string(l), h = "h" + std::to_string(l);
    const std::string out = l + 1 == kLayers ? "y" : "t" + std::to_string(l);
    std::vector<float> values(kWidth * kWidth);
    for (int64_t i = 0; i < kWidth * kWidth; ++i)
      values[static_cast<size_t>(i)] = 0.125f * static_cast<float>((i * (7 + l)) % 13 - 6);
    b.initializer(w, {kWidth, kWidth}, values);
    b.node("MatMul", {in, w}, h);
    b.node("Tanh", {h}, out);
    in = out;
  }
  return b.serialize();
}

std::vector<float> inputs_for(size_t count, float shift) {
  std::vector<float> v(count);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i) * 0.37f + shift);
  return v;
}

kiln_record_slice_options_t slice_options(double budget_us, uint32_t max_dispatches, uint32_t flags = 0) {
  kiln_record_slice_options_t o{};
  o.struct_size = sizeof(o);
  o.budget_us = budget_us;
  o.max_dispatches = max_dispatches;
  o.flags = flags;
  return o;
}

class CApiSliceTest : public kiln::vk::testing::VulkanTest {
 protected:
  // A fp32 buffer-storage session of `model` on the wrapped test device.
  void wrapped_session(const Model& model, Session& session, bool profile = false) {
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f12.timelineSemaphore = VK_TRUE;
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &f12;
    VulkanDevice host;
    Error e = VulkanDevice::wrap(kiln::capi::testing::host_device(instance(), device(), &features), host);
    ASSERT_FALSE(e) << e.message();
    kiln_session_options_t o{};
    o.backend = KILN_BACKEND_VULKAN;
    o.vulkan_device = host.get();
    o.storage = KILN_STORAGE_BUFFER;
    o.profile = profile ? 1 : 0;
    e = Session::create(model, o, session);
    ASSERT_FALSE(e) << e.message();
  }

  Model load(const std::string& name, const std::string& bytes) {
    const std::string path = kiln::capi::testing::write_temp_model("slice_" + name, bytes);
    Model m;
    Error e = Model::load(path, m);
    EXPECT_FALSE(e) << e.message();
    std::remove(path.c_str());  // the model is in memory now
    return m;
  }

  // `deep` = deep_model(), its session on the wrapped test device, x bound
  // to `bx` and y to `by` (the test forgets them at its end).
  void bound_deep_session(Model& deep, Session& session, HostBuffer& bx, HostBuffer& by, bool profile = false) {
    deep = load("deep", deep_model());
    ASSERT_NO_FATAL_FAILURE(wrapped_session(deep, session, profile));
    ASSERT_TRUE(bx.ok() && by.ok());
    ASSERT_FALSE(session.bind_vulkan_buffer("x", bx.handle(), 0, kBytes, {kRows, kWidth}));
    ASSERT_FALSE(session.bind_vulkan_buffer("y", by.handle(), 0, kBytes));
  }

  // kiln_session_run with the session's bindings: what the bound output
  // buffer holds after it.
  std::vector<float> run_bound(Session& session, HostBuffer& out, size_t count) {
    out.write(0, std::vector<float>(count, -99.0f));
    std::vector<const kiln_tensor_t*> none(1, nullptr);
    kiln_tensor_t* outputs[] = {nullptr};
    Error e(kiln_session_run(session.get(), none.data(), 1, outputs, 1));
    EXPECT_FALSE(e) << e.message();
    return out.read(0, count);
  }

  // Records one slice into a new command buffer of `game` and returns it
  // (ended), with *progress filled; VK_NULL_HANDLE on an error (in *error).
  VkCommandBuffer slice(GameCommands& game, Session& session, const kiln_record_slice_options_t& opts,
                        kiln_record_slice_progress_t* progress, Error* error = nullptr) {
    VkCommandBuffer cmd = game.allocate(VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    game.begin(cmd);
    *progress = kiln_record_slice_progress_t{};
    progress->struct_size = sizeof(*progress);
    Error e(kiln_session_record_slice(session.get(), cmd, &opts, progress));
    EXPECT_EQ(device().fn().vkEndCommandBuffer(cmd), VK_SUCCESS);
    if (error) *error = std::move(e);
    else EXPECT_FALSE(e) << e.message();
    return (error && *error) || (!error && e) ? VK_NULL_HANDLE : cmd;
  }

  // A frame with nothing in it (submitting it and waiting drains the queue).
  VkCommandBuffer empty_frame(GameCommands& game) {
    VkCommandBuffer cmd = game.allocate(VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    game.begin(cmd);
    EXPECT_EQ(device().fn().vkEndCommandBuffer(cmd), VK_SUCCESS);
    return cmd;
  }

  // A whole sliced run: every slice submitted as it is recorded (no wait in
  // between), the last one waited for. Checks the progress reports; returns
  // the slices' sizes.
  std::vector<uint32_t> sliced_run(GameCommands& game, Session& session, const kiln_record_slice_options_t& opts,
                                   kiln_slice_estimate_t estimate = KILN_SLICE_ESTIMATE_MODEL) {
    std::vector<uint32_t> sizes;
    uint32_t recorded = 0;
    double estimated = 0;
    for (;;) {
      kiln_record_slice_progress_t p;
      VkCommandBuffer cmd = slice(game, session, opts, &p);
      if (cmd == VK_NULL_HANDLE) return sizes;
      EXPECT_EQ(p.slice_index, sizes.size());
      EXPECT_GE(p.dispatches_recorded, 1u);
      recorded += p.dispatches_recorded;
      EXPECT_EQ(p.dispatches_left, p.dispatches_total - recorded);
      EXPECT_EQ(p.done, p.dispatches_left == 0 ? 1u : 0u);
      EXPECT_EQ(p.estimate, estimate);
      EXPECT_GT(p.estimated_us, 0.0);
      estimated += p.estimated_us;
      sizes.push_back(p.dispatches_recorded);
      if (p.done) {
        EXPECT_NEAR(estimated, p.estimated_run_us, 1e-6 * p.estimated_run_us);
        game.submit_and_wait(cmd);
        return sizes;
      }
      game.submit(cmd);
      if (sizes.size() > 10000) {
        ADD_FAILURE() << "the sliced run never ends";
        return sizes;
      }
    }
  }
};

// Slices of one dispatch, then of two: the output buffer keeps its old
// contents until the last slice ran, and then holds kiln_session_run's
// output bit for bit; two runs in a row, with new inputs, both match.
TEST_F(CApiSliceTest, SlicesMatchRun) {
  Model deep;
  Session session;
  HostBuffer bx(device(), kBytes), by(device(), kBytes);
  ASSERT_NO_FATAL_FAILURE(bound_deep_session(deep, session, bx, by));
  const size_t n = kRows * kWidth;
  const std::vector<float> x1 = inputs_for(n, 0.0f), x2 = inputs_for(n, 1.5f);
  bx.write(0, x1);
  const std::vector<float> want1 = run_bound(session, by, n);
  bx.write(0, x2);
  const std::vector<float> want2 = run_bound(session, by, n);
  ASSERT_NE(want1, want2);

  GameCommands game(device());
  // One dispatch a slice: every slice but the last leaves y alone.
  bx.write(0, x1);
  by.write(0, std::vector<float>(n, -99.0f));
  std::vector<VkCommandBuffer> slices;
  for (;;) {
    kiln_record_slice_progress_t p;
    VkCommandBuffer cmd = slice(game, session, slice_options(0, 1), &p);
    ASSERT_NE(cmd, VK_NULL_HANDLE);
    EXPECT_EQ(p.dispatches_recorded, 1u);
    slices.push_back(cmd);
    if (p.done) break;
    ASSERT_LT(slices.size(), 100u);
  }
  ASSERT_GE(slices.size(), 3u) << "the model should take several dispatches";
  for (size_t i = 0; i + 1 < slices.size(); ++i) game.submit(slices[i]);
  game.submit_and_wait(empty_frame(game));  // the queue is idle: every slice but the last ran
  EXPECT_EQ(by.read(0, n), std::vector<float>(n, -99.0f)) << "the output was written before the last slice";
  game.submit_and_wait(slices.back());
  EXPECT_EQ(by.read(0, n), want1);

  // Two dispatches a slice, slices submitted without waiting, two runs.
  for (const auto* x : {&x2, &x1}) {
    bx.write(0, *x);
    by.write(0, std::vector<float>(n, -99.0f));
    const std::vector<uint32_t> sizes = sliced_run(game, session, slice_options(0, 2));
    ASSERT_GE(sizes.size(), 2u);
    for (size_t i = 0; i + 1 < sizes.size(); ++i) EXPECT_EQ(sizes[i], 2u);
    EXPECT_EQ(by.read(0, n), x == &x1 ? want1 : want2);
  }
  session.forget_vulkan_buffer(bx.handle());
  session.forget_vulkan_buffer(by.handle());
}

// Budgets: one larger than the run is one slice with everything; one below
// every dispatch is a dispatch per slice; a count limit binds; no limit, a
// negative or a NaN budget is INVALID_ARGUMENT and leaves the run in
// progress as it was.
TEST_F(CApiSliceTest, BudgetEdgeCases) {
  Model deep;
  Session session;
  HostBuffer bx(device(), kBytes), by(device(), kBytes);
  ASSERT_NO_FATAL_FAILURE(bound_deep_session(deep, session, bx, by));
  const size_t n = kRows * kWidth;
  bx.write(0, inputs_for(n, 0.25f));
  const std::vector<float> want = run_bound(session, by, n);
  GameCommands game(device());

  by.write(0, std::vector<float>(n, -99.0f));
  std::vector<uint32_t> sizes = sliced_run(game, session, slice_options(1e12, 0));
  ASSERT_EQ(sizes.size(), 1u);
  const uint32_t total = sizes[0];
  EXPECT_EQ(by.read(0, n), want);

  by.write(0, std::vector<float>(n, -99.0f));
  sizes = sliced_run(game, session, slice_options(1e-3, 0));
  EXPECT_EQ(sizes, std::vector<uint32_t>(total, 1u));
  EXPECT_EQ(by.read(0, n), want);

  by.write(0, std::vector<float>(n, -99.0f));
  sizes = sliced_run(game, session, slice_options(1e12, 3));  // the count binds
  ASSERT_EQ(sizes.size(), (total + 2) / 3);
  EXPECT_EQ(sizes[0], 3u);
  EXPECT_EQ(by.read(0, n), want);

  // Bad budgets change nothing: the run in progress goes on after them.
  kiln_record_slice_progress_t p;
  VkCommandBuffer first = slice(game, session, slice_options(0, 1), &p);
  ASSERT_NE(first, VK_NULL_HANDLE);
  ASSERT_EQ(p.slice_index, 0u);
  game.submit(first);
  for (const kiln_record_slice_options_t& bad :
       {slice_options(0, 0), slice_options(-1, 0), slice_options(-5, 2),
        slice_options(std::numeric_limits<double>::quiet_NaN(), 1)}) {
    Error e;
    EXPECT_EQ(slice(game, session, bad, &p, &e), VK_NULL_HANDLE);
    EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
    EXPECT_NE(e.message().find("budget"), std::string::npos) << e.message();
  }
  by.write(0, std::vector<float>(n, -99.0f));
  VkCommandBuffer rest = slice(game, session, slice_options(1e12, 0), &p);
  ASSERT_NE(rest, VK_NULL_HANDLE);
  EXPECT_EQ(p.slice_index, 1u);
  EXPECT_EQ(p.dispatches_recorded, total - 1);
  EXPECT_EQ(p.done, 1u);
  game.submit_and_wait(rest);
  EXPECT_EQ(by.read(0, n), want);
  session.forget_vulkan_buffer(bx.handle());
  session.forget_vulkan_buffer(by.handle());
}

// A profiled run's kernel timestamps are the estimates: the run's estimate
// is the sum of kiln_session_kernel_timing's times, and a budget of half of
// it makes slices that fit it (unless one dispatch alone does not).
TEST_F(CApiSliceTest, MeasuredEstimates) {
  Model deep;
  Session session;
  HostBuffer bx(device(), kBytes), by(device(), kBytes);
  ASSERT_NO_FATAL_FAILURE(bound_deep_session(deep, session, bx, by, /*profile=*/true));
  const size_t n = kRows * kWidth;
  GameCommands game(device());

  // Before any run of these bindings: the rate model.
  kiln_record_slice_progress_t p;
  VkCommandBuffer cmd = slice(game, session, slice_options(1e12, 0), &p);
  ASSERT_NE(cmd, VK_NULL_HANDLE);
  EXPECT_EQ(p.estimate, KILN_SLICE_ESTIMATE_MODEL);
  game.submit_and_wait(cmd);

  bx.write(0, inputs_for(n, 0.75f));
  const std::vector<float> want = run_bound(session, by, n);
  kiln_run_stats_t stats{};
  stats.struct_size = sizeof(stats);
  ASSERT_FALSE(Error(kiln_session_last_run_stats(session.get(), &stats)));
  ASSERT_GT(stats.kernel_timings, 0u) << "the test device has no timestamps";
  double measured_us = 0;
  for (uint32_t i = 0; i < stats.kernel_timings; ++i) {
    kiln_kernel_timing_t t{};
    t.struct_size = sizeof(t);
    ASSERT_FALSE(Error(kiln_session_kernel_timing(session.get(), i, &t)));
    measured_us += t.gpu_ms * 1000.0;
  }
  cmd = slice(game, session, slice_options(1e12, 0), &p);
  ASSERT_NE(cmd, VK_NULL_HANDLE);
  EXPECT_EQ(p.estimate, KILN_SLICE_ESTIMATE_MEASURED);
  EXPECT_EQ(p.dispatches_total, stats.kernel_timings);
  EXPECT_NEAR(p.estimated_run_us, measured_us, 1e-6 * measured_us + 1e-9);
  game.submit_and_wait(cmd);

  by.write(0, std::vector<float>(n, -99.0f));
  const double budget = measured_us / 2;
  for (;;) {
    cmd = slice(game, session, slice_options(budget, 0), &p);
    ASSERT_NE(cmd, VK_NULL_HANDLE);
    EXPECT_EQ(p.estimate, KILN_SLICE_ESTIMATE_MEASURED);
    if (p.dispatches_recorded > 1) {
      EXPECT_LE(p.estimated_us, budget);
    }
    if (p.done) break;
    EXPECT_LT(p.dispatches_recorded, p.dispatches_total) << "half the run's time fits all of it";
    game.submit(cmd);
  }
  game.submit_and_wait(cmd);
  EXPECT_EQ(by.read(0, n), want);
  session.forget_vulkan_buffer(bx.handle());
  session.forget_vulkan_buffer(by.handle());
}

// KILN_RECORD_SLICE_RESTART starts the run again (the abandoned run's
// submitted slices do no harm); another run between two slices, or
// forgetting a buffer the run binds, interrupts it: the next call says so,
// and the one after starts a new run, which completes correctly.
TEST_F(CApiSliceTest, RestartAndInterruptions) {
  Model deep;
  Session session;
  HostBuffer bx(device(), kBytes), by(device(), kBytes);
  ASSERT_NO_FATAL_FAILURE(bound_deep_session(deep, session, bx, by));
  const size_t n = kRows * kWidth;
  bx.write(0, inputs_for(n, 2.0f));
  const std::vector<float> want = run_bound(session, by, n);
  GameCommands game(device());

  // Restart after two slices of the run.
  by.write(0, std::vector<float>(n, -99.0f));
  kiln_record_slice_progress_t p;
  for (uint32_t i = 0; i < 2; ++i) {
    VkCommandBuffer cmd = slice(game, session, slice_options(0, 1), &p);
    ASSERT_NE(cmd, VK_NULL_HANDLE);
    EXPECT_EQ(p.slice_index, i);
    game.submit(cmd);
  }
  VkCommandBuffer cmd = slice(game, session, slice_options(0, 1, KILN_RECORD_SLICE_RESTART), &p);
  ASSERT_NE(cmd, VK_NULL_HANDLE);
  EXPECT_EQ(p.slice_index, 0u);
  EXPECT_EQ(p.dispatches_left, p.dispatches_total - 1);
  game.submit(cmd);
  cmd = slice(game, session, slice_options(1e12, 0), &p);  // the rest of the new run
  ASSERT_NE(cmd, VK_NULL_HANDLE);
  EXPECT_EQ(p.slice_index, 1u);
  EXPECT_EQ(p.done, 1u);
  game.submit_and_wait(cmd);
  EXPECT_EQ(by.read(0, n), want);

  // kiln_session_run between two slices.
  cmd = slice(game, session, slice_options(0, 1), &p);
  ASSERT_NE(cmd, VK_NULL_HANDLE);
  game.submit_and_wait(cmd);
  EXPECT_EQ(run_bound(session, by, n), want);
  Error e;
  EXPECT_EQ(slice(game, session, slice_options(0, 1), &p, &e), VK_NULL_HANDLE);
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();
  EXPECT_NE(e.message().find("interrupted after 1 of"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("another run"), std::string::npos) << e.message();
  by.write(0, std::vector<float>(n, -99.0f));
  const std::vector<uint32_t> again = sliced_run(game, session, slice_options(0, 3));
  ASSERT_FALSE(again.empty());
  EXPECT_EQ(by.read(0, n), want);

  // Forgetting a buffer the run binds drops its commands.
  cmd = slice(game, session, slice_options(0, 1), &p);
  ASSERT_NE(cmd, VK_NULL_HANDLE);
  game.submit_and_wait(cmd);
  HostBuffer other(device(), kBytes);
  ASSERT_TRUE(other.ok());
  session.forget_vulkan_buffer(by.handle());
  EXPECT_EQ(slice(game, session, slice_options(0, 1), &p, &e), VK_NULL_HANDLE);
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();
  EXPECT_NE(e.message().find("dropped"), std::string::npos) << e.message();
  // The forgotten output is unbound now: the next run says so.
  EXPECT_EQ(slice(game, session, slice_options(0, 1), &p, &e), VK_NULL_HANDLE);
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();
  EXPECT_NE(e.message().find("output 'y' is not bound"), std::string::npos) << e.message();
  ASSERT_FALSE(session.bind_vulkan_buffer("y", other.handle(), 0, kBytes));
  other.write(0, std::vector<float>(n, -99.0f));
  ASSERT_FALSE(sliced_run(game, session, slice_options(0, 4)).empty());
  EXPECT_EQ(other.read(0, n), want);
  session.forget_vulkan_buffer(bx.handle());
  session.forget_vulkan_buffer(other.handle());
}

TEST(CApiSliceC, HeaderIsC99) { EXPECT_EQ(capi_c_check_record_slice(), 1); }

TEST_F(CApiSliceTest, Refusals) {
  Model deep = load("deep", deep_model());
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(deep, session));
  GameCommands game(device());
  VkCommandBuffer cmd = game.allocate(VK_COMMAND_BUFFER_LEVEL_PRIMARY);
  game.begin(cmd);
  const kiln_record_slice_options_t opts = slice_options(1000, 0);
  kiln_record_slice_progress_t p{};
  p.struct_size = sizeof(p);
  auto expect = [](kiln_status_t* status, kiln_status_code_t code, const char* says) {
    Error e(status);
    EXPECT_EQ(e.code(), code) << e.to_string();
    EXPECT_NE(e.message().find(says), std::string::npos) << e.message();
  };
  expect(kiln_session_record_slice(nullptr, cmd, &opts, &p), KILN_INVALID_ARGUMENT, "session");
  expect(kiln_session_record_slice(session.get(), VK_NULL_HANDLE, &opts, &p), KILN_INVALID_ARGUMENT, "command_buffer");
  expect(kiln_session_record_slice(session.get(), cmd, nullptr, &p), KILN_INVALID_ARGUMENT, "options");
  kiln_record_slice_options_t small = opts;
  small.struct_size = offsetof(kiln_record_slice_options_t, max_dispatches);
  expect(kiln_session_record_slice(session.get(), cmd, &small, &p), KILN_INVALID_ARGUMENT, "struct_size");
  kiln_record_slice_progress_t small_progress{};
  small_progress.struct_size = offsetof(kiln_record_slice_progress_t, estimated_run_us);
  expect(kiln_session_record_slice(session.get(), cmd, &opts, &small_progress), KILN_INVALID_ARGUMENT, "struct_size");
  const kiln_record_slice_options_t unknown_flag = slice_options(1000, 0, 0x80);
  expect(kiln_session_record_slice(session.get(), cmd, &unknown_flag, &p), KILN_INVALID_ARGUMENT, "flags");
  // Nothing bound: a recorded run reads and writes only the host's buffers.
  expect(kiln_session_record_slice(session.get(), cmd, &opts, &p), KILN_FAILED_PRECONDITION,
         "input 'x' is not bound");
  Session reference;
  ASSERT_FALSE(Session::create(deep, KILN_BACKEND_REFERENCE, reference));
  expect(kiln_session_record_slice(reference.get(), cmd, &opts, &p), KILN_FAILED_PRECONDITION, "Vulkan session");
  // A run the host must see mid-run cannot be sliced either.
  Model nonzero = load("nonzero", nonzero_model());
  Session dynamic;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(nonzero, dynamic));
  HostBuffer b4(device(), 256), bz(device(), 256);
  ASSERT_TRUE(b4.ok() && bz.ok());
  ASSERT_FALSE(dynamic.bind_vulkan_buffer("x", b4.handle(), 0, 256, {4}));
  ASSERT_FALSE(dynamic.bind_vulkan_buffer("y", bz.handle(), 0, 256));
  expect(kiln_session_record_slice(dynamic.get(), cmd, &opts, &p), KILN_FAILED_PRECONDITION, "where_positive");
  EXPECT_EQ(device().fn().vkEndCommandBuffer(cmd), VK_SUCCESS);
  dynamic.forget_vulkan_buffer(b4.handle());
  dynamic.forget_vulkan_buffer(bz.handle());
}

// A real model (KILN_SLICE_TEST_MODEL: an image classifier with one input
// [1, 3, H, W] and one output; ctest gives the zoo's), sliced at about a
// fifth of its dispatches a slice: kiln_session_run's output bit for bit.
TEST_F(CApiSliceTest, ZooModelSlicesMatchRun) {
  const char* path = std::getenv("KILN_SLICE_TEST_MODEL");
  if (!path || !*path) GTEST_SKIP() << "KILN_SLICE_TEST_MODEL is not set (ctest's kiln_c_api_slice_zoo sets it)";
  Model model;
  Error e = Model::load(path, model);
  ASSERT_FALSE(e) << e.message();
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model, session));
  ASSERT_EQ(kiln_model_input_count(model.get()), 1u);
  ASSERT_EQ(kiln_model_output_count(model.get()), 1u);
  int64_t shape[4];
  size_t rank = 0;
  ASSERT_FALSE(Error(kiln_model_input_shape(model.get(), 0, nullptr, nullptr, 0, shape, 4, &rank)));
  ASSERT_EQ(rank, 4u);
  const size_t in_count = static_cast<size_t>(shape[0] * shape[1] * shape[2] * shape[3]);
  // The output's size: one run from host memory.
  kiln::api::Tensor x;
  ASSERT_FALSE(kiln::api::Tensor::create(KILN_DTYPE_FLOAT32, {shape[0], shape[1], shape[2], shape[3]}, x));
  const std::vector<float> input = inputs_for(in_count, 0.5f);
  std::memcpy(x.data<float>(), input.data(), in_count * sizeof(float));
  std::vector<kiln::api::Tensor> out;
  e = session.run({&x}, 1, out);
  ASSERT_FALSE(e) << e.message();
  const size_t out_count = kiln_tensor_byte_size(out[0].get()) / sizeof(float);

  HostBuffer bx(device(), in_count * sizeof(float)), by(device(), out_count * sizeof(float));
  ASSERT_TRUE(bx.ok() && by.ok());
  ASSERT_FALSE(session.bind_vulkan_buffer(kiln_model_input_name(model.get(), 0), bx.handle(), 0,
                                          in_count * sizeof(float), {shape[0], shape[1], shape[2], shape[3]}));
  ASSERT_FALSE(session.bind_vulkan_buffer(kiln_model_output_name(model.get(), 0), by.handle(), 0,
                                          out_count * sizeof(float)));
  bx.write(0, input);
  const std::vector<float> want = run_bound(session, by, out_count);

  GameCommands game(device());
  kiln_record_slice_progress_t p;
  VkCommandBuffer probe = slice(game, session, slice_options(1e12, 0), &p);  // learns the dispatch count
  ASSERT_NE(probe, VK_NULL_HANDLE);
  game.submit_and_wait(probe);
  const uint32_t per_slice = std::max(1u, p.dispatches_total / 5);
  by.write(0, std::vector<float>(out_count, -99.0f));
  const std::vector<uint32_t> sizes = sliced_run(game, session, slice_options(0, per_slice));
  EXPECT_GE(sizes.size(), 5u);
  EXPECT_EQ(by.read(0, out_count), want);
  session.forget_vulkan_buffer(bx.handle());
  session.forget_vulkan_buffer(by.handle());
}

}  // namespace
