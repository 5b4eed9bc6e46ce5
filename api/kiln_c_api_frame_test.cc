// Kiln inside a game's frame, through the C API (kiln_vulkan.h).
// Asynchronous runs: kiln_session_submit returns before the GPU ran
// anything (its submission waits on a host timeline semaphore that the test
// signals only afterwards), poll and a zero-timeout wait see it pending, and
// the outputs after the wait are kiln_session_run's bit for bit, in
// VkBuffers and in host memory. Recording: kiln_session_record into the
// game's primary and secondary command buffers gives kiln_session_run's
// outputs bit for bit. Debugging and memory: every dispatch, in Kiln's
// command buffers and the game's, is enclosed in a debug label when the
// instance has VK_EXT_debug_utils (seen through an interposed
// vkGetInstanceProcAddr); kiln_session_memory reports weights before the
// first run and activations after; a memory limit fails creation or the
// first run with OUT_OF_MEMORY naming need and limit. Refusals are clear
// statuses naming the reason.
//
// The "host" is the validated test instance and device (synchronization
// validation on): the VulkanTest fixture fails on any validation message.
#include "platform/vulkan/vk_test_env.h"  // before kiln_vulkan.h: volk includes vulkan.h itself

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "api/testing/game_commands.h"
#include "api/testing/host_buffer.h"
#include "api/testing/host_device.h"
#include "api/testing/onnx_models.h"
#include "kiln/kiln_vulkan.h"  // before kiln.hpp: its Vulkan parts
#include "kiln/kiln.hpp"

namespace {

using kiln::api::Error;
using kiln::api::Model;
using kiln::api::Session;
using kiln::api::Tensor;
using kiln::api::VulkanDevice;
using kiln::capi::testing::GameCommands;
using kiln::capi::testing::HostBuffer;
using kiln::capi::testing::nonzero_model;

const std::string kModel = std::string(KILN_TEST_DATA_DIR) + "/add_relu.onnx";  // y = relu(x + c), x [N, 3]
constexpr int64_t kRows = 4;
constexpr VkDeviceSize kBytes = kRows * 3 * sizeof(float);

std::vector<float> inputs_for(float shift) {
  std::vector<float> v(kRows * 3);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.75f - 2.0f + shift;
  return v;
}

// The label commands the game's interposed vkGetInstanceProcAddr handed
// Kiln, which log the labels and forward to the real ones (so the
// validation layers still check them).
struct LabelLog {
  PFN_vkGetInstanceProcAddr real_gipa = nullptr;
  PFN_vkCmdBeginDebugUtilsLabelEXT begin = nullptr;
  PFN_vkCmdEndDebugUtilsLabelEXT end = nullptr;
  bool hide = false;  // act as an instance without VK_EXT_debug_utils
  std::vector<std::string> names;
  int closed = 0;
};
LabelLog g_labels;

VKAPI_ATTR void VKAPI_CALL logged_begin(VkCommandBuffer cmd, const VkDebugUtilsLabelEXT* label) {
  g_labels.names.emplace_back(label->pLabelName ? label->pLabelName : "");
  g_labels.begin(cmd, label);
}
VKAPI_ATTR void VKAPI_CALL logged_end(VkCommandBuffer cmd) {
  ++g_labels.closed;
  g_labels.end(cmd);
}
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL logging_gipa(VkInstance instance, const char* name) {
  const std::string n = name;
  if (n == "vkCmdBeginDebugUtilsLabelEXT") {
    g_labels.begin = reinterpret_cast<PFN_vkCmdBeginDebugUtilsLabelEXT>(g_labels.real_gipa(instance, name));
    return g_labels.hide || !g_labels.begin ? nullptr : reinterpret_cast<PFN_vkVoidFunction>(logged_begin);
  }
  if (n == "vkCmdEndDebugUtilsLabelEXT") {
    g_labels.end = reinterpret_cast<PFN_vkCmdEndDebugUtilsLabelEXT>(g_labels.real_gipa(instance, name));
    return g_labels.hide || !g_labels.end ? nullptr : reinterpret_cast<PFN_vkVoidFunction>(logged_end);
  }
  return g_labels.real_gipa(instance, name);
}

class CApiFrameTest : public kiln::vk::testing::VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(device().enabled().timeline_semaphore) << "the test device has no timeline semaphores";
    Error e = Model::load(kModel, model_);
    ASSERT_FALSE(e) << e.message();
  }
  void TearDown() override {
    if (host_timeline_ != VK_NULL_HANDLE) device().fn().vkDestroySemaphore(device().handle(), host_timeline_, nullptr);
    VulkanTest::TearDown();
  }

  // A fp32 buffer-storage session on the wrapped test device, told that the
  // device has timeline semaphores (as a game passes what it enabled).
  void wrapped_session(const Model& model, Session& session, bool tell_features = true, uint64_t memory_limit = 0,
                       PFN_vkGetInstanceProcAddr gipa = nullptr) {
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f12.timelineSemaphore = VK_TRUE;
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &f12;
    const kiln_vulkan_host_device_t h =
        kiln::capi::testing::host_device(instance(), device(), tell_features ? &features : nullptr, gipa);
    VulkanDevice host;
    Error e = VulkanDevice::wrap(h, host);
    ASSERT_FALSE(e) << e.message();
    kiln_session_options_t o{};
    o.backend = KILN_BACKEND_VULKAN;
    o.vulkan_device = host.get();
    o.storage = KILN_STORAGE_BUFFER;
    o.device_memory_limit = memory_limit;
    create_error_ = Session::create(model, o, session);
    if (memory_limit == 0) {
      ASSERT_FALSE(create_error_) << create_error_.message();
    }
  }

  // The game's timeline semaphore, at 0.
  VkSemaphore host_timeline() {
    VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    info.pNext = &type;
    EXPECT_EQ(device().fn().vkCreateSemaphore(device().handle(), &info, nullptr, &host_timeline_), VK_SUCCESS);
    return host_timeline_;
  }
  void host_signal(uint64_t value) {
    VkSemaphoreSignalInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
    info.semaphore = host_timeline_;
    info.value = value;
    ASSERT_EQ(device().fn().vkSignalSemaphore(device().handle(), &info), VK_SUCCESS);
  }
  uint64_t host_value() {
    uint64_t v = 0;
    EXPECT_EQ(device().fn().vkGetSemaphoreCounterValue(device().handle(), host_timeline_, &v), VK_SUCCESS);
    return v;
  }

  // kiln_session_run's output for x, from host memory.
  std::vector<float> run_sync(Session& session, const std::vector<float>& x) {
    Tensor t;
    EXPECT_FALSE(Tensor::create(KILN_DTYPE_FLOAT32, {kRows, 3}, t));
    std::memcpy(t.data<float>(), x.data(), kBytes);
    std::vector<Tensor> out;
    Error e = session.run({&t}, 1, out);
    EXPECT_FALSE(e) << e.message();
    if (e) return {};
    return std::vector<float>(out[0].data<float>(), out[0].data<float>() + x.size());
  }

  Model load(const std::string& name, const std::string& bytes) {
    const std::string path = kiln::capi::testing::write_temp_model("frame_" + name, bytes);
    Model m;
    Error e = Model::load(path, m);
    EXPECT_FALSE(e) << e.message();
    std::remove(path.c_str());  // the model is in memory now
    return m;
  }

  Model model_;
  Error create_error_;  // the last wrapped_session's
  VkSemaphore host_timeline_ = VK_NULL_HANDLE;
};

