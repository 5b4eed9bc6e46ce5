// Fault injection over a whole model run (platform/vulkan/fault_injection.h):
// for every memory allocation, queue submission, pipeline creation and
// shader compilation a small model's session makes — device setup, pass
// pipeline, compile, uploads, two runs — that one call fails, and
//
//   * the failure comes back as a status with the injected error's code (or
//     is absorbed, and the run still gives the right outputs), never a crash;
//   * after an out-of-memory failure the context recovers: the session (if
//     it was made) and a new session on the same context run correctly;
//   * after a simulated device loss every later call on the context fails
//     with kDeviceLost (sticky), and new sessions on it are refused;
//   * nothing leaks: each case runs on a device of its own, created on the
//     shared validated instance and destroyed after the case, so the
//     validation layer reports any Vulkan object left alive (a test failure)
//     and ASan/LSan builds report host memory (fuzz/README.md says how).
//
// Once more with two run slots (VulkanModelOptions::concurrent_runs) for
// allocations, the whole run ending with two submissions in flight at once
// (the second in the second slot, which then allocates its own activation
// memory and staging): a failure in either slot is a status, leaks nothing,
// and the context recovers.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/ir/text.h"
#include "engine/runtime/reference_executor.h"
#include "engine/session/session.h"
#include "platform/vulkan/fault_injection.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::session {
namespace {

using vk::FaultSite;

// Conv (1x1) + Relu, a global pool and a softmax: a handful of kernels,
// weights to upload, intermediates in an arena.
constexpr const char* kModel = R"(graph @tiny opset 17 {
  input %x : f32[1,4,8,8]
  const %w : f32[4,4,1,1] = dense<[0.5,-0.25,0.125,1.0,0.75,0.5,-0.5,0.25,-1.0,0.5,0.25,0.125,0.0,1.5,-0.75,0.5]>
  const %b : f32[4] = dense<[0.1,-0.2,0.3,0.0]>
  %c = Conv(%x, %w, %b) {kernel_shape = [1,1], pads = [0,0,0,0]} : f32[1,4,8,8]
  %r = Relu(%c) : f32[1,4,8,8]
  %p = GlobalAveragePool(%r) : f32[1,4,1,1]
  %f = Flatten(%p) {axis = 1} : f32[1,4]
  %y = Softmax(%f) {axis = -1} : f32[1,4]
  return %y
})";