// Inputs and outputs in the game's buffers: the submission waits for the
// game's semaphore at 1, so nothing runs before the test signals it.
TEST_F(CApiFrameTest, SubmitReturnsBeforeTheGpuRuns) {
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model_, session));
  const std::vector<float> x = inputs_for(0.1f);
  const std::vector<float> want = run_sync(session, x);
  const std::vector<int64_t> shape{kRows, 3};
  HostBuffer bx(device(), kBytes), by(device(), kBytes);
  ASSERT_TRUE(bx.ok() && by.ok());
  bx.write(0, x);
  by.write(0, std::vector<float>(kRows * 3, -99.0f));
  ASSERT_FALSE(session.bind_vulkan_buffer("x", bx.handle(), 0, kBytes, shape));
  ASSERT_FALSE(session.bind_vulkan_buffer("y", by.handle(), 0, kBytes));
  const VkSemaphore game = host_timeline();

  const kiln_vulkan_semaphore_value_t rendered{game, 1, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT};
  const kiln_vulkan_semaphore_value_t inferred{game, 2, 0};
  const kiln_vulkan_submit_sync_t sync{sizeof(kiln_vulkan_submit_sync_t), &rendered, 1, &inferred, 1};
  const kiln_tensor_t* none[] = {nullptr};
  uint64_t ticket = 0;
  Error e(kiln_session_submit(session.get(), none, 1, &sync, &ticket));
  ASSERT_FALSE(e) << e.message();
  // The first submit recorded these bindings; the next ones only submit.
  // Both wait for the game, which has not signalled yet.
  int done = -1;
  ASSERT_FALSE(Error(kiln_session_poll(session.get(), ticket, &done)));
  EXPECT_EQ(done, 0);
  kiln_tensor_t* y = nullptr;
  e = Error(kiln_session_wait(session.get(), ticket, 0, &y, 1));
  EXPECT_EQ(e.code(), KILN_UNAVAILABLE) << e.to_string();
  e = Error(kiln_session_wait(session.get(), ticket, 2'000'000, &y, 1));  // 2 ms: still waiting on the game
  EXPECT_EQ(e.code(), KILN_UNAVAILABLE) << e.to_string();
  EXPECT_EQ(by.read(0, 1)[0], -99.0f);
  EXPECT_EQ(host_value(), 0u);
  // Frame pipelining: the same bindings again, with no wait in between.
  uint64_t second = 0;
  e = Error(kiln_session_submit(session.get(), none, 1, nullptr, &second));
  ASSERT_FALSE(e) << e.message();
  EXPECT_GT(second, ticket);
  ASSERT_FALSE(Error(kiln_session_poll(session.get(), second, &done)));
  EXPECT_EQ(done, 0);

  ASSERT_NO_FATAL_FAILURE(host_signal(1));  // the game's frame is ready
  static char sentinel;
  y = reinterpret_cast<kiln_tensor_t*>(&sentinel);
  e = Error(kiln_session_wait(session.get(), ticket, UINT64_MAX, &y, 1));
  ASSERT_FALSE(e) << e.message();
  EXPECT_EQ(y, nullptr);  // bound: the result is in the game's buffer
  EXPECT_EQ(by.read(0, x.size()), want);
  e = Error(kiln_session_wait(session.get(), second, UINT64_MAX, &y, 1));
  ASSERT_FALSE(e) << e.message();
  EXPECT_EQ(host_value(), 2u);  // Kiln signalled the game's semaphore
  VkSemaphore timeline = VK_NULL_HANDLE;
  ASSERT_FALSE(Error(kiln_session_timeline(session.get(), &timeline)));
  uint64_t kiln_value = 0;
  ASSERT_EQ(device().fn().vkGetSemaphoreCounterValue(device().handle(), timeline, &kiln_value), VK_SUCCESS);
  EXPECT_GE(kiln_value, second);
  // A ticket is waited for once.
  e = Error(kiln_session_poll(session.get(), ticket, &done));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  session.forget_vulkan_buffer(bx.handle());
  session.forget_vulkan_buffer(by.handle());
}

// Host-memory inputs and outputs: the input is copied during submit (freed
// right after), the output read back by the wait; while the ticket runs,
// the same shapes cannot be submitted again (its staging memory is busy).
TEST_F(CApiFrameTest, HostMemoryInputsAndOutputs) {
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model_, session));
  kiln_session_set_wait_spin(session.get(), 0);
  const std::vector<float> x = inputs_for(-1.0f);
  const std::vector<float> want = run_sync(session, x);
  const VkSemaphore game = host_timeline();
  const kiln_vulkan_semaphore_value_t rendered{game, 5, 0};
  const kiln_vulkan_submit_sync_t sync{sizeof(kiln_vulkan_submit_sync_t), &rendered, 1, nullptr, 0};
  uint64_t ticket = 0;
  {
    Tensor t;
    ASSERT_FALSE(Tensor::create(KILN_DTYPE_FLOAT32, {kRows, 3}, t));
    std::memcpy(t.data<float>(), x.data(), kBytes);
    const kiln_tensor_t* in[] = {t.get()};
    Error e(kiln_session_submit(session.get(), in, 1, &sync, &ticket));
    ASSERT_FALSE(e) << e.message();
    e = Error(kiln_session_submit(session.get(), in, 1, nullptr, &ticket));
    EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();
    EXPECT_NE(e.message().find("still running"), std::string::npos) << e.message();
  }  // the input tensor is gone; the run is not
  int done = -1;
  ASSERT_FALSE(Error(kiln_session_poll(session.get(), ticket, &done)));
  EXPECT_EQ(done, 0);
  ASSERT_NO_FATAL_FAILURE(host_signal(5));
  kiln_tensor_t* y = nullptr;
  Error e(kiln_session_wait(session.get(), ticket, UINT64_MAX, &y, 1));
  ASSERT_FALSE(e) << e.message();
  ASSERT_NE(y, nullptr);
  Tensor out(y);
  EXPECT_EQ(std::vector<float>(out.data<float>(), out.data<float>() + x.size()), want);

  // A completed ticket not yet waited for keeps its outputs when the same
  // shapes run again (kiln_session_run reuses the staging memory).
  const std::vector<float> x2 = inputs_for(2.0f);
  Tensor t2;
  ASSERT_FALSE(Tensor::create(KILN_DTYPE_FLOAT32, {kRows, 3}, t2));
  std::memcpy(t2.data<float>(), x2.data(), kBytes);
  const kiln_tensor_t* in2[] = {t2.get()};
  uint64_t third = 0;
  ASSERT_FALSE(Error(kiln_session_submit(session.get(), in2, 1, nullptr, &third)));
  const std::vector<float> want2 = run_sync(session, x2);
  (void)run_sync(session, x);
  e = Error(kiln_session_wait(session.get(), third, UINT64_MAX, &y, 1));
  ASSERT_FALSE(e) << e.message();
  Tensor out2(y);
  EXPECT_EQ(std::vector<float>(out2.data<float>(), out2.data<float>() + x.size()), want2);
}