class FaultInjection : public vk::testing::VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped()) return;
    auto g = ir::parse_graph(kModel);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    model_ = std::move(*g);
    std::vector<float> x(4 * 8 * 8);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 13) - 6) * 0.125f;
    input_ = Tensor::from_vector<float>({1, 4, 8, 8}, x);
    auto expected = runtime::ReferenceExecutor(*model_).run({input_});
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    expected_ = std::move((*expected)[0]);
  }
  void TearDown() override {
    vk::disarm_fault();
    VulkanTest::TearDown();
  }

  // A device of the case's own on the shared validated instance, and a
  // context wrapping it (memory-only kernel cache, so every case compiles).
  struct Case {
    std::unique_ptr<vk::Device> device;
    std::unique_ptr<runtime::VulkanContext> context;
  };
  Case open_case() {
    Case c;
    auto device = vk::Device::create(instance());
    EXPECT_TRUE(device.ok()) << device.status().to_string();
    if (!device.ok()) return c;
    c.device = std::move(*device);
    vk::HostVulkanHandles host;
    host.instance = instance().handle();
    host.physical_device = c.device->physical_device();
    host.device = c.device->handle();
    host.queue_family_index = c.device->queue_family();
    host.get_instance_proc_addr = instance().fn().vkGetInstanceProcAddr;
    host.instance_api_version = instance().api_version();
    // Submissions (run slots) need the timeline semaphores the device has.
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f12.timelineSemaphore = c.device->enabled().timeline_semaphore ? VK_TRUE : VK_FALSE;
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &f12;
    if (run_slots_ > 1) host.enabled_features = &features;
    auto context = runtime::VulkanContext::wrap(host);
    EXPECT_TRUE(context.ok()) << context.status().to_string();
    if (context.ok()) c.context = std::move(*context);
    return c;
  }

  SessionOptions options(runtime::VulkanContext* context) const {
    SessionOptions o;
    o.backend = BackendChoice::kVulkan;
    o.context = context;
    o.plugins.load_environment = false;
    o.vulkan.concurrent_runs = run_slots_;
    return o;
  }

  bool matches_expected(const Tensor& y) const {
    if (y.shape() != expected_.shape()) return false;
    for (int64_t i = 0; i < y.numel(); ++i)
      if (std::abs(y.get_f64(i) - expected_.get_f64(i)) > 1e-5) return false;
    return true;
  }

  // Two runs must give the reference's output.
  ::testing::AssertionResult runs_correctly(const Session& s) const {
    for (int run = 0; run < 2; ++run) {
      auto out = s.run({input_});
      if (!out.ok()) return ::testing::AssertionFailure() << "run " << run << ": " << out.status().to_string();
      const Tensor& y = (*out)[0];
      if (y.shape() != expected_.shape()) return ::testing::AssertionFailure() << "run " << run << ": wrong shape";
      for (int64_t i = 0; i < y.numel(); ++i)
        if (std::abs(y.get_f64(i) - expected_.get_f64(i)) > 1e-5)
          return ::testing::AssertionFailure() << "run " << run << ": element " << i << " is " << y.get_f64(i)
                                               << ", expected " << expected_.get_f64(i);
    }
    return ::testing::AssertionSuccess();
  }

  // The whole run: a session on `context` and two runs. Returns the first
  // error (OK when everything succeeded); `session` keeps what was made.
  Status whole_run(runtime::VulkanContext* context, std::unique_ptr<Session>& session) const {
    auto created = Session::create(*model_, options(context));
    if (!created.ok()) return created.status();
    session = std::move(*created);
    for (int run = 0; run < 2; ++run) {
      auto out = session->run({input_});
      if (!out.ok()) return out.status();
    }
    if (run_slots_ > 1) {
      // Two submissions before either wait: the second slot takes the second.
      runtime::VulkanModel& model = *session->vulkan_model();
      KILN_ASSIGN_OR_RETURN(const uint64_t first, model.submit({input_}, {}, {}));
      KILN_ASSIGN_OR_RETURN(const uint64_t second, model.submit({input_}, {}, {}));
      for (uint64_t ticket : {first, second}) {
        KILN_ASSIGN_OR_RETURN(std::vector<Tensor> out, model.wait(ticket, UINT64_MAX));
        if (!matches_expected(out[0])) return internal_error("ticket " + std::to_string(ticket) + " gave a wrong output");
      }
    }
    return ok_status();
  }

  // How many calls each site sees in one whole run, none failing.
  std::vector<uint64_t> count_calls() {
    Case c = open_case();
    if (!c.context) return {};
    vk::disarm_fault();
    std::unique_ptr<Session> session;
    Status s = whole_run(c.context.get(), session);
    EXPECT_TRUE(s.ok()) << s.to_string();
    std::vector<uint64_t> calls;
    for (int site = 0; site < vk::kFaultSiteCount; ++site) calls.push_back(vk::fault_site_calls(FaultSite(site)));
    return calls;
  }

  // Fails call `nth` at `site` with `result` during a whole run and checks
  // the outcome and what follows (see the file comment).
  void inject(FaultSite site, uint64_t nth, VkResult result) {
    const std::string what = std::string(vk::fault_site_name(site)) + " #" + std::to_string(nth) + " failing with " +
                             vk::vk_result_name(result);
    SCOPED_TRACE(what);
    Case c = open_case();
    ASSERT_TRUE(c.context);
    vk::arm_fault(site, nth, result);
    std::unique_ptr<Session> session;
    const Status failed = whole_run(c.context.get(), session);
    const bool fired = vk::fault_fired();
    vk::disarm_fault();
    ASSERT_TRUE(fired) << "the call was never made (a run makes fewer calls than counted)";
    const StatusCode code = vk::vk_status_code(result);
    if (failed.ok()) {
      // Absorbed (e.g. an image that fell back to a buffer): still correct.
      ASSERT_NE(code, StatusCode::kDeviceLost) << "a device loss went unnoticed";
      if (session) {
        EXPECT_TRUE(runs_correctly(*session));
      }
      return;
    }
    EXPECT_EQ(failed.code(), code) << failed.to_string();
    if (code == StatusCode::kDeviceLost) {
      EXPECT_TRUE(c.context->device().lost());
      if (session) {
        auto out = session->run({input_});
        ASSERT_FALSE(out.ok()) << "a run after device loss succeeded";
        EXPECT_EQ(out.status().code(), StatusCode::kDeviceLost) << out.status().to_string();
      }
      auto again = Session::create(*model_, options(c.context.get()));
      ASSERT_FALSE(again.ok()) << "a session on a lost device was created";
      EXPECT_EQ(again.status().code(), StatusCode::kDeviceLost) << again.status().to_string();
      return;
    }
    // A transient failure: what was made works, and so does a new session.
    EXPECT_FALSE(c.context->device().lost());
    if (session) {
      EXPECT_TRUE(runs_correctly(*session));
    }
    std::unique_ptr<Session> fresh;
    const Status recovered = whole_run(c.context.get(), fresh);
    ASSERT_TRUE(recovered.ok()) << "no recovery: " << recovered.to_string();
    EXPECT_TRUE(runs_correctly(*fresh));
  }

  size_t run_slots_ = 1;
  std::unique_ptr<ir::Graph> model_;
  Tensor input_;
  Tensor expected_;
};