TEST_F(CApiFrameTest, Refusals) {
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model_, session));
  Tensor t;
  ASSERT_FALSE(Tensor::create(KILN_DTYPE_FLOAT32, {kRows, 3}, t));
  const kiln_tensor_t* in[] = {t.get()};
  uint64_t ticket = 0;
  int done = 0;
  Error e(kiln_session_poll(session.get(), 42, &done));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  kiln_vulkan_submit_sync_t small{};
  small.struct_size = 4;
  e = Error(kiln_session_submit(session.get(), in, 1, &small, &ticket));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  kiln_vulkan_submit_sync_t null_list{sizeof(kiln_vulkan_submit_sync_t), nullptr, 1, nullptr, 0};
  e = Error(kiln_session_submit(session.get(), in, 1, &null_list, &ticket));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  e = Error(kiln_session_submit(session.get(), in, 1, nullptr, nullptr));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();

  // Not a Vulkan session.
  Session reference;
  ASSERT_FALSE(Session::create(model_, KILN_BACKEND_REFERENCE, reference));
  e = Error(kiln_session_submit(reference.get(), in, 1, nullptr, &ticket));
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();

  // A device wrapped without its features: no timeline semaphores.
  Session plain;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model_, plain, /*tell_features=*/false));
  e = Error(kiln_session_submit(plain.get(), in, 1, nullptr, &ticket));
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();
  EXPECT_NE(e.message().find("timeline"), std::string::npos) << e.message();

  // A run that reads values back mid-run, named.
  Model nonzero = load("nonzero", nonzero_model());
  Session dynamic;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(nonzero, dynamic));
  Tensor x4;
  ASSERT_FALSE(Tensor::create(KILN_DTYPE_FLOAT32, {4}, x4));
  const kiln_tensor_t* in4[] = {x4.get()};
  e = Error(kiln_session_submit(dynamic.get(), in4, 1, nullptr, &ticket));
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();
  EXPECT_NE(e.message().find("where_positive"), std::string::npos) << e.message();
}

// kiln_session_record into the game's primary command buffer, submitted by
// the game twice with new inputs, and into a secondary one: the outputs are
// kiln_session_run's, bit for bit.
TEST_F(CApiFrameTest, RecordMatchesRun) {
  Model mlp = load("mlp", kiln::capi::testing::mlp_model(kRows, 3));
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(mlp, session));
  const std::vector<int64_t> shape{kRows, 3};
  HostBuffer bx(device(), kBytes), by(device(), kBytes);
  ASSERT_TRUE(bx.ok() && by.ok());
  ASSERT_FALSE(session.bind_vulkan_buffer("x", bx.handle(), 0, kBytes, shape));
  ASSERT_FALSE(session.bind_vulkan_buffer("y", by.handle(), 0, kBytes));
  const kiln_tensor_t* none[] = {nullptr};
  kiln_tensor_t* out[] = {nullptr};
  auto run_bound = [&](const std::vector<float>& x) {
    bx.write(0, x);
    by.write(0, std::vector<float>(kRows * 3, -99.0f));
    Error e(kiln_session_run(session.get(), none, 1, out, 1));
    EXPECT_FALSE(e) << e.message();
    return by.read(0, x.size());
  };
  const std::vector<float> x1 = inputs_for(0.5f), x2 = inputs_for(-3.0f);
  const std::vector<float> want1 = run_bound(x1), want2 = run_bound(x2);
  ASSERT_NE(want1, want2);

  GameCommands game(device());
  VkCommandBuffer frame = game.allocate(VK_COMMAND_BUFFER_LEVEL_PRIMARY);
  game.begin(frame);
  Error e(kiln_session_record(session.get(), frame));
  ASSERT_FALSE(e) << e.message();
  ASSERT_EQ(device().fn().vkEndCommandBuffer(frame), VK_SUCCESS);
  for (const auto* x : {&x1, &x2}) {
    bx.write(0, *x);
    by.write(0, std::vector<float>(kRows * 3, -99.0f));
    ASSERT_NO_FATAL_FAILURE(game.submit_and_wait(frame));
    EXPECT_EQ(by.read(0, x->size()), x == &x1 ? want1 : want2);
  }

  // A secondary command buffer, executed by the game's primary.
  VkCommandBuffer secondary = game.allocate(VK_COMMAND_BUFFER_LEVEL_SECONDARY);
  VkCommandBufferInheritanceInfo inheritance{VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO};
  game.begin(secondary, &inheritance);
  e = Error(kiln_session_record(session.get(), secondary));
  ASSERT_FALSE(e) << e.message();
  ASSERT_EQ(device().fn().vkEndCommandBuffer(secondary), VK_SUCCESS);
  VkCommandBuffer primary = game.allocate(VK_COMMAND_BUFFER_LEVEL_PRIMARY);
  game.begin(primary);
  device().fn().vkCmdExecuteCommands(primary, 1, &secondary);
  ASSERT_EQ(device().fn().vkEndCommandBuffer(primary), VK_SUCCESS);
  bx.write(0, x1);
  by.write(0, std::vector<float>(kRows * 3, -99.0f));
  ASSERT_NO_FATAL_FAILURE(game.submit_and_wait(primary));
  EXPECT_EQ(by.read(0, x1.size()), want1);
  session.forget_vulkan_buffer(bx.handle());
  session.forget_vulkan_buffer(by.handle());
}

// The mlp's input x written to `bx` and bound, its output bound to `by`
// (both at offset 0), one kiln_session_run: `want` is what it wrote.
void bind_and_run(Session& session, HostBuffer& bx, const std::vector<float>& x, HostBuffer& by,
                  std::vector<float>& want) {
  bx.write(0, x);
  ASSERT_FALSE(session.bind_vulkan_buffer("x", bx.handle(), 0, kBytes, {kRows, 3}));
  ASSERT_FALSE(session.bind_vulkan_buffer("y", by.handle(), 0, kBytes));
  const kiln_tensor_t* none[] = {nullptr};
  kiln_tensor_t* out[] = {nullptr};
  ASSERT_FALSE(Error(kiln_session_run(session.get(), none, 1, out, 1)));
  want = by.read(0, x.size());
}

// KILN_RECORD_VIA_SECONDARY: each frame's primary executes Kiln's
// secondary command buffer of those bindings. Two frames in flight at once
// (both primaries pending: the secondary must allow simultaneous use, which
// the validation layers check), a frame after re-binding the output (a new
// secondary, writing there), and after forgetting the buffers (the
// signatures and their secondaries freed: validation reports a leak or a
// use of a freed buffer). Outputs are kiln_session_run's, bit for bit.
TEST_F(CApiFrameTest, RecordViaSecondaryMatchesRun) {
  Model mlp = load("mlp", kiln::capi::testing::mlp_model(kRows, 3));
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(mlp, session));
  HostBuffer bx(device(), kBytes), by(device(), kBytes), bz(device(), kBytes);
  ASSERT_TRUE(bx.ok() && by.ok() && bz.ok());
  const std::vector<float> x = inputs_for(0.25f);
  std::vector<float> want;
  ASSERT_NO_FATAL_FAILURE(bind_and_run(session, bx, x, by, want));
  const std::vector<float> stale(kRows * 3, -99.0f);

  kiln_record_options_t options{sizeof(options)};
  options.flags = KILN_RECORD_VIA_SECONDARY;
  options.queue_family_index = device().queue_family();
  GameCommands game(device());
  auto record_frame = [&]() {
    VkCommandBuffer cmd = game.allocate(VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    game.begin(cmd);
    Error e(kiln_session_record_with_options(session.get(), cmd, &options));
    EXPECT_FALSE(e) << e.message();
    EXPECT_EQ(device().fn().vkEndCommandBuffer(cmd), VK_SUCCESS);
    return cmd;
  };
  by.write(0, stale);
  VkCommandBuffer first = record_frame(), second = record_frame();
  game.submit(first);
  ASSERT_NO_FATAL_FAILURE(game.submit_and_wait(second));
  EXPECT_EQ(by.read(0, x.size()), want);

  ASSERT_FALSE(session.bind_vulkan_buffer("y", bz.handle(), 0, kBytes));
  by.write(0, stale);
  bz.write(0, stale);
  ASSERT_NO_FATAL_FAILURE(game.submit_and_wait(record_frame()));
  EXPECT_EQ(by.read(0, x.size()), stale);
  EXPECT_EQ(bz.read(0, x.size()), want);

  session.forget_vulkan_buffer(bz.handle());
  ASSERT_FALSE(session.bind_vulkan_buffer("y", bz.handle(), 0, kBytes));
  bz.write(0, stale);
  ASSERT_NO_FATAL_FAILURE(game.submit_and_wait(record_frame()));
  EXPECT_EQ(bz.read(0, x.size()), want);
  session.forget_vulkan_buffer(bx.handle());
  session.forget_vulkan_buffer(by.handle());
  session.forget_vulkan_buffer(bz.handle());
}