TEST_F(FaultInjection, EveryFailingCallIsAStatusAndTheContextRecovers) {
  const std::vector<uint64_t> calls = count_calls();
  ASSERT_EQ(calls.size(), size_t{vk::kFaultSiteCount});
  // The sweep only means something if the run makes each kind of call.
  for (int site = 0; site < vk::kFaultSiteCount; ++site)
    EXPECT_GT(calls[site], 0u) << vk::fault_site_name(FaultSite(site));
  const VkResult result_of[] = {VK_ERROR_OUT_OF_DEVICE_MEMORY, VK_ERROR_OUT_OF_HOST_MEMORY,
                                VK_ERROR_OUT_OF_HOST_MEMORY, VK_ERROR_OUT_OF_HOST_MEMORY};
  for (int site = 0; site < vk::kFaultSiteCount; ++site)
    for (uint64_t n = 1; n <= calls[site] && !HasFatalFailure(); ++n) inject(FaultSite(site), n, result_of[site]);
}

TEST_F(FaultInjection, AllocationsOfASecondRunSlotFailCleanly) {
  run_slots_ = 2;
  {
    // Both slots ran: each holds one run's activations and staging.
    Case c = open_case();
    ASSERT_TRUE(c.context);
    std::unique_ptr<Session> session;
    const Status s = whole_run(c.context.get(), session);
    ASSERT_TRUE(s.ok()) << s.to_string();
    const runtime::DeviceMemoryUse use = session->vulkan_model()->memory();
    EXPECT_EQ(use.run_slots, 2u);
    EXPECT_GT(use.per_run, 0u);
    EXPECT_EQ(use.activations + use.staging, 2 * use.per_run);
  }
  const std::vector<uint64_t> calls = count_calls();
  ASSERT_EQ(calls.size(), size_t{vk::kFaultSiteCount});
  const int site = static_cast<int>(FaultSite::kAllocation);
  run_slots_ = 1;
  const std::vector<uint64_t> one_slot = count_calls();
  run_slots_ = 2;
  ASSERT_GT(calls[site], one_slot[site]) << "the second slot allocated nothing: the sweep would not reach it";
  for (uint64_t n = 1; n <= calls[site] && !HasFatalFailure(); ++n)
    inject(FaultSite::kAllocation, n, VK_ERROR_OUT_OF_DEVICE_MEMORY);
}

TEST_F(FaultInjection, DeviceLossIsStickyWhereverItHappens) {
  const std::vector<uint64_t> calls = count_calls();
  ASSERT_EQ(calls.size(), size_t{vk::kFaultSiteCount});
  for (FaultSite site : {FaultSite::kSubmission, FaultSite::kAllocation, FaultSite::kPipelineCreation})
    for (uint64_t n = 1; n <= calls[static_cast<int>(site)] && !HasFatalFailure(); ++n)
      inject(site, n, VK_ERROR_DEVICE_LOST);
}

}  // namespace
}  // namespace kiln::session