TEST_F(CApiFrameTest, RecordWithOptionsRefusals) {
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model_, session));
  GameCommands game(device());
  VkCommandBuffer frame = game.allocate(VK_COMMAND_BUFFER_LEVEL_PRIMARY);
  game.begin(frame);
  kiln_record_options_t options{sizeof(options)};
  options.flags = KILN_RECORD_VIA_SECONDARY;
  options.queue_family_index = device().queue_family();
  Error e(kiln_session_record_with_options(nullptr, frame, &options));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  e = Error(kiln_session_record_with_options(session.get(), VK_NULL_HANDLE, &options));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  options.struct_size = 4;
  e = Error(kiln_session_record_with_options(session.get(), frame, &options));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  EXPECT_NE(e.message().find("struct_size"), std::string::npos) << e.message();
  options.struct_size = sizeof(options);
  options.flags = 0x6;
  e = Error(kiln_session_record_with_options(session.get(), frame, &options));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  EXPECT_NE(e.message().find("unknown bits 6"), std::string::npos) << e.message();

  // A queue family other than the session's, named (the inputs are bound,
  // so that the run itself could be recorded).
  const std::vector<int64_t> shape{kRows, 3};
  Model mlp = load("mlp", kiln::capi::testing::mlp_model(kRows, 3));
  Session bound;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(mlp, bound));
  HostBuffer bx(device(), kBytes), by(device(), kBytes);
  ASSERT_TRUE(bx.ok() && by.ok());
  ASSERT_FALSE(bound.bind_vulkan_buffer("x", bx.handle(), 0, kBytes, shape));
  ASSERT_FALSE(bound.bind_vulkan_buffer("y", by.handle(), 0, kBytes));
  options.flags = KILN_RECORD_VIA_SECONDARY;
  options.queue_family_index = 1000;
  e = Error(kiln_session_record_with_options(bound.get(), frame, &options));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  EXPECT_NE(e.message().find("queue family 1000 is not the session's"), std::string::npos) << e.message();
  // No options, or no flags: kiln_session_record.
  EXPECT_FALSE(Error(kiln_session_record_with_options(bound.get(), frame, nullptr)));
  options.flags = 0;
  EXPECT_FALSE(Error(kiln_session_record_with_options(bound.get(), frame, &options)));
  EXPECT_EQ(device().fn().vkEndCommandBuffer(frame), VK_SUCCESS);
  bound.forget_vulkan_buffer(bx.handle());
  bound.forget_vulkan_buffer(by.handle());
}

// Recording again every frame reuses the checks of the last recording only
// while the bindings are the same: a frame that binds the output elsewhere
// (another buffer, another offset, back to the first) records into there,
// and forgetting the bound buffer (which drops the recorded signature) makes
// the next recording check the new bindings afresh.
TEST_F(CApiFrameTest, RecordFollowsTheBindings) {
  Model mlp = load("mlp", kiln::capi::testing::mlp_model(kRows, 3));
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(mlp, session));
  HostBuffer bx(device(), kBytes), by(device(), 2 * kBytes), bz(device(), kBytes);
  ASSERT_TRUE(bx.ok() && by.ok() && bz.ok());
  const std::vector<float> x = inputs_for(1.5f);
  std::vector<float> want;
  ASSERT_NO_FATAL_FAILURE(bind_and_run(session, bx, x, bz, want));
  const std::vector<float> stale(kRows * 3, -99.0f);

  GameCommands game(device());
  // Records one frame with the bindings as they are, runs it, and returns
  // what each output place holds: by at 0, by at kBytes, bz.
  auto frame = [&]() {
    by.write(0, stale);
    by.write(kBytes, stale);
    bz.write(0, stale);
    VkCommandBuffer cmd = game.allocate(VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    game.begin(cmd);
    Error e(kiln_session_record(session.get(), cmd));
    EXPECT_FALSE(e) << e.message();
    EXPECT_EQ(device().fn().vkEndCommandBuffer(cmd), VK_SUCCESS);
    game.submit_and_wait(cmd);
    return std::vector<std::vector<float>>{by.read(0, x.size()), by.read(kBytes, x.size()), bz.read(0, x.size())};
  };
  using Places = std::vector<std::vector<float>>;
  EXPECT_EQ(frame(), (Places{stale, stale, want}));
  EXPECT_EQ(frame(), (Places{stale, stale, want}));  // the same bindings again
  ASSERT_FALSE(session.bind_vulkan_buffer("y", by.handle(), 0, kBytes));
  EXPECT_EQ(frame(), (Places{want, stale, stale}));
  ASSERT_FALSE(session.bind_vulkan_buffer("y", by.handle(), kBytes, kBytes));
  EXPECT_EQ(frame(), (Places{stale, want, stale}));
  ASSERT_FALSE(session.bind_vulkan_buffer("y", bz.handle(), 0, kBytes));
  EXPECT_EQ(frame(), (Places{stale, stale, want}));
  // The recorded signatures that write into by go; z's stays.
  session.forget_vulkan_buffer(by.handle());
  EXPECT_EQ(frame(), (Places{stale, stale, want}));
  ASSERT_FALSE(session.bind_vulkan_buffer("y", by.handle(), 0, kBytes));
  EXPECT_EQ(frame(), (Places{want, stale, stale}));
  session.forget_vulkan_buffer(bz.handle());  // not bound now: nothing the frame uses goes
  EXPECT_EQ(frame(), (Places{want, stale, stale}));
  session.forget_vulkan_buffer(bx.handle());  // x's binding and every signature go
  Error e(kiln_session_record(session.get(), game.allocate(VK_COMMAND_BUFFER_LEVEL_PRIMARY)));
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();
  EXPECT_NE(e.message().find("input 'x' is not bound"), std::string::npos) << e.message();
  session.forget_vulkan_buffer(by.handle());
}

TEST_F(CApiFrameTest, RecordRefusals) {
  GameCommands game(device());
  VkCommandBuffer frame = game.allocate(VK_COMMAND_BUFFER_LEVEL_PRIMARY);
  game.begin(frame);
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(model_, session));
  Error e(kiln_session_record(session.get(), VK_NULL_HANDLE));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  // Outputs must be bound: recorded work hands nothing back to the host.
  HostBuffer bx(device(), kBytes), by(device(), kBytes);
  ASSERT_TRUE(bx.ok() && by.ok());
  ASSERT_FALSE(session.bind_vulkan_buffer("x", bx.handle(), 0, kBytes, {kRows, 3}));
  e = Error(kiln_session_record(session.get(), frame));
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();
  EXPECT_NE(e.message().find("output 'y' is not bound"), std::string::npos) << e.message();

  Session reference;
  ASSERT_FALSE(Session::create(model_, KILN_BACKEND_REFERENCE, reference));
  e = Error(kiln_session_record(reference.get(), frame));
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();

  // Value-dependent output shapes need the host mid-run.
  Model nonzero = load("nonzero", nonzero_model());
  Session dynamic;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(nonzero, dynamic));
  HostBuffer b4(device(), 256), bz(device(), 256);
  ASSERT_TRUE(b4.ok() && bz.ok());
  ASSERT_FALSE(dynamic.bind_vulkan_buffer("x", b4.handle(), 0, 256, {4}));
  ASSERT_FALSE(dynamic.bind_vulkan_buffer("y", bz.handle(), 0, 256));
  e = Error(kiln_session_record(dynamic.get(), frame));
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();
  EXPECT_NE(e.message().find("where_positive"), std::string::npos) << e.message();
  EXPECT_EQ(device().fn().vkEndCommandBuffer(frame), VK_SUCCESS);
  dynamic.forget_vulkan_buffer(b4.handle());
  dynamic.forget_vulkan_buffer(bz.handle());
  session.forget_vulkan_buffer(bx.handle());
}

// Every dispatch is labelled with its kernel's name, in Kiln's command
// buffers and in the game's; no labels without the extension.
TEST_F(CApiFrameTest, DebugLabelsPerKernel) {
  g_labels = LabelLog{};
  g_labels.real_gipa = instance().fn().vkGetInstanceProcAddr;
  ASSERT_NE(g_labels.real_gipa(instance().handle(), "vkCmdBeginDebugUtilsLabelEXT"), nullptr)
      << "the validated test instance has VK_EXT_debug_utils";
  Model mlp = load("mlp", kiln::capi::testing::mlp_model(kRows, 3));
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(mlp, session, true, 0, logging_gipa));
  const std::vector<int64_t> shape{kRows, 3};
  HostBuffer bx(device(), kBytes), by(device(), kBytes);
  ASSERT_TRUE(bx.ok() && by.ok());
  bx.write(0, inputs_for(0.0f));
  ASSERT_FALSE(session.bind_vulkan_buffer("x", bx.handle(), 0, kBytes, shape));
  ASSERT_FALSE(session.bind_vulkan_buffer("y", by.handle(), 0, kBytes));
  const kiln_tensor_t* none[] = {nullptr};
  kiln_tensor_t* out[] = {nullptr};
  Error e(kiln_session_run(session.get(), none, 1, out, 1));
  ASSERT_FALSE(e) << e.message();
  kiln_run_stats_t stats{};
  stats.struct_size = sizeof(stats);
  ASSERT_FALSE(session.last_run_stats(stats));
  ASSERT_GE(stats.dispatches, 2u);
  EXPECT_EQ(g_labels.names.size(), stats.dispatches);  // recorded once, by the first run
  EXPECT_EQ(g_labels.closed, static_cast<int>(stats.dispatches));
  for (const std::string& name : g_labels.names) EXPECT_FALSE(name.empty());
  const std::vector<std::string> kiln_labels = g_labels.names;

  GameCommands game(device());
  VkCommandBuffer frame = game.allocate(VK_COMMAND_BUFFER_LEVEL_PRIMARY);
  game.begin(frame);
  ASSERT_FALSE(Error(kiln_session_record(session.get(), frame)));
  ASSERT_EQ(device().fn().vkEndCommandBuffer(frame), VK_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(game.submit_and_wait(frame));
  ASSERT_EQ(g_labels.names.size(), 2 * kiln_labels.size());
  EXPECT_EQ(std::vector<std::string>(g_labels.names.begin() + static_cast<long>(kiln_labels.size()),
                                     g_labels.names.end()),
            kiln_labels);  // the same kernels, in the same order
  session.forget_vulkan_buffer(bx.handle());
  session.forget_vulkan_buffer(by.handle());

  g_labels.hide = true;
  g_labels.names.clear();
  Session unlabelled;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(mlp, unlabelled, true, 0, logging_gipa));
  Tensor t;
  ASSERT_FALSE(Tensor::create(KILN_DTYPE_FLOAT32, {kRows, 3}, t));
  std::vector<Tensor> outs;
  ASSERT_FALSE(unlabelled.run({&t}, 1, outs));
  EXPECT_TRUE(g_labels.names.empty());
}

TEST_F(CApiFrameTest, MemoryReportAndLimit) {
  Model mlp = load("mlp", kiln::capi::testing::mlp_model(kRows, 3));
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(mlp, session));
  kiln_device_memory_t before{};
  before.struct_size = sizeof(before);
  ASSERT_FALSE(Error(kiln_session_memory(session.get(), &before)));
  EXPECT_GE(before.weights_bytes, (3 * 8 + 8 * 3) * sizeof(float));
  EXPECT_EQ(before.activation_bytes, 0u);  // nothing ran yet
  EXPECT_EQ(before.limit_bytes, 0u);
  EXPECT_EQ(before.total_bytes, before.weights_bytes + before.activation_bytes + before.staging_bytes);
  (void)run_sync(session, inputs_for(1.0f));
  kiln_device_memory_t after{};
  after.struct_size = sizeof(after);
  ASSERT_FALSE(Error(kiln_session_memory(session.get(), &after)));
  EXPECT_EQ(after.weights_bytes, before.weights_bytes);
  EXPECT_GT(after.activation_bytes, 0u);
  EXPECT_GT(after.staging_bytes, 0u);  // host-memory input and output
  EXPECT_EQ(after.total_bytes, after.weights_bytes + after.activation_bytes + after.staging_bytes);
  kiln_device_memory_t small{};
  small.struct_size = 8;
  EXPECT_EQ(Error(kiln_session_memory(session.get(), &small)).code(), KILN_INVALID_ARGUMENT);

  // A limit below the weights: creating the session fails, naming both.
  Session tiny;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(mlp, tiny, true, 1000));
  EXPECT_EQ(create_error_.code(), KILN_OUT_OF_MEMORY) << create_error_.to_string();
  EXPECT_NE(create_error_.message().find("weights"), std::string::npos) << create_error_.message();
  EXPECT_NE(create_error_.message().find("limit of 1000 bytes"), std::string::npos) << create_error_.message();

  // Room for the weights only: the first run fails, naming the activations.
  const uint64_t limit = before.weights_bytes + 64;
  Session tight;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(mlp, tight, true, limit));
  ASSERT_FALSE(create_error_) << create_error_.message();
  Tensor t;
  ASSERT_FALSE(Tensor::create(KILN_DTYPE_FLOAT32, {kRows, 3}, t));
  std::vector<Tensor> outs;
  Error e = tight.run({&t}, 1, outs);
  EXPECT_EQ(e.code(), KILN_OUT_OF_MEMORY) << e.to_string();
  EXPECT_NE(e.message().find("activations"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("limit of " + std::to_string(limit) + " bytes"), std::string::npos) << e.message();

  // Exactly what the unlimited session holds is enough.
  Session enough;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(mlp, enough, true, after.total_bytes));
  ASSERT_FALSE(create_error_) << create_error_.message();
  EXPECT_EQ(run_sync(enough, inputs_for(1.0f)), run_sync(session, inputs_for(1.0f)));
}

}  // namespace
